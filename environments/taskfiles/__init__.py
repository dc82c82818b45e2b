"""The domain halves of task files (see :mod:`mintgym.env.taskfiles` and docs/task-files.md): one module per
domain with its TaskEntry model (fields, scorers, oracle helpers) and the Task it builds."""
