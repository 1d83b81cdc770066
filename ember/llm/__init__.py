"""Decoder LLMs from Hugging Face checkpoints: `ember.llm.load(path)` -> `LLM` (docs/llm.md)."""
from .checkpoint import CheckpointError
from .config import ConfigError, ModelConfig
from .runtime import LLM, load

__all__ = ["load", "LLM", "ConfigError", "CheckpointError", "ModelConfig"]
