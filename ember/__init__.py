"""Ember: a search-based deep-learning compiler.

    import ember as em
    x = em.input("x", ("B", 8), em.float32)
    w = em.tensor(np_array)
    y = (x @ w).relu().sum(axis=1)
    out = em.reference(y, x=np.random.rand(4, 8).astype(np.float32))
"""
from . import (
    dtypes,
    graph,
    ops,  # noqa: F401  (attaches Tensor methods)
    symbolic,
)
from .arrays import InputError
from .autograd import grad
from .backends.target import DeviceError, Target, get_target
from .dtypes import bfloat16, bool_, float16, float32, float64, int32, int64
from .frontends import from_torch, register_torch_backend
from .graph import GraphError
from .ops.activation import *  # noqa: F401,F403
from .ops.collective import *  # noqa: F401,F403
from .ops.attention import *  # noqa: F401,F403
from .ops.conv import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.loss import *  # noqa: F401,F403
from .ops.movement import *  # noqa: F401,F403
from .ops.norm import *  # noqa: F401,F403
from .ops.random import *  # noqa: F401,F403
from .ops.reduce import *  # noqa: F401,F403
from .ops.state import *  # noqa: F401,F403
from .pipeline import compile  # noqa: A001
from .precision import allow_tf32
from .reference import reference
from .runtime.program import Program
from .tensor import (
    ShapeError,
    Tensor,
    arange,
    broadcast_shapes,
    full,
    full_like,
    input,
    iota,
    ones,
    ones_like,
    pow,
    tensor,
    where,
    zeros,
    zeros_like,
)
from .train import compile_train as _compile_train

try:  # torch.compile(backend="ember") in either import order (registers when torch's Dynamo loads)
    register_torch_backend()
except Exception:  # noqa: BLE001 - a broken torch install must not break `import ember`
    pass

def compile_train(model, loss_fn, optimizer, example_batch, **options):
    return _compile_train(model, loss_fn, optimizer, example_batch, compile_fn=compile, **options)


compile_train.__doc__ = _compile_train.__doc__

bool = bool_  # noqa: A001  (em.bool, like torch.bool)

__version__ = "0.1.0"


def save_graph(path, outputs) -> None:
    """Save tensors (a Tensor, a list, or a dict name -> Tensor) and their graph to a JSON file."""
    if isinstance(outputs, Tensor):
        outputs = {"out": outputs}
    elif isinstance(outputs, (list, tuple)):
        outputs = {f"out{i}": t for i, t in enumerate(outputs)}
    graph.save(path, {k: v.node for k, v in outputs.items()})


def load_graph(path) -> dict:
    """Load a graph saved with save_graph: returns {name: Tensor}."""
    return {k: Tensor(v) for k, v in graph.load(path).items()}
