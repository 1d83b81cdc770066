"""ember.symbolic against plain Python integers.

Random expression trees are built twice: once through the symbolic constructors (which simplify as
they go) and once as a plain Python function of integers with floor semantics. For random
assignments inside the declared bounds, the two must agree — through `evaluate`, through `render_c`
compiled with gcc, through `substitute`, and through the JSON form. Every sub-expression's numeric
bounds (and the symbolic bounds used in proofs) must contain its true value.
"""
from __future__ import annotations

import os
import pickle
import random
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ember import symbolic as sm

# ------------------------------------------------------------------------------------------------
# the variable pool: named dims (>= 1), index variables with constant and with symbolic bounds

N, M = sm.dim("N"), sm.dim("M")
VARS = {
    "N": N,
    "M": M,
    "i": sm.var("i", 0, 7),
    "j": sm.var("j", 0, 3),
    "k": sm.var("k", -3, 5),          # may be negative: exercises the floor helpers
    "n": sm.index_var("n", N),        # 0 <= n < N
    "m": sm.index_var("m", M),        # 0 <= m < M
    "p": sm.index_var("p", N * M),    # 0 <= p < N*M
    "q": sm.index_var("q", (N + 1) * (M + 1)),
}
NAMES = sorted(VARS)

# divisors: positive and negative constants, named dims and products/sums of them
DIVISORS = [("const", c) for c in (1, 2, 3, 4, 5, 7, 8, 16, -1, -2, -3, -8)] + [
    ("var", "N"), ("var", "M"), ("mul", ("var", "N"), ("var", "M")), ("add", ("var", "N"), ("const", 2)),
    ("mul", ("add", ("var", "N"), ("const", 1)), ("add", ("var", "M"), ("const", 1))),
    ("sub", ("const", 0), ("var", "N"))]                            # a negative symbolic divisor

BINOPS = ("add", "sub", "mul", "min", "max", "lt", "le", "ge", "eq", "and")


def build(t):
    """The tree through Ember's smart constructors."""
    op = t[0]
    if op == "const":
        return sm.const(t[1])
    if op == "var":
        return VARS[t[1]]
    if op == "not":
        return sm.logical_not(build(t[1]))
    a, b = build(t[1]), build(t[2])
    return {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: a // b, "mod": lambda: a % b,
        "min": lambda: sm.minimum(a, b), "max": lambda: sm.maximum(a, b),
        "lt": lambda: sm.lt(a, b), "le": lambda: sm.le(a, b), "ge": lambda: sm.ge(a, b),
        "eq": lambda: sm.eq(a, b), "and": lambda: sm.logical_and(a, b),
    }[op]()


def py(t, env):
    """The tree computed directly with Python ints."""
    op = t[0]
    if op == "const":
        return t[1]
    if op == "var":
        return env[t[1]]
    if op == "not":
        return int(not py(t[1], env))
    a, b = py(t[1], env), py(t[2], env)
    return {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: a // b, "mod": lambda: a % b,
        "min": lambda: min(a, b), "max": lambda: max(a, b),
        "lt": lambda: int(a < b), "le": lambda: int(a <= b), "ge": lambda: int(a >= b),
        "eq": lambda: int(a == b), "and": lambda: int(bool(a) and bool(b)),
    }[op]()


def tree_str(t) -> str:
    if t[0] == "const":
        return str(t[1])
    if t[0] == "var":
        return t[1]
    return f"{t[0]}(" + ", ".join(tree_str(x) for x in t[1:]) + ")"


# ---- hypothesis strategies

leaves = st.one_of(st.tuples(st.just("const"), st.integers(-12, 12)),
                   st.tuples(st.just("var"), st.sampled_from(NAMES)))


def _range_check(x, checks):
    """A conjunction of comparisons of one sub-tree with constants (what pad/slice masks look like)."""
    out = None
    for op, c, flip in checks:
        cmp = (op, ("const", c), x) if flip else (op, x, ("const", c))
        out = cmp if out is None else ("and", out, cmp)
    return out


