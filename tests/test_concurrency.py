"""runtime/concurrency.py: which launches may run at the same time, from the memory they touch."""
import numpy as np

import ember as em
from ember.runtime.concurrency import launch_accesses, launch_levels
from ember.runtime.program import Launch


def test_independent_launches_share_a_level():
    a, b, c = (0, 100), (100, 200), (200, 300)
    # 0 and 1 read a and write b / c; 2 reads b and c
    lv = launch_levels([([a], [b]), ([a], [c]), ([b, c], [(300, 400)])])
    assert lv == [[0, 1], [2]]


def test_every_hazard_orders_launches():
    x, y = (0, 64), (64, 128)
    assert launch_levels([([x], [y]), ([y], [(500, 600)])]) == [[0], [1]]  # read after write
    assert launch_levels([([y], [(500, 600)]), ([x], [y])]) == [[0], [1]]  # write after read
    assert launch_levels([([x], [y]), ([x], [y])]) == [[0], [1]]  # write after write
    assert launch_levels([([x], [(500, 600)]), ([x], [(600, 700)])]) == [[0, 1]]  # reads only: free


def test_overlapping_ranges_conflict_whatever_their_names():
    """Temporaries share an arena: a buffer at [96, 160) overlaps one at [64, 128)."""
    assert launch_levels([([(0, 64)], [(64, 128)]), ([(200, 300)], [(96, 160)])]) == [[0], [1]]
    assert launch_levels([([(0, 64)], [(64, 128)]), ([(200, 300)], [(128, 160)])]) == [[0, 1]]


def test_a_chain_is_one_launch_per_level():
    r = [(i * 10, i * 10 + 10) for i in range(6)]
    assert launch_levels([([r[i]], [r[i + 1]]) for i in range(5)]) == [[i] for i in range(5)]


def test_unknown_writes_count_as_writes():
    """A launch loaded from an older program file has no `writes`: every argument counts as written."""
    x = em.input("x", (8,))
    fn = em.compile(x + 1.0, device="cpu")
    ptrs = {n: 1000 * (i + 1) for i, n in enumerate(fn.buffers)}
    l = fn.launches[0]
    known = launch_accesses(fn, ptrs, {}, [l])[0]
    assert known[0] and known[1], "reads x, writes the output"
    unknown = launch_accesses(fn, ptrs, {}, [Launch(l.kernel, l.args, l.dims, l.stats, l.config, None)])[0]
    assert not unknown[0] and len(unknown[1]) == len(l.args)


def test_compiled_programs_record_what_each_launch_writes():
    x = em.input("x", (16, 32))
    w1, w2 = em.input("w1", (32, 24)), em.input("w2", (32, 24))
    y = (x @ w1).relu() + (x @ w2).sigmoid().sum(-1, keepdim=True)
    fn = em.compile(y, device="cpu")
    for l in fn.launches:
        assert l.writes and set(l.writes) <= set(l.args)
    ptrs, off = {}, 0
    for n, b in fn.buffers.items():
        ptrs[n] = 4096 + off
        off += int(np.prod([int(s.value) for s in b.shape] or [1])) * b.dtype.itemsize
    levels = launch_levels(launch_accesses(fn, ptrs, {}, fn.launches))
    assert sum(len(lv) for lv in levels) == len(fn.launches)
