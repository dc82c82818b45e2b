"""Layer 4: episodes (agent + env session -> Trajectory) and the local worker pool."""
