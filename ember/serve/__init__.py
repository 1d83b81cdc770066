"""`ember serve`: an OpenAI-compatible HTTP server for LLM checkpoints (docs/serving.md)."""
from .app import make_app

__all__ = ["make_app"]
