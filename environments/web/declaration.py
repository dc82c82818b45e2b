"""What the web domain tells the core (:mod:`mintgym.env.declarations`): its task-file fields, prompt line and
the screen of each task (a web task carries the viewport its pages are laid out for)."""

from mintgym.env.declarations import Declaration


def task_screen(task, session_size: tuple[int, int]) -> tuple[int, int]:
    """A reset lays the page out at the task's viewport (MiniWoB's 160x210), whatever the session's was."""
    return tuple(getattr(task, "viewport", session_size))


DECLARATION = Declaration(
    channels=("som", "a11y", "dom", "text"),
    task_entry="mintgym.environments.taskfiles.web:WebTaskEntry",
    screen_hint="The screenshot shows a web browser page.",
    task_screen=task_screen,
    volatile_info=("miniwob.env_reward",),  # MiniWoB's reward decays with the episode's wall-clock time
)
