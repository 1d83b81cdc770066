"""Every rewrite rule fires on a graph containing its left-hand side, produces the stated right-hand
side in the same e-class, and every candidate extracted afterwards computes the same values."""
import numpy as np
import pytest

import ember as em
from tests.conftest import assert_close

pytest.importorskip("egglog")
from ember.search import rules as rl  # noqa: E402
from ember.search.egraph import Region  # noqa: E402


def _inputs(shape=(3, 5)):
    return em.input("x", shape), em.input("y", shape), em.input("z", shape)


def case(name):
    x, y, z = _inputs()
    c = em.input("c", (3, 5), em.bool_)
    lx = em.input("x", (2, 8192))
    k = lambda t: t.sum(1, keepdim=True)  # noqa: E731
    m = lambda t: t.max(1, keepdim=True)  # noqa: E731
    return {
        "add-commute": (x + y, y + x),
        "mul-commute": (x * y, y * x),
        "add-assoc": ((x + y) + z, x + (y + z)),
        "mul-assoc": ((x * y) * z, x * (y * z)),
        "mul-one": (x * 1.0, x),
        "add-zero": (x + 0.0, x),
        "fold-mul": ((x * 2.0) * 3.0, x * 6.0),
        "fold-add": ((x + 2.0) + 3.0, x + 5.0),
        "log2-exp2": (x.exp2().log2(), x),
        "recip-recip": (x.reciprocal().reciprocal(), x),
        "recip-product": (x.reciprocal() * y.reciprocal(), (x * y).reciprocal()),
        "where-same": (em.where(c, x, x), x),
        "exp2-product": (x.exp2() * y.exp2(), (x + y).exp2()),
        "factor": (x * z + y * z, (x + y) * z),
        "sum-scale": (k(x * 3.0), k(x) * 3.0),
        "max-shift": (m(x + 3.0), m(x) + 3.0),
        "max-scale": (m(x * 3.0), m(x) * 3.0),
        "sum-linear": (k(x + y), k(x) + k(y)),
        "materialise-reduction": (k(x) + 1.0, None),
        "materialise-exp2": (x.exp2() * 2.0, None),
        "split-reduction": (lx.sum(1), None),
    }[name]


@pytest.mark.parametrize("name", [r.name for r in rl.RULES])
def test_rule_fires_and_preserves_meaning(name):
    from egglog import eq
    lhs, rhs = case(name)
    # graph construction orders commutative operands canonically, so the right-hand side may appear
    # with its operands swapped: the commutativity rules (tested on their own too) come along
    comm = [rl.BY_NAME["add-commute"], rl.BY_NAME["mul-commute"]] if "commute" not in name else []
    region = Region([lhs.node], rules=[rl.BY_NAME[name]] + comm)
    before = region.size()
    region.saturate()
    root = region.roots[0]
    if rhs is not None:
        region.egraph.check(eq(root).to(region.enc.encode(rhs.node)))
    elif rl.BY_NAME[name].expand is None:
        assert region.size() > before, f"{name} did not add anything"
    cands = region.candidates(8)
    if rhs is None:
        assert len(cands) > 1, f"{name}: no alternative candidate extracted"
    rng = np.random.default_rng(0)
    ins = {}
    for n in em.graph.inputs_of([lhs.node]):
        shape = tuple(int(s) for s in n.shape)
        ins[n.arg] = rng.random(shape) < 0.5 if n.dtype.is_bool else (rng.standard_normal(shape) + (2 if name in (
            "recip-recip", "recip-product") else 0)).astype(np.float32)
    ref = em.reference(lhs, **ins)
    for cnd in cands:
        used = {n.arg for n in em.graph.inputs_of(list(cnd))}  # a rewrite may drop an input (where-same)
        out = em.reference(em.Tensor(cnd[0]), **{k: v for k, v in ins.items() if k in used})
        assert_close(out, ref, what=name)


def test_rule_table_is_data():
    assert len(rl.RULES) >= 20
    assert len({r.name for r in rl.RULES}) == len(rl.RULES)
    assert all(r.algebra and (r.egglog or r.expand) for r in rl.RULES)


def test_algebra_text_compiles_to_the_egglog_rules_it_states():
    """A rule's text is the rule: its egglog commands are the ones written out by hand."""
    from egglog import String, eq, f64, i64, rewrite, rule, union, var, vars_

    from ember.search.terms import egglog_sort
    H, reduced = egglog_sort()
    x, e = vars_("x e", H)
    a, b = vars_("a b", f64)
    s, s2, ax = vars_("s s2 ax", i64)
    d = var("d", String)
    by_hand = {
        "fold-mul": rewrite(H.binary("mul", H.binary("mul", x, H.scalar(a, s, d)), H.scalar(b, s, d))).to(
            H.binary("mul", x, H.scalar(a * b, s, d))),
        "max-scale": rule(eq(e).to(H.reduce("max", ax, H.binary("mul", x, H.scalar(a, s, d)))),
                          eq(s2).to(reduced(s, ax)), a > 0.0).then(
            union(e).with_(H.binary("mul", H.reduce("max", ax, x), H.scalar(a, s2, d)))),
    }
    for name, cmd in by_hand.items():
        assert [str(c) for c in rl.BY_NAME[name].egglog(H, reduced)] == [str(cmd)], name


@pytest.mark.parametrize("text, what", [("x + y", "lhs = rhs"), ("x + = y", "invalid syntax"),
                                        ("x * q = x", "unknown name 'q'"), ("foo(x) = x", "unknown function 'foo'"),
                                        ("x * a = x  if x > 0", "condition")])
def test_malformed_rule_text_is_a_clear_error(text, what):
    """Names and syntax are checked when the rule is made; a condition when its commands are built."""
    from ember.search.algebra import RuleSyntaxError
    from ember.search.terms import egglog_sort
    with pytest.raises(RuleSyntaxError, match=what):
        rl.Rule("bad", text).egglog(*egglog_sort())


def test_a_spent_search_clock_stops_the_rules_and_the_sampling():
    """Under a search's time limit the e-graph stage stops between rule iterations and between
    samples (egraph.SATURATE_SHARE / SAMPLE_SHARE), keeping what it found."""
    x = em.input("x", (4, 33))
    y = ((x * 3.0) * 2.0).exp() + (x * 6.0) * 1.0
    region = Region([y.node])
    region.saturate(until=lambda: True)
    assert region.iterations == 1
    assert len(region.candidates(8, until=lambda: True)) == 1  # the greedy extraction, then stop
    free = Region([y.node])
    free.saturate()
    assert free.iterations > 1 and len(free.candidates(8)) > 1
