"""What the desktop domain tells the core (:mod:`mintgym.env.declarations`): its task-file fields (an OSWorld
task JSON, recognised by its ``evaluator`` when it names no domain) and its prompt line."""

from mintgym.env.declarations import Declaration

DECLARATION = Declaration(
    channels=("som", "a11y", "text"),
    task_entry="mintgym.environments.taskfiles.desktop:DesktopTaskEntry",
    task_entry_fields=("evaluator",),
    screen_hint="The screenshot shows a Linux desktop.",
)
