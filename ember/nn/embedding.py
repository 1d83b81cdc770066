"""Embedding: rows of a (num_embeddings, embedding_dim) table picked by integer indices (a gather).
Weights start N(0, 1) as in torch; the padding_idx row starts at zero."""
from __future__ import annotations

from .. import dtypes as dt
from ..ops.indexing import embedding
from . import init
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 dtype=dt.float32, seed=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is outside the table of {num_embeddings}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        w = init.normal((num_embeddings, embedding_dim), 1.0, init.generator(seed), dtype)
        if padding_idx is not None:
            w[padding_idx] = 0
        self.weight = Parameter(w)

    def forward(self, indices):
        if indices.dtype.is_float or indices.dtype.is_bool:
            raise TypeError(f"Embedding expects integer indices, got {indices.dtype.name}")
        return embedding(indices, self.weight)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