def _extend(children):
    return st.one_of(
        st.builds(_range_check, children, st.lists(st.tuples(st.sampled_from(("lt", "le", "ge")), st.integers(-6, 10),
                                                             st.booleans()), min_size=2, max_size=4)),
        st.tuples(st.sampled_from(BINOPS), children, children),
        st.tuples(st.sampled_from(("div", "mod")), children, st.sampled_from(DIVISORS)),
        st.tuples(st.just("not"), children),
        # index-shaped terms: var*stride + small, the shapes views produce
        st.tuples(st.just("add"), st.tuples(st.just("mul"), children, st.sampled_from(DIVISORS[:8] + DIVISORS[12:])),
                  children),
    )


trees = st.recursive(leaves, _extend, max_leaves=10)


@st.composite
def envs(draw, big: bool = False):
    hi = 40 if big else 6
    e = {"N": draw(st.integers(1, hi)), "M": draw(st.integers(1, hi))}
    e["i"] = draw(st.integers(0, 7))
    e["j"] = draw(st.integers(0, 3))
    e["k"] = draw(st.integers(-3, 5))
    e["n"] = draw(st.integers(0, e["N"] - 1))
    e["m"] = draw(st.integers(0, e["M"] - 1))
    e["p"] = draw(st.integers(0, e["N"] * e["M"] - 1))
    e["q"] = draw(st.integers(0, (e["N"] + 1) * (e["M"] + 1) - 1))
    return e


def random_env(rng: random.Random) -> dict:
    e = {"N": rng.randint(1, 9), "M": rng.randint(1, 9), "i": rng.randint(0, 7), "j": rng.randint(0, 3),
         "k": rng.randint(-3, 5)}
    e["n"] = rng.randint(0, e["N"] - 1)
    e["m"] = rng.randint(0, e["M"] - 1)
    e["p"] = rng.randint(0, e["N"] * e["M"] - 1)
    e["q"] = rng.randint(0, (e["N"] + 1) * (e["M"] + 1) - 1)
    return e


