"""Layer 3: runtime providers (local, docker, ray), make(), and the EnvPool."""
