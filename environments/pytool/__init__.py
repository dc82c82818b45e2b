"""The Python-tool domain: visual tasks solved by running code in a sandboxed, persistent Python worker.

* :class:`~.host.PytoolHost` / :class:`~.env.PytoolEnvironment` -- sessions (entry point ``pytool``);
* :mod:`.sandbox` -- the worker process and its isolation (:class:`~.sandbox.Sandbox`);
* :mod:`.canvas` -- the rendered frame (task image, last code, output);
* :mod:`.tasks` / :mod:`.generators` -- the task pack (``pytool/<family>-<index>``).

Inside the sandbox the task image is ``/task/image.png`` (also in the variable ``TASK_IMAGE``), the
working directory ``/sandbox`` is the only writable place, and ``show(img)`` saves ``out.png``, which
the next screenshot displays.
"""
