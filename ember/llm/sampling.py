"""Choosing the next token from logits on the host: greedy, or seeded sampling with temperature,
top-k and top-p (nucleus), as transformers' warpers apply them (temperature, then top-k, then
top-p keeping the smallest set whose probability reaches p, the most likely token always kept)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Sampling(NamedTuple):
    """One sequence's generation parameters (LLM.sampling makes a checked one)."""
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: object = None  # an int, a list of ints (numpy SeedSequence entropy), or None
    max_new_tokens: int = 32
    stop: frozenset = frozenset()


def check_sampling(temperature: float, top_k, top_p) -> None:
    if not (isinstance(temperature, (int, float)) and temperature >= 0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
    if top_p is not None and not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}")


def sample(logits: np.ndarray, temperature: float, top_k, top_p, rng: np.random.Generator) -> np.ndarray:
    """logits (B, V) float -> token ids (B,). temperature 0 is greedy (the first maximum)."""
    logits = np.asarray(logits, np.float64)
    if temperature == 0:
        return logits.argmax(-1)
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max(-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(-1, keepdims=True)
    if top_p is not None and top_p < 1:
        order = np.argsort(-p, axis=-1, kind="stable")
        sp = np.take_along_axis(p, order, -1)
        before = np.cumsum(sp, -1) - sp  # mass of the more likely tokens
        keep_sorted = before < top_p  # the first always kept
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, -1)
        p = np.where(keep, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    u = rng.random((p.shape[0], 1))
    return np.minimum((np.cumsum(p, -1) < u).sum(-1), p.shape[-1] - 1)
