"""Containers: Sequential (children called in order) and ModuleList (an indexable list of children).
Children are registered under their position ("0", "1", …), so state_dict keys match torch's."""
from __future__ import annotations

from collections import OrderedDict

from .module import Module


def _check_module(m, where: str) -> Module:
    if not isinstance(m, Module):
        raise TypeError(f"{where}: {type(m).__name__} is not an ember.nn.Module")
    return m


class Sequential(Module):
    """Sequential(m0, m1, …) or Sequential(OrderedDict(name=module, …))."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, _check_module(m, f"Sequential[{name!r}]"))
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), _check_module(m, f"Sequential argument {i}"))

    def forward(self, x):
        for m in self._modules.values():
            if m is not None:
                x = m(x)
        return x

    def _index(self, i: int) -> str:
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for {type(self).__name__} of length {n}")
        return list(self._modules)[i % n]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return self._modules[self._index(i)]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m: Module) -> "Sequential":
        self.add_module(str(len(self._modules)), _check_module(m, "Sequential.append"))
        return self


class ModuleList(Module):
    """A list of submodules; it has no forward (the owner decides how to call them)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(list(self._modules.values())[i])
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for ModuleList of length {n}")
        return self._modules[str(i % n)]

    def __setitem__(self, i: int, m: Module) -> None:
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for ModuleList of length {n}")
        self._modules[str(i % n)] = _check_module(m, "ModuleList[...] =")

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m: Module) -> "ModuleList":
        self.add_module(str(len(self._modules)), _check_module(m, "ModuleList.append"))
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward; iterate over it and call its modules")
