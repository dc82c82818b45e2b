"""Layer 2: clients of the env server: EnvClient (gymnasium) and AsyncEnvClient."""
