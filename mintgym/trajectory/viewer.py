"""HTML pages for trajectories (kept for its callers): the inspector in :mod:`mintgym.trajectory.inspector`."""

from mintgym.trajectory.inspector import action_marks, write_run_pages, write_trajectory_page

__all__ = ["action_marks", "write_run_pages", "write_trajectory_page"]
