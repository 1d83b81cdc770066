"""Random-graph fuzzing of the whole compiler: a generator of random programs and their checker.

`generate(seed, mode)` draws a program — contractions (matmul and linear, in both weight layouts,
batched matmul, conv2d), reductions over random axes (keepdim or not, size-1 axes, chains of them),
views, elementwise chains with broadcasting, selects and casts — deterministically from its seed. A
program is a list of steps (`v3 = sum(v2, axes=(1,), keepdim=True)`) over the ops of
ember/testing/fuzz_ops.py, which writes each op with Ember's API and with torch's, so one program is
built as the Ember graph under test and as its float64 oracle (numpy's `em.reference`, or torch in
float64 on the GPU at sizes numpy would take seconds on). ember/testing/fuzz_run.py runs both and
calls `check`; bench/fuzz_gpu.py runs thousands of them.

Modes: "small" (dims up to 64, for the CPU and the reference) and "realistic" (dims from
`REALISTIC_DIMS`, capped so a graph runs in milliseconds on an H100; families aimed at split-K —
few output tiles, long k — and at cluster row kernels — rows of 16K-64K elements).

The generator keeps values O(1): it tracks a rough rms per value and multiplies by an exact power of
two where a value would leave its dtype's comfortable range, or before an op whose error grows with
its argument (exp, sin, softmax). The checker's tolerance per output (see `tolerances`, `check`):

    max |out - ref| <= rtol * M + atol,   rtol = base(path precision) + 4 * 2^-24 * sqrt(L)

with M a first-order bound on the output's sensitivity to rounding (`magnitudes`: its own max
|value|, and its operands' M carried through bounds on each op's derivatives), the path precision
the coarsest float type on the way (2e-3 float32 — Ember's 3xTF32 matmuls are float32-accurate —,
4e-2 bfloat16, 1.5e-2 float16) and L the number of terms accumulated into one output along the way
(float32 summation error grows like sqrt(L)). Integer outputs (argmax of exact values) must match
exactly. The aim is gross miscompiles — wrong indices, races, double counting — without flakiness.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SMALL_DIMS = (1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 32, 33, 64)
REALISTIC_DIMS = (1, 3, 17, 64, 127, 128, 255, 512, 1000, 1024, 2048, 4096, 8192, 16384, 32768)
LONG_ROWS = (16384, 24576, 32768, 50000, 65536)  # cluster row kernels: cached rows over 96 KB
MAX_KERNELS = 6  # graphs lowering to more kernels are drawn again
EPS32 = 2.0 ** -24
BASE_RTOL = {"float32": 2e-3, "bfloat16": 4e-2, "float16": 1.5e-2}
ATOL = 1e-6
# how a program starts (then 1-5 random ops follow): a contraction and a chain of keepdim reductions
# (issue 18's shape), a split-K contraction, a long-row kernel, a convolution, or plain inputs
FAMILIES = {"chain": 0.2, "splitk": 0.15, "rows": 0.15, "conv": 0.07, "random": 0.43}


@dataclass(frozen=True)
class Limits:
    dims: tuple
    elems: int  # largest tensor produced by an op
    operand: int  # largest contraction operand (an 8192 x 8192 weight)
    flops: int  # largest contraction
    long_rows: tuple


LIMITS = {
    "small": Limits(SMALL_DIMS, 1 << 13, 1 << 13, 1 << 22, (256, 512)),
    "realistic": Limits(REALISTIC_DIMS, 1 << 25, 1 << 26, 1 << 38, LONG_ROWS),
}


@dataclass
class Step:
    out: str
    op: str  # "input" or a key of OPS
    args: tuple = ()
    params: dict = field(default_factory=dict)

    def text(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.out} = {self.op}({', '.join(list(self.args) + ([ps] if ps else []))})"


@dataclass
class Var:
    name: str
    shape: tuple
    dtype: str
    rms: float  # rough typical magnitude (the generator's estimate)
    pos: bool = False  # known non-negative
    exact: bool = False  # an input or a view of one: both sides see the same bits
    acc: int = 1  # terms accumulated into one element along the way (L)
    prec: str = "float32"  # coarsest float type on the way

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class FuzzProgram:
    seed: int
    mode: str
    family: str
    steps: list
    outputs: list
    vars: dict  # name -> Var (shapes, dtypes, tolerance inputs)

    def text(self) -> str:
        head = f"# ember fuzz program: seed={self.seed} mode={self.mode} family={self.family}"
        return "\n".join([head] + [s.text() for s in self.steps] + [f"outputs: {', '.join(self.outputs)}"])

    @property
    def inputs(self) -> list:
        return [s for s in self.steps if s.op == "input"]


def _promote(a: str, b: str) -> str:
    return a if a == b else "float32"


def _coarsest(*ds: str) -> str:
    return max(ds, key=lambda d: BASE_RTOL.get(d, 0.0))


class _Gen:
    def __init__(self, rng: np.random.Generator, mode: str):
        self.rng, self.mode, self.lim = rng, mode, LIMITS[mode]
        self.steps: list = []
        self.vars: dict = {}
        self.n = 0
        self.input_names: set = set()

    # ---------------------------------------------------------------- helpers
    def choice(self, xs):
        return xs[int(self.rng.integers(len(xs)))]

    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def dim(self, lo: int = 1, hi: int | None = None) -> int:
        ds = [d for d in self.lim.dims if d >= lo and (hi is None or d <= hi)]
        return self.choice(ds or [lo])

    def shape(self, rank: int, cap: int | None = None) -> tuple:
        cap = cap or self.lim.elems
        dims = [self.dim() for _ in range(rank)]
        while math.prod(dims) > cap:
            i = int(np.argmax(dims))
            dims[i] = self.dim(hi=max(1, dims[i] // 2)) if dims[i] > 1 else 1
        return tuple(dims)

    def emit(self, op: str, args: tuple, params: dict, **var) -> Var:
        name = f"v{self.n}"
        self.n += 1
        self.steps.append(Step(name, op, tuple(a.name for a in args), params))
        v = self.vars[name] = Var(name, **var)
        return v

    def input(self, shape: tuple, dtype: str, scale: float = 1.0) -> Var:
        self.input_names.add(f"v{self.n}")
        return self.emit("input", (), {"shape": tuple(int(s) for s in shape), "dtype": dtype, "scale": scale},
                         shape=tuple(shape), dtype=dtype, rms=scale / math.sqrt(3), exact=True, prec=dtype)

    def like(self, v: Var, **kw) -> dict:
        d = dict(shape=v.shape, dtype=v.dtype, rms=v.rms, pos=v.pos, exact=False, acc=v.acc, prec=v.prec)
        d.update(kw)
        return d

    def norm(self, v: Var, lo: float, hi: float) -> Var:
        """v times an exact power of two if its rms is outside [lo, hi]."""
        if lo <= v.rms <= hi:
            return v
        target = math.sqrt(lo * hi) if lo > 0 else hi / 2
        c = 2.0 ** round(math.log2(target / v.rms))
        return self.emit("scale", (v,), {"c": c}, **self.like(v, rms=v.rms * c))

    def keep_range(self, v: Var) -> Var:
        return self.norm(v, 2.0 ** -8, 2.0 ** 8) if v.prec == "float32" else self.norm(v, 2.0 ** -6, 2.0 ** 3)

    def soft_limit(self, v: Var) -> float:
        """rms bound before an op whose error grows with its argument (exp, sin, softmax)."""
        return 1.0 if v.prec == "float32" else 0.5

    def broadcastable(self, v: Var) -> tuple:
        """A shape that broadcasts against v: some axes 1, sometimes fewer leading axes."""
        shape = [1 if self.coin(0.35) else s for s in v.shape]
        drop = int(self.rng.integers(0, len(shape) + 1)) if self.coin(0.3) else 0
        return tuple(shape[drop:])

    def live(self, exclude_int: bool = True) -> list:
        return [v for v in self.vars.values() if not (exclude_int and v.dtype.startswith("int"))]

    def pick(self) -> Var:
        """Mostly the latest computed value (chains), sometimes any value (branches, reuse)."""
        vs = self.live()
        vs = [v for v in vs if v.name not in self.input_names] or vs
        return vs[-1] if self.coin(0.6) else self.choice(vs)

    # ---------------------------------------------------------------- op families
    def unary(self, v: Var) -> Var:
        op = self.choice(("exp", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "relu", "leaky_relu", "softplus",
                          "abs", "neg", "square", "sin", "log_abs", "sqrt_abs", "rsqrt_abs", "clamp"))
        if op in ("exp", "sin", "tanh", "sigmoid", "softplus", "gelu", "gelu_tanh", "silu"):
            v = self.norm(v, 0.0, self.soft_limit(v))
        if op == "square":
            v = self.norm(v, 0.0, 4.0 if v.prec == "float32" else 2.0)
        rms = {"exp": 1.5, "tanh": min(v.rms, 1.0), "sigmoid": 0.5, "abs": v.rms, "neg": v.rms, "square": v.rms ** 2,
               "sin": min(v.rms, 0.7), "log_abs": 0.7, "sqrt_abs": math.sqrt(v.rms) + 0.5, "rsqrt_abs": 0.8}.get(op, v.rms * 0.7)
        params: dict = {}
        if op == "clamp":
            q = 2.0 ** round(math.log2(max(v.rms, 2.0 ** -20))) * self.choice((0.5, 1.0))
            params = {"lo": -q, "hi": q}
            rms = min(v.rms, q)
        pos = op in ("exp", "sigmoid", "relu", "softplus", "abs", "square", "sqrt_abs", "rsqrt_abs") or (op != "neg" and v.pos)
        return self.keep_range(self.emit(op, (v,), params, **self.like(v, rms=rms, pos=pos)))

    def other_operand(self, v: Var) -> Var:
        r = self.rng.random()
        if r < 0.5:
            return self.input(self.broadcastable(v), v.dtype if self.coin(0.85) else self.choice(("float32", v.dtype)))
        same = [u for u in self.live() if u.shape == v.shape or (u.shape == v.shape[-len(u.shape):] and u.shape)]
        return self.choice(same) if same and r < 0.85 else v

    def binary(self, v: Var) -> Var | None:
        op = self.choice(("add", "sub", "mul", "div_safe", "maximum", "minimum"))
        u = self.other_operand(v)
        a, b = (v, u) if self.coin(0.7) else (u, v)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        if math.prod(shape) > self.lim.elems:
            return None
        rms = {"add": math.hypot(a.rms, b.rms), "sub": math.hypot(a.rms, b.rms), "mul": a.rms * b.rms,
               "div_safe": a.rms}.get(op, max(a.rms, b.rms))
        d = _promote(a.dtype, b.dtype)
        out = self.emit(op, (a, b), {}, shape=shape, dtype=d, rms=rms, acc=max(a.acc, b.acc),
                        prec=_coarsest(a.prec, b.prec, d), pos=op in ("maximum",) and (a.pos or b.pos) or
                        (op in ("add", "mul", "div_safe") and a.pos and b.pos))
        return self.keep_range(out)

    def select(self, v: Var) -> Var:
        c = self.input(self.broadcastable(v), "float32")
        b = self.input(self.broadcastable(v), v.dtype) if self.coin(0.6) else v
        return self.emit("where_gt", (c, v, b), {"t": self.choice((0.0, 0.25, -0.5))},
                         **self.like(v, rms=max(v.rms, b.rms), acc=max(v.acc, b.acc)))

    def cast(self, v: Var) -> Var:
        d = self.choice([x for x in ("float32", "bfloat16", "float16") if x != v.dtype])
        if d != "float32":
            v = self.norm(v, 2.0 ** -6, 2.0 ** 3)
        return self.emit("cast", (v,), {"dtype": d}, **self.like(v, dtype=d, prec=_coarsest(v.prec, d)))

    def axes(self, v: Var, single: bool = False) -> tuple:
        nd = len(v.shape)
        ones = [i for i, s in enumerate(v.shape) if s == 1]
        if ones and self.coin(0.3):  # a reduction over a size-1 axis (the issue-18 miscompile's shape)
            return (self.choice(ones),)
        if single or nd == 1 or self.coin(0.6):
            return (int(self.rng.integers(nd)),)
        k = int(self.rng.integers(1, nd + 1))
        return tuple(sorted(int(a) for a in self.rng.choice(nd, k, replace=False)))

    def reduction(self, v: Var, op: str | None = None, keepdim: bool | None = None) -> Var | None:
        if not v.shape:
            return None
        ops = ["sum", "mean", "max", "min", "logsumexp", "softmax", "log_softmax", "layer_norm", "argmax_value"]
        op = op or self.choice(ops + (["argmax"] if v.exact else []))
        if op in ("logsumexp", "softmax", "log_softmax"):
            v = self.norm(v, 0.0, self.soft_limit(v) * 2)
        keepdim = self.coin(0.5) if keepdim is None else keepdim
        if op in ("softmax", "log_softmax", "argmax_value", "argmax"):
            ax = self.axes(v, single=True)
            params: dict = {"axis": ax[0]} if op.endswith("softmax") else {"axis": ax[0], "keepdim": keepdim}
        elif op == "layer_norm":
            n = 1 if len(v.shape) == 1 or self.coin(0.7) else 2
            ax = tuple(range(len(v.shape) - n, len(v.shape)))
            params = {"n": n}
        else:
            ax = self.axes(v)
            params = {"axes": ax, "keepdim": keepdim}
        L = math.prod(v.shape[a] for a in ax)
        if op == "sum" and v.dtype == "float16" and v.rms * (L if v.pos else math.sqrt(L)) > 2.0 ** 10:
            # Ember rounds every float16 node to float16, the reference only at casts: keep the sum
            # far below float16's 65504 (a sum that overflows is inf on one side only)
            c = 2.0 ** -math.ceil(math.log2(v.rms * (L if v.pos else math.sqrt(L)) / 2.0 ** 10))
            v = self.emit("scale", (v,), {"c": c}, **self.like(v, rms=v.rms * c))
        kept = op in ("softmax", "log_softmax", "layer_norm") or keepdim
        shape = tuple(1 if i in ax else s for i, s in enumerate(v.shape)) if kept else \
            tuple(s for i, s in enumerate(v.shape) if i not in ax)
        if op in ("softmax", "log_softmax", "layer_norm"):
            shape = v.shape
        args: tuple = (v,)
        if op == "layer_norm" and self.coin(0.5):
            ns = v.shape[len(v.shape) - params["n"]:]
            args = (v, self.input(ns, v.dtype)) + ((self.input(ns, v.dtype),) if self.coin(0.5) else ())
        rms = {"sum": v.rms * (L if v.pos else math.sqrt(L)), "mean": v.rms if v.pos else v.rms / math.sqrt(L),
               "logsumexp": math.log(L) + 1.0, "softmax": 1.0 / L, "log_softmax": math.log(L) + 1.0,
               "layer_norm": 1.0}.get(op, v.rms * 1.5)
        if op == "argmax":
            return self.emit(op, args, params, shape=shape, dtype="int64", rms=1.0, exact=True)
        out = self.emit(op, args, params, **self.like(v, shape=shape, rms=max(rms, 2.0 ** -30), acc=v.acc * L,
                                                      pos=op in ("softmax",) or (v.pos and op != "log_softmax")))
        return self.keep_range(out)

    def view(self, v: Var) -> Var | None:
        nd, shape = len(v.shape), list(v.shape)
        kind = self.choice(("reshape", "permute", "transpose", "slice", "expand", "pad", "flip"))
        params: dict
        if kind == "reshape":
            splittable = [i for i, s in enumerate(shape) if any(s % d == 0 for d in range(2, s))]
            if nd >= 2 and (not splittable or self.coin(0.5)):
                i = int(self.rng.integers(nd - 1))
                new = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
            elif splittable and nd < 5:
                i = self.choice(splittable)
                d = self.choice([d for d in range(2, shape[i]) if shape[i] % d == 0])
                new = shape[:i] + [d, shape[i] // d] + shape[i + 1:]
            elif nd < 5:
                i = int(self.rng.integers(nd + 1))
                new = shape[:i] + [1] + shape[i:]
            else:
                return None
            params = {"shape": tuple(new)}
        elif kind == "permute" and nd >= 2:
            order = tuple(int(a) for a in self.rng.permutation(nd))
            params, new = {"order": order}, [shape[a] for a in order]
        elif kind == "transpose" and nd >= 2:
            a, b = (int(x) for x in self.rng.choice(nd, 2, replace=False))
            new = list(shape)
            new[a], new[b] = new[b], new[a]
            params = {"a": a, "b": b}
        elif kind == "slice" and any(s >= 2 for s in shape):
            axis = self.choice([i for i, s in enumerate(shape) if s >= 2])
            n = shape[axis]
            start = int(self.rng.integers(0, max(1, n // 3)))
            stop = int(self.rng.integers(start + 1, n + 1))
            step = self.choice((1, 1, 2, 3))
            params = {"axis": axis, "start": start, "stop": stop, "step": step}
            new = list(shape)
            new[axis] = len(range(start, stop, step))
        elif kind == "expand" and nd < 5:
            size = self.dim(hi=max(1, self.lim.elems // max(1, v.numel)))
            axis = int(self.rng.integers(nd + 1))
            params, new = {"axis": axis, "size": size}, shape[:axis] + [size] + shape[axis:]
        elif kind == "pad" and nd >= 1:
            k = 1 if nd == 1 or self.coin(0.6) else 2
            pads = tuple(int(self.choice((0, 1, 2, 3, 5))) for _ in range(2 * k))
            new = list(shape)
            for j in range(k):
                new[nd - 1 - j] += pads[2 * j] + pads[2 * j + 1]
            params = {"pads": pads}
        elif kind == "flip" and nd >= 1:
            ax = tuple(sorted(int(a) for a in self.rng.choice(nd, int(self.rng.integers(1, nd + 1)), replace=False)))
            params, new = {"axes": ax}, shape
        else:
            return None
        if math.prod(new) > self.lim.elems or math.prod(new) == 0:
            return None
        return self.emit(kind, (v,), params, **self.like(v, shape=tuple(new), exact=v.exact))

    def contraction(self, v: Var, n: int | None = None) -> Var | None:
        if not v.shape or v.dtype.startswith("int"):
            return None
        v = self.norm(v, 1 / 16, 4.0 if v.prec == "float32" else 1.0)
        k, rows = v.shape[-1], v.numel // v.shape[-1]
        lim = self.lim
        n = n or self.dim(hi=max(1, min(lim.operand // k, lim.elems // max(1, rows), lim.flops // (2 * v.numel))))
        if k * n > lim.operand or rows * n > lim.elems or 2 * v.numel * n > lim.flops:
            return None
        a = math.sqrt(3.0 / k)
        batched = len(v.shape) == 3 and self.coin(0.4) and v.shape[0] * k * n <= lim.operand
        if batched:
            w = self.input((v.shape[0], k, n), v.dtype, a)
            op, args = "matmul", (v, w)
        elif self.coin(0.5):
            w = self.input((n, k), v.dtype, a)
            op, args = "linear", (v, w) + ((self.input((n,), v.dtype),) if self.coin(0.3) else ())
        else:
            op, args = "matmul", (v, self.input((k, n), v.dtype, a))
        rms = v.rms if len(args) == 2 else math.hypot(v.rms, 0.577)
        return self.emit(op, args, {}, **self.like(v, shape=v.shape[:-1] + (n,), rms=rms, pos=False, acc=v.acc * k))

    def conv(self) -> Var | None:
        N, C = self.choice((1, 2, 4)), self.choice((3, 8, 16, 32, 64))
        H = W = self.choice((8, 17, 32, 56) if self.mode == "realistic" else (5, 8, 9))
        O, kh = self.choice((8, 16, 64, 128)), self.choice((1, 3, 3, 5))
        stride, padding = self.choice((1, 1, 2)), self.choice((0, 1, kh // 2))
        if H + 2 * padding < kh:
            return None
        d = self.choice(("float32", "float32", "bfloat16"))
        x = self.input((N, C, H, W), d)
        w = self.input((O, C, kh, kh), d, math.sqrt(3.0 / (C * kh * kh)))
        Ho = (H + 2 * padding - kh) // stride + 1
        return self.emit("conv2d", (x, w), {"stride": stride, "padding": padding},
                         shape=(N, O, Ho, Ho), dtype=d, rms=x.rms, acc=C * kh * kh, prec=d)

    # ---------------------------------------------------------------- programs
    def start(self, family: str, dtype: str) -> Var | None:
        lim = self.lim
        if family in ("chain", "splitk"):
            if family == "splitk":  # few output tiles (M * N < 132 * 64 * 64), long k
                m = self.dim(hi=255)
                k = self.dim(lo=512 if self.mode == "realistic" else 16)
                x = self.input((m, k), dtype)
                return self.contraction(x, n=self.dim(lo=8, hi=max(8, min(lim.operand // k, (132 * 4096) // m))))
            x = self.input(self.shape(int(self.rng.integers(2, 4)), lim.operand), dtype)
            return self.contraction(x)
        if family == "rows":
            n = self.choice(lim.long_rows) if self.coin(0.7) else self.dim(lo=64)
            r = self.dim(hi=max(1, lim.elems // n))
            x = self.input((r, n), dtype)
            if self.coin(0.4):
                x = self.unary(x) if self.coin(0.5) else (self.binary(x) or x)
            return self.reduction(x, op=self.choice(("softmax", "logsumexp", "layer_norm", "log_softmax", "sum",
                                                     "max", "argmax_value")))
        if family == "conv":
            return self.conv()
        return self.input(self.shape(int(self.rng.integers(1, 5))), dtype)

    def program(self, seed: int) -> FuzzProgram:
        family = str(self.rng.choice(list(FAMILIES), p=list(FAMILIES.values())))
        dtype = "float32" if self.coin(0.72) else self.choice(("bfloat16", "float16"))
        v = self.start(family, dtype) or self.input(self.shape(2), dtype)
        if family == "chain":  # keepdim reductions one after another (issue 18: sum, max, mean, logsumexp...)
            for _ in range(int(self.rng.integers(2, 6))):
                v = self.reduction(v, op=self.choice(("sum", "max", "mean", "logsumexp", "min", "softmax")),
                                   keepdim=self.coin(0.8)) or v
        for _ in range(int(self.rng.integers(1, 6))):
            v = self.pick()
            cat = self.rng.random()
            fn = (self.unary if cat < 0.25 else self.binary if cat < 0.45 else self.reduction if cat < 0.68 else
                  self.view if cat < 0.86 else self.contraction if cat < 0.93 else self.select if cat < 0.97 else self.cast)
            v = fn(v) or v
        if all(s.op == "input" for s in self.steps):
            self.unary(v)
        used = {a for s in self.steps for a in s.args}
        sinks = [s.out for s in self.steps if s.op != "input" and s.out not in used]
        outs = sinks[::-1][:3]  # every value that nothing reads, the latest first (at most 3)
        live = set(outs)
        for s in reversed(self.steps):  # drop what no output depends on
            if s.out in live:
                live.update(s.args)
        self.steps = [s for s in self.steps if s.out in live]
        self.vars = {k: v for k, v in self.vars.items() if k in live}
        return FuzzProgram(seed, self.mode, family, self.steps, outs, self.vars)


def generate(seed: int, mode: str = "small", max_kernels: int = MAX_KERNELS) -> FuzzProgram:
    """The program of `seed` (the same program for the same seed, mode and Ember version). Draws
    again (from the seed and a draw counter) while the program lowers to more than `max_kernels`."""
    if mode not in LIMITS:
        raise ValueError(f"fuzz mode must be one of {sorted(LIMITS)}, got {mode!r}")
    from .fuzz_ops import kernel_count
    prog = None
    for attempt in range(12):
        prog = _Gen(np.random.default_rng([int(seed), attempt]), mode).program(int(seed))
        try:
            if kernel_count(prog) <= max_kernels:
                return prog
        except Exception:  # noqa: BLE001 - Ember's fault, not the generator's: the run reports it
            return prog
    return prog


# ------------------------------------------------------------------------------------------------
# the checker


def tolerance(v: Var) -> float:
    """rtol of value v: its coarsest float type's, plus float32 summation error over its L terms."""
    return BASE_RTOL.get(v.prec, BASE_RTOL["float32"]) + 4 * EPS32 * math.sqrt(v.acc)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def compare(out, ref, rtol: float, scale: float = 0.0, exact: bool = False) -> tuple[bool, float, float, str]:
    """(ok, max error, bound, why) for one output against its oracle value; numpy or torch arrays.
    NaN and infinities must sit at the same places; `scale` is the magnitude the output was
    computed from (see the module docstring)."""
    if _is_torch(out) or _is_torch(ref):
        import torch as xp
        out = out if _is_torch(out) else xp.as_tensor(np.asarray(out, dtype=np.float64))
        ref = ref if _is_torch(ref) else xp.as_tensor(np.asarray(ref, dtype=np.float64))
        ref = ref.to(out.device)
        out, ref = out.to(xp.float64), ref.to(xp.float64)
        equal = xp.equal
        item = float
    else:
        xp = np
        out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
        equal = np.array_equal
        item = float
    if tuple(out.shape) != tuple(ref.shape):
        return False, math.inf, 0.0, f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    nan_o, nan_r = xp.isnan(out), xp.isnan(ref)
    if not equal(nan_o, nan_r):
        return False, math.inf, 0.0, f"NaN at {int(nan_o.sum())} places, reference {int(nan_r.sum())}"
    inf_r = xp.isinf(ref)
    if not equal(xp.isinf(out), inf_r) or not equal(out[inf_r], ref[inf_r]):
        return False, math.inf, 0.0, "infinities differ"
    fin = ~(nan_r | inf_r)
    if not bool(fin.any()):
        return True, 0.0, 0.0, ""
    err = item(xp.abs(out[fin] - ref[fin]).max())
    if exact:
        return err == 0, err, 0.0, "" if err == 0 else "exact (integer) output differs"
    bound = rtol * max(item(xp.abs(ref[fin]).max()), scale) + ATOL
    return err <= bound, err, bound, "" if err <= bound else f"max|out-ref| = {err:.4g} > {bound:.4g}"


