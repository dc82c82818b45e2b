"""Layer 2: the FastAPI env server."""
