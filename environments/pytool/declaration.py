"""What the pytool domain tells the core (:mod:`mintgym.env.declarations`): its task-file fields and prompt line."""

from mintgym.env.declarations import Declaration

DECLARATION = Declaration(
    channels=("text",),
    task_entry="mintgym.environments.taskfiles.pytool:PytoolTaskEntry",
    screen_hint=("Your code runs in a sandbox; what it prints appears in the next screenshot. "
                 "When you know the answer, end with done(answer=...)."),
)
