"""High-level ops, each a composition of primitives. Importing this package attaches the Tensor
methods (reshape, sum, softmax, matmul, …)."""
from . import activation, attention, conv, indexing, linalg, loss, movement, norm, random, reduce, state  # noqa: F401