def random_tree(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.2:
        return ("const", rng.randint(-12, 12)) if rng.random() < 0.3 else ("var", rng.choice(NAMES))
    r = rng.random()
    if r < 0.1:
        x = random_tree(rng, depth - 1)
        return _range_check(x, [(rng.choice(("lt", "le", "ge")), rng.randint(-6, 10), rng.random() < 0.5)
                                for _ in range(rng.randint(2, 4))])
    if r < 0.35:
        return (rng.choice(("div", "mod")), random_tree(rng, depth - 1), rng.choice(DIVISORS))
    if r < 0.4:
        return ("not", random_tree(rng, depth - 1))
    if r < 0.55:
        return ("add", ("mul", random_tree(rng, depth - 1), rng.choice(DIVISORS)), random_tree(rng, depth - 1))
    return (rng.choice(BINOPS), random_tree(rng, depth - 1), random_tree(rng, depth - 1))


def subexprs(e):
    out, stack, seen = [], [e], set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        out.append(x)
        if x.op == "add":
            stack.extend(t for t, _ in x.args[1])
        elif x.op == "var":
            if isinstance(x.args[2], sm.Expr):
                stack.append(x.args[2])
        elif x.op != "const":
            stack.extend(x.args)
    return out


SETTINGS = settings(max_examples=int(os.environ.get("EMBER_FUZZ_EXAMPLES", "400")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------
# evaluation, bounds, symbolic bounds

@SETTINGS
@given(trees, st.lists(envs(), min_size=1, max_size=6), st.booleans())
def test_evaluate_matches_python_ints(t, env_list, big):
    e = build(t)
    for env in env_list:
        assert sm.evaluate(e, env) == py(t, env), f"{tree_str(t)} -> {e} at {env}"


@SETTINGS
@given(trees, st.lists(envs(big=True), min_size=1, max_size=4))
def test_evaluate_matches_python_ints_large_dims(t, env_list):
    e = build(t)
    for env in env_list:
        assert sm.evaluate(e, env) == py(t, env), f"{tree_str(t)} -> {e} at {env}"


@SETTINGS
@given(trees, st.lists(envs(), min_size=1, max_size=4))
def test_bounds_are_sound(t, env_list):
    """Every sub-expression's value lies in [vmin, vmax], and between its symbolic bounds."""
    e = build(t)
    for env in env_list:
        for x in subexprs(e):
            v = sm.evaluate(x, env)
            assert x.vmin <= v <= x.vmax, f"{x} = {v} outside [{x.vmin}, {x.vmax}] at {env} (from {tree_str(t)})"
            lo, hi = sm.lower_bound(x), sm.upper_bound(x)
            assert sm.evaluate(lo, env) <= v <= sm.evaluate(hi, env), \
                f"{x} = {v} outside symbolic [{lo}, {hi}] at {env} (from {tree_str(t)})"


@SETTINGS
@given(trees, trees, st.lists(envs(), min_size=1, max_size=4))
def test_proofs_are_sound(ta, tb, env_list):
    a, b = build(ta), build(tb)
    le, lt = sm.prove_le(a, b), sm.prove_lt(a, b)
    for env in env_list:
        va, vb = py(ta, env), py(tb, env)
        if le:
            assert va <= vb, f"proved {a} <= {b} but {va} > {vb} at {env}"
        if lt:
            assert va < vb, f"proved {a} < {b} but {va} >= {vb} at {env}"


def test_bounds_of_products_and_quotients():
    x, y = sm.var("x", -3, 2), sm.var("y", -5, -1)
    assert ((x * y).vmin, (x * y).vmax) == (-10, 15)
    assert ((x // -2).vmin, (x // -2).vmax) == (-1, 1)
    assert ((x % -3).vmin, (x % -3).vmax) == (-2, 0)
    assert ((y % N).vmin, (y % N).vmax) == (0, sm.INF)
    u = sm.var("u", 0, 9)
    assert ((u // N).vmin, (u // N).vmax) == (0, 9)
    assert ((u % N).vmin, (u % N).vmax) == (0, 9)   # u % N <= u when u >= 0


# ------------------------------------------------------------------------------------------------
# substitution, JSON, pickling

# replacements that keep each variable inside its declared bounds
def _replacements(env):
    n_, m_ = env["N"], env["M"]
    return {
        "i": [sm.const(env["i"]), VARS["j"] * 2 + 1, 7 - VARS["i"]],
        "j": [sm.const(env["j"]), VARS["i"] % 4, VARS["i"] // 2],
        "k": [sm.const(env["k"]), VARS["j"] * 2 - 3],
        "n": [sm.const(env["n"]), N - 1 - VARS["n"], VARS["p"] // M],
        "m": [sm.const(env["m"]), M - 1 - VARS["m"], VARS["p"] % M],
        "p": [sm.const(env["p"]), VARS["n"] * M + VARS["m"], N * M - 1 - VARS["p"]],
        "q": [sm.const(env["q"]), VARS["n"] * (M + 1) + VARS["m"], (N + 1) * (M + 1) - 1 - VARS["q"]],
        "N": [sm.const(n_)],
        "M": [sm.const(m_)],
    }


@SETTINGS
@given(trees, envs(), st.data())
def test_substitution_agrees_with_evaluation(t, env, data):
    e = build(t)
    reps = _replacements(env)
    names = data.draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    mapping = {nm: data.draw(st.sampled_from(reps[nm])) for nm in names}
    substituted = sm.substitute(e, mapping)
    # the value the original sees: each replaced variable takes its replacement's value
    env2 = dict(env)
    for nm, r in mapping.items():
        env2[nm] = sm.evaluate(r, env)
    # bounds of n, m, p must still hold after replacing N or M by the environment's values
    assume(0 <= env2["n"] < env2["N"] and 0 <= env2["m"] < env2["M"] and 0 <= env2["p"] < env2["N"] * env2["M"]
           and 0 <= env2["q"] < (env2["N"] + 1) * (env2["M"] + 1))
    assert sm.evaluate(substituted, env) == py(t, env2), f"{e} with {mapping} -> {substituted} at {env}"


def test_substitution_updates_symbolic_bounds():
    """After binding N, an index over N has constant bounds (and nothing left mentions N)."""
    n = VARS["n"]
    e = sm.substitute(N - 1 - n + (n // N), {"N": 4})
    assert "N" not in str(sm.to_json(e))
    assert e.vmin == 0 and e.vmax == 3


@SETTINGS
@given(trees)
def test_json_roundtrip_is_identical(t):
    e = build(t)
    assert sm.from_json(sm.to_json(e)) is e
    assert pickle.loads(pickle.dumps(e)) is e


@SETTINGS
@given(trees, trees)
def test_add_mul_and_minmax_are_commutative_and_associative(ta, tb):
    a, b = build(ta), build(tb)
    assert a + b is b + a
    assert a * b is b * a
    assert (a + b) - b is a
    assert sm.minimum(a, b) is sm.minimum(b, a)
    assert sm.maximum(a, b) is sm.maximum(b, a)
    assert sm.logical_and(a, b) is sm.logical_and(b, a)
    c = VARS["j"] * 3 + N
    assert (a + b) + c is a + (b + c)
    assert (a * b) * c is a * (b * c)


# ------------------------------------------------------------------------------------------------
# C rendering: many expressions, one gcc compile

def _have_gcc() -> bool:
    return shutil.which("gcc") is not None


@pytest.mark.skipif(not _have_gcc(), reason="gcc not installed")
@pytest.mark.parametrize("seed", [0, 1])
def test_render_c_compiled_with_gcc_matches(seed):
    rng = random.Random(seed)
    exprs, trs = [], []
    while len(exprs) < 400:
        t = random_tree(rng, rng.randint(1, 5))
        trs.append(t)
        exprs.append(build(t))
    env_list = [random_env(rng) for _ in range(24)]
    params = ", ".join(f"long long {nm}" for nm in NAMES)
    args = lambda env: ", ".join(f"{env[nm]}LL" for nm in NAMES)  # noqa: E731
    src = ["#include <stdio.h>", sm.C_HELPERS]
    for q, e in enumerate(exprs):
        src.append(f"static long long f{q}({params}) {{ return {sm.render_c(e)}; }}")
    src.append("int main(void) {")
    for env in env_list:
        for q in range(len(exprs)):
            src.append(f'  printf("%lld\\n", f{q}({args(env)}));')
    src.append("  return 0;\n}")
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "t.c"), os.path.join(d, "t")
        with open(c, "w") as f:
            f.write("\n".join(src))
        subprocess.run(["gcc", "-O0", "-w", "-o", exe, c], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout.split()
    got = iter(int(v) for v in out)
    for env in env_list:
        for t, e in zip(trs, exprs):
            v = next(got)
            assert v == py(t, env), f"C: {sm.render_c(e)} = {v}, expected {py(t, env)} at {env} ({tree_str(t)})"


def test_render_c_uses_plain_division_only_when_non_negative():
    i, k = VARS["i"], VARS["k"]
    assert sm.render_c(i // 3) == "(i / 3)"
    assert "EM_FDIV" in sm.render_c(k // 3)
    assert "EM_FMOD" in sm.render_c(k % 3)
    assert sm.render_c(VARS["p"] // M) == "(p / M)"
    assert sm.render_c(i, {"i": "tid"}) == "tid"
    # non-negative by a symbolic proof (n <= N - 1), not by numeric bounds
    flipped = N - 1 - VARS["n"]
    assert flipped.vmin == -sm.INF and " / 2" in sm.render_c(flipped // 2)


# ------------------------------------------------------------------------------------------------
# canonical forms

def test_canonical_div_mod_by_constant():
    i, j = sm.var("i", 0, 100), sm.index_var("j", 8)
    assert (i * 8 + j) // 8 is i
    assert (i * 8 + j) % 8 is j
    assert (j + i * 8 + 16) // 8 is i + 2
    assert (i * 24 + j) // 8 is i * 3
    assert (i * 8 + j + 3) % 8 is (j + 3) % 8


@pytest.mark.parametrize("c", [2, 3, 8, 16])
@pytest.mark.parametrize("lo,hi", [(0, 100), (-50, 50), (-7, -1)])
def test_divmod_recombines(c, lo, hi):
    x = sm.var("x", lo, hi)
    assert (x // c) * c + x % c is x
    assert 3 * ((x // c) * c) + 3 * (x % c) is 3 * x
    y = sm.var("y", 0, 9)
    assert (x // c) * c + y + x % c is x + y
    assert (x // c) * c - x is -(x % c)


def test_divmod_recombines_with_symbolic_divisor():
    x = sm.var("x", 0, 10**6)
    assert (x // N) * N + x % N is x
    assert (x // (N + 2)) * (N + 2) + x % (N + 2) is x


def test_canonical_symbolic_divisor():
    S = sm.dim("S")
    i, j = sm.var("i", 0, 100), sm.index_var("j", S)
    assert (i * S + j) // S is i
    assert (i * S + j) % S is j
    assert (j + S * i + S * 3) // S is i + 3
    # (S*H - 1) // H == S - 1 for H >= 1: the remainder -1 lies in [-H, 0)
    H = sm.dim("H")
    assert (S * H - 1) // H is S - 1
    # an index over S*H, split by H, stays below S
    p = sm.index_var("p", S * H)
    assert (p // H) % S is p // H
    q, r = sm.index_var("q", S), sm.index_var("r", H)
    assert (q * H + r) // (S * H) is sm.ZERO
    assert (q * H + r) % (S * H) is q * H + r
    # a divisor that is a sum: (i*(S+2) + j) // (S+2) -> i for j in [0, S+2)
    j2 = sm.index_var("j2", S + 2)
    assert (i * (S + 2) + j2) // (S + 2) is i
    assert (i * (S + 2) + j2) % (S + 2) is j2
    # a scaled monomial divisor (2*S): main's "divide by scaled monomials" cases, one division each
    jj, kk, x = sm.index_var("jj", 2 * S), sm.index_var("kk", S), sm.var("x", 0, 10**6)
    assert (2 * S * i + jj) // (2 * S) is i and (2 * S * i + jj) % (2 * S) is jj
    assert (4 * S * i + 2 * S + jj) // (2 * S) is 2 * i + 1
    assert (2 * S * i + 2 * kk + 1) // (2 * S) is i and (2 * S * i + 2 * kk + 1) % (2 * S) is 2 * kk + 1
    assert (x // 2) // S is x // (2 * S)
    # a divisor that is a product of sums: division follows a graded order (highest term first)
    P = (S + 1) * (H + 1)
    j3 = sm.index_var("j3", P)
    assert (i * P + j3) // P is i
    assert (i * P + j3 + 2 * P) % P is j3


def test_nested_divisor_folds():
    """(g*y + s) // (g*m) -> y // m and (g*y + s) % (g*m) -> g*(y % m) + s when 0 <= s < g."""
    i, j = sm.index_var("i", 4), sm.index_var("j", 2)
    assert (2 * i + j) // 4 is i // 2
    assert (2 * i + j) % 4 is 2 * (i % 2) + j
    x = sm.var("x", 0, 1000)
    assert (x // 2) // 4 is x // 8
    assert (x % 16) % 4 is x % 4
    assert ((x // 2) % 4) * 2 + (x // 8) * 8 + x % 2 is x


def test_cancellation():
    a, b = sm.var("a", -5, 5), sm.var("b", 0, 3) * N
    assert a + b - b is a
    assert (a - a) is sm.ZERO
    assert (a * 2 + b) - (b + a) is a
    assert (a // 3) * 0 is sm.ZERO


def test_min_max_lt_fold_by_bounds():
    i = sm.index_var("i", 8)
    assert sm.minimum(i, 10) is i
    assert sm.maximum(i, 10) is sm.const(10)
    assert sm.lt(i, 8) is sm.ONE
    assert sm.lt(i, 0) is sm.ZERO
    assert sm.lt(VARS["n"], N) is sm.ONE
    assert sm.ge(VARS["n"], N) is sm.ZERO
    assert sm.lt(N - 1 - VARS["n"], N) is sm.ONE


def test_logic_is_boolean_valued():
    x = sm.var("x", 0, 5)
    for e in (sm.logical_and(1, x), sm.logical_and(x, x), sm.logical_not(sm.logical_not(x))):
        assert sm.evaluate(e, {"x": 5}) == 1 and sm.evaluate(e, {"x": 0}) == 0
    b = sm.lt(x, 3)
    assert sm.logical_not(sm.logical_not(b)) is b
    assert sm.logical_and(b, b) is b
    # a conjunction keeps only the stronger of two bounds on the same expression
    assert sm.logical_and(sm.lt(x, 3), sm.lt(x, 4)) is sm.lt(x, 3)
    assert sm.logical_and(sm.logical_and(sm.lt(x, 3), sm.ge(x, 1)), sm.lt(x, 4)) is \
        sm.logical_and(sm.lt(x, 3), sm.ge(x, 1))


def test_point_range_variable_is_a_constant():
    assert sm.index_var("i", 1) is sm.ZERO
    assert sm.var("v", 3, 3) is sm.const(3)


def test_keys_render_unambiguously():
    x = sm.var("x", 0, 100)
    assert str(x // (N * M)) != str((x // N) * M)
    assert str(x % (N * M)) != str((x % N) * M)


def test_bool_of_expression_is_an_error():
    with pytest.raises(TypeError):
        bool(VARS["i"])


def test_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError):
        VARS["i"] // 0
    with pytest.raises(ZeroDivisionError):
        VARS["i"] % 0


def test_evaluate_over_numpy_grids():
    i, j = sm.index_var("i", 4), sm.index_var("j", 5)
    e = (i * 5 + j) // 3 - sm.lt(j, 2)
    gi, gj = np.indices((4, 5), sparse=True)
    got = sm.evaluate(e, {"i": gi, "j": gj})
    want = (gi * 5 + gj) // 3 - (gj < 2)
    assert np.array_equal(got, want)


def test_negative_numerators_are_oriented():
    """(c - x) // d == -((x - c - 1) // d) - 1 and (c - x) % d == d - 1 - (x - c - 1) % d."""
    i = sm.var("i", 0, 100)
    assert (5 - i) // 4 is -((i - 6) // 4) - 1
    assert (5 - i) % 4 is 3 - (i + 2) % 4
    x = sm.var("x", 0, 10**6)
    assert (N * M - 1 - x) // M is N - 1 - x // M
    assert (N * M - 1 - x) % M is M - 1 - x % M


def test_scaled_term_over_a_multiple_of_its_scale_folds():
    """(c*t + r) // d == t // (d/c) and (c*t + r) % d == c*(t % (d/c)) + r when 0 <= r < c and c | d
    (GQA's repeat_kv index: 176*((176*o1 + 16*o3 + r) // 352) is 176*(o1 // 2)); not when r can reach c."""
    o1, o3, r = sm.index_var("o1", 8), sm.index_var("o3", 11), sm.index_var("r", 16)
    x = 176 * o1 + 16 * o3 + r
    assert x // 352 is o1 // 2
    assert x % 352 is 176 * (o1 % 2) + 16 * o3 + r
    assert (x + 3) // 352 is not o1 // 2  # 16*o3 + r + 3 reaches 178 >= 176
    for env in ({"o1": a, "o3": b, "r": c} for a in range(8) for b in (0, 10) for c in (0, 15)):
        v = 176 * env["o1"] + 16 * env["o3"] + env["r"]
        assert sm.evaluate(x // 352, env) == v // 352 and sm.evaluate(x % 352, env) == v % 352


def test_rule_tables_are_patterns_read_in_order():
    """The rewrite driver: rows are (pattern, rewrite); a rewrite whose parameters do not name the
    pattern's variables in order is refused when the table is built; every table ends with a row
    that always answers."""
    from ember.symbolic import division, logic
    from ember.symbolic.rewrite import Pat, Rules, rewrite
    x, d = Pat.var("x"), Pat.cvar("d")
    with pytest.raises(ValueError, match="binds"):
        Rules("bad", [(x // d, lambda d, x: x)])
    half = Rules("half", [(x // 2, lambda x: sm.const(-1)), ((x // d) // d, lambda x, d: x), (x // d, lambda x, d: x)])
    i = VARS["i"]
    assert rewrite(half, i, sm.const(2)) is sm.const(-1)
    assert rewrite(half, i // 3, sm.const(3)) is i  # the repeated name must bind equal constants
    assert rewrite(half, i // 3, sm.const(5)) is i // 3
    for table in (division.DIV, division.DIV_CONST_REST, division.DIV_REST, division.MOD, division.MOD_CONST_REST,
                  division.MOD_REST, logic.MIN, logic.MAX, logic.NOT):
        last = table.patterns[-1].srcs  # a catch-all: named variables only, no constant or node to match
        assert all(q.op is None for q in last), f"{table} ends with a row that can decline"


def test_fold_visits_each_shared_subexpression_once():
    """The one tree walker: a visitor table per node kind; a sub-expression shared by several
    parents is folded once (so walks are linear in the DAG, not the tree)."""
    i, j = VARS["i"], VARS["j"]
    s = (i * 8 + j) // 3
    e = sm.minimum(s, N) + sm.maximum(s, M) * (s % 5)
    seen: list = []

    def count(x, go, ctx):
        seen.append(x)
        for a in sm.walk.children(x):
            go(a)
        return ctx

    sm.fold(e, dict.fromkeys(("const", "var", "add", "mul", "div", "mod", "min", "max", "lt", "and", "not"), count),
            "ctx")
    assert len(seen) == len(set(map(id, seen)))  # nothing twice
    assert sum(x is s for x in seen) == 1
    assert {id(x) for x in seen} <= {id(x) for x in subexprs(e)}
    assert all(any(x is t for x in seen) for t in (e, s, i, j, N, M))


def test_assume_simplifies_where_the_guard_holds_and_agrees_there():
    """A padded view of a re-split flat index: under 0 < y < 113, 0 < x < 113 the divisions fold
    (the stem pool of a ResNet); the result equals the original at every point the guard admits."""
    import itertools
    o1, y, x = sm.index_var("o1", 4), sm.index_var("y", 114), sm.index_var("x", 114)
    guard = sm.logical_and(sm.logical_and(sm.lt(0, y), sm.lt(0, x)), sm.logical_and(sm.lt(y, 113), sm.lt(x, 113)))
    e = 12544 * sm.mod(sm.floordiv(112 * y + x + 12431, 12544) + o1 + 3, 4) \
        + 112 * sm.mod(sm.floordiv(x + 111, 112) + y + 110, 112) + sm.mod(x + 111, 112)
    r = sm.assume(e, guard)
    assert r is sm.sym(12544 * o1 + 112 * y + x - 113)
    for a, b, c in itertools.product(range(4), (1, 2, 56, 111, 112), (1, 3, 112)):
        env = {"o1": a, "y": b, "x": c}
        assert sm.evaluate(r, env) == sm.evaluate(e, env)
    assert sm.assume(e, sm.ONE) is e  # no guard: unchanged
