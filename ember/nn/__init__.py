"""ember.nn: PyTorch-style modules that build Ember graphs.

    from ember import nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    model.load_state_dict(torch_model.state_dict())     # same keys as the torch module
    y = model(em.input("x", ("B", 784)))                # a lazy Tensor; weights are named DATA nodes

Files: module.py (Module, state_dict), parameter.py (Parameter, Buffer), init.py (seeded torch-style
init), then one file per layer family.
"""
from . import functional, init
from .activation import (
                         ELU,
                         GELU,
                         SELU,
                         Hardsigmoid,
                         Hardswish,
                         Hardtanh,
                         Identity,
                         LeakyReLU,
                         LogSoftmax,
                         Mish,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softplus,
                         Softsign,
                         Tanh,
                         make_activation,
)
from .attention import Attention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .embedding import Embedding
from .init import manual_seed
from .linear import Linear
from .mlp import MLP, SwiGLU
from .module import LoadResult, Module, StateDictError
from .norm import GroupNorm, LayerNorm, RMSNorm
from .parameter import Buffer, Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .shape import Flatten, Unflatten
from .transformer import DecoderBlock, Transformer, llama_hidden_dim

__all__ = [n for n in dir() if not n.startswith("_")]