# |df/dx| bounds of the elementwise ops (the error of f(x) is at most this times x's)
SLOPE = {"tanh": 1.0, "sigmoid": 0.25, "gelu": 1.13, "gelu_tanh": 1.13, "silu": 1.1, "relu": 1.0, "leaky_relu": 1.0,
         "softplus": 1.0, "abs": 1.0, "neg": 1.0, "sin": 1.0, "log_abs": 2.0, "sqrt_abs": 1.0, "rsqrt_abs": 0.5,
         "clamp": 1.0, "max": 1.0, "min": 1.0, "argmax_value": 1.0, "logsumexp": 1.0, "log_softmax": 2.0}


def magnitudes(prog: FuzzProgram, maxabs: dict) -> dict:
    """Per value v, M(v): a first-order bound on how far rounding can move v, in units of the
    working precision (the checker allows rtol * M(v)). Inputs: M = max|x|. Each op propagates its
    operands' M through a bound on its derivatives, using the oracle's max |value| A of each value
    (`maxabs`; for layer_norm also the smallest standard deviation it divides by, key
    "name:sigma"): M(a + b) = M(a) + M(b), M(a * b) = M(a) A(b) + A(a) M(b), M(exp x) = A(exp x) M(x),
    a sum of L terms sqrt(L) M(x) (independent errors add like a random walk), a contraction over k
    sqrt(k) (M(a) A(w) + A(a) M(w)), layer_norm M(x) / sigma... and never less than A(v) itself.
    A float32 sum of 10^6 values that cancels to 60 is then judged against its terms' scale, not
    against 60; a layer_norm of nearly constant rows against 1/sigma."""
    M: dict = {}
    for s in prog.steps:
        A = maxabs.get(s.out, 0.0)
        args = [M[a] for a in s.args]
        Aargs = [maxabs.get(a, 0.0) for a in s.args]
        x = prog.vars[s.args[0]] if s.args else None
        L = max(1, x.numel // max(1, prog.vars[s.out].numel)) if x is not None else 1
        op = s.op
        if op in ("input", "argmax"):
            m = A
        elif op == "scale":
            m = abs(s.params["c"]) * args[0]
        elif op in ("add", "sub"):
            m = args[0] + args[1]
        elif op == "mul":
            m = args[0] * Aargs[1] + Aargs[0] * args[1]
        elif op == "div_safe":
            m = args[0] + Aargs[0] * args[1]
        elif op == "square":
            m = 2 * Aargs[0] * args[0]
        elif op == "exp":
            m = A * args[0]
        elif op == "softmax":
            m = 2 * A * args[0]
        elif op == "sum":
            m = math.sqrt(L) * args[0]
        elif op == "mean":
            m = args[0] / math.sqrt(L)
        elif op in ("matmul", "linear", "conv2d"):
            w = prog.vars[s.args[1]]
            k = w.numel // w.shape[0] if op == "conv2d" else x.shape[-1]
            m = math.sqrt(k) * (args[0] * Aargs[1] + Aargs[0] * args[1]) + (args[2] if len(args) > 2 else 0.0)
        elif op == "layer_norm":  # y = z w + b, z = (x - mean) / sigma
            sigma = max(maxabs.get(f"{s.out}:sigma", 1.0), 1e-3)
            Mz, Az = 2 * args[0] / sigma, 2 * Aargs[0] / sigma
            m = Mz * (Aargs[1] if len(args) > 1 else 1.0) + (Az * args[1] if len(args) > 1 else 0.0) + \
                (args[2] if len(args) > 2 else 0.0)
        else:  # views, casts, selects, maximum/minimum and the SLOPE table
            m = SLOPE.get(op, 1.0) * max(args)
        M[s.out] = max(A, m)
    return M


@dataclass
class OutputCheck:
    name: str
    ok: bool
    err: float
    bound: float
    why: str


def check(prog: FuzzProgram, outs: list, refs: dict, maxabs: dict) -> list:
    """Each output of `prog` (in prog.outputs order) against the oracle's values `refs` (name ->
    array, every value of the program) and the oracle's max |value| per name."""
    mag = magnitudes(prog, maxabs)
    res = []
    for name, out in zip(prog.outputs, outs):
        v = prog.vars[name]
        ok, err, bound, why = compare(out, refs[name], tolerance(v), mag.get(name, 0.0), exact=v.dtype.startswith("int"))
        res.append(OutputCheck(name, ok, err, bound, why))
    return res
