"""What the web domain tells the core (:mod:`mintgym.env.declarations`): its task-file fields and prompt line."""

from mintgym.env.declarations import Declaration

DECLARATION = Declaration(
    task_entry="mintgym.environments.taskfiles.web:WebTaskEntry",
    screen_hint="The screenshot shows a web browser page.",
)
