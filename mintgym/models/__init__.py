"""Model builders: a tiny Qwen2-VL for tests and quickstarts."""
