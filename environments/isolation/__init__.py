"""Containment the sandboxed domains share: control groups and size-capped tmpfs quotas."""
