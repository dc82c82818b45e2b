"""OSWorld results in OSWorld's own shape (per-domain table, result folders); the task pack itself is
:mod:`mintgym.environments.desktop.osworld`."""
