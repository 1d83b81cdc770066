"""Small bundled data for examples and tests.

``lighthouse.txt`` is a short story written for Ember (about 5 KB, plain ASCII), free to use for any
purpose; the character-level language-model example trains on it."""
from __future__ import annotations

from pathlib import Path

__all__ = ["text", "char_vocab"]


def text(name: str = "lighthouse") -> str:
    """The bundled text ``name`` (default: "lighthouse")."""
    path = Path(__file__).with_name(f"{name}.txt")
    if not path.is_file():
        have = sorted(p.stem for p in Path(__file__).parent.glob("*.txt"))
        raise FileNotFoundError(f"no bundled text {name!r}; available: {have}")
    return path.read_text(encoding="ascii")


def char_vocab(s: str) -> tuple[list, dict]:
    """(characters in sorted order, character -> index) of a string."""
    chars = sorted(set(s))
    return chars, {c: i for i, c in enumerate(chars)}
