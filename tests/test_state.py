"""State writes (em.state_write): a program storing new rows into an input in place, as a KV cache
step does, with the filled length a named dimension bound per call (Program.run(..., dims=))."""
import math

import numpy as np
import pytest

import ember as em
from ember import symbolic as sm

B, H, S, D = 2, 3, 19, 8


def _attention_step(T, P="P", device="cpu", bounds=None):
    """q attends to the cache's first P rows plus T new ones, which the program writes at P."""
    kc, vc = em.input("kc", (B, H, S, D), em.float32), em.input("vc", (B, H, S, D), em.float32)
    q, x = em.input("q", (B, H, T, D), em.float32), em.input("x", (B, H, T, D), em.float32)
    wk = em.state_write(kc, (x * 2.0).exp() * 0.1, 2, P)
    wv = em.state_write(vc, x + 1.0, 2, P)
    n = sm.sym(P) + sm.sym(T)
    keys, vals = em.narrow_to(wk.updated, 2, n), em.narrow_to(wv.updated, 2, n)
    o = ((q @ keys.transpose(-1, -2)) * (1 / math.sqrt(D))).softmax(-1) @ vals
    return em.compile(o, device=device, writes=[wk, wv], dim_bounds=bounds)


def _ref_step(q, x, ref_k, ref_v, pos):
    T = q.shape[2]
    ref_k[:, :, pos:pos + T] = np.exp(x.astype(np.float64) * 2) * 0.1
    ref_v[:, :, pos:pos + T] = x + 1.0
    k, v = ref_k[:, :, :pos + T], ref_v[:, :, :pos + T]
    s = q.astype(np.float64) @ k.swapaxes(-1, -2) / math.sqrt(D)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("seed", [0, 1])
def test_prefill_then_steps_write_in_place(seed):
    rng = np.random.default_rng(seed)
    prog = _attention_step("T")
    assert prog.state_inputs == ["kc", "vc"] and set(prog.dims) == {"P", "T"}
    kc, vc = np.zeros((B, H, S, D), np.float32), np.zeros((B, H, S, D), np.float32)
    ref_k, ref_v = np.zeros((B, H, S, D)), np.zeros((B, H, S, D))
    pos = 0
    for T in (5, 1, 1, 4, 1):
        q = rng.standard_normal((B, H, T, D)).astype(np.float32)
        x = rng.standard_normal((B, H, T, D)).astype(np.float32)
        want = _ref_step(q, x, ref_k, ref_v, pos)
        got = prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": pos})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(kc, ref_k, rtol=1e-5, atol=1e-6)  # the caller's arrays, updated
        np.testing.assert_allclose(vc, ref_v, rtol=1e-6, atol=1e-6)
        pos += T


def test_write_kernel_covers_only_the_new_rows():
    prog = _attention_step(1)
    ir = prog.meta["kernels_ir"]
    writes = [blk for blk in ir.split("kernel ")[1:] if "where" in blk.split("(")[0]]
    assert len(writes) == 2
    for blk in writes:  # one loop over the new row (T = 1: none), not over the cache's 19 rows
        body = blk.split("\n", 1)[1]
        assert "parallel(19)" not in body and "where(" not in body, blk


def test_updated_state_matches_the_reference():
    st = em.input("s", (4, 6), em.float32)
    v = em.input("v", (4, "T"), em.float32)
    w = em.state_write(st, v * 3.0, 1, "P")
    s0 = np.arange(24, dtype=np.float32).reshape(4, 6)
    val = np.ones((4, 2), np.float32)
    want = s0.copy()
    want[:, 3:5] = 3.0
    np.testing.assert_array_equal(em.reference(w.updated, {"P": 3}, s=s0, v=val), want)
    prog = em.compile(w.updated + 0.0, device="cpu", writes=[w])  # (x * 1 is x itself)
    s1 = s0.copy()
    np.testing.assert_array_equal(prog.run({"s": s1, "v": val}, dims={"P": 3}), want)
    np.testing.assert_array_equal(s1, want)


def test_bad_calls_are_one_line_errors():
    prog = _attention_step(1)
    kc, vc = np.zeros((B, H, S, D), np.float32), np.zeros((B, H, S, D), np.float32)
    q = x = np.zeros((B, H, 1, D), np.float32)
    with pytest.raises(em.InputError, match="outside its extent 19"):
        prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": 19})
    with pytest.raises(em.InputError, match="not fixed by the inputs"):
        prog.run({"kc": kc, "vc": vc, "q": q, "x": x})
    with pytest.raises(em.InputError, match="not a dimension"):
        prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": 1, "Q": 2})
    with pytest.raises(em.InputError, match="written in place"):  # an int cache would be converted: a copy
        prog.run({"kc": kc.astype(np.int32), "vc": vc, "q": q, "x": x}, dims={"P": 1})
    with pytest.raises(em.InputError, match="written in place"):
        prog.run({"kc": kc[:, :, ::1].T.copy().T, "vc": vc, "q": q, "x": x}, dims={"P": 1})


def test_compile_refuses_bad_writes():
    st = em.input("s", (4, 6), em.float32)
    v = em.input("v", (4, 2), em.float32)
    with pytest.raises(em.ShapeError, match="graph input"):
        em.state_write(v * 2.0, v, 1, 0)
    with pytest.raises(em.ShapeError, match="outside axis"):
        em.state_write(st, em.input("u", (3, 2), em.float32), 1, 0)
    w = em.state_write(st, v, 1, 2)
    with pytest.raises(ValueError, match="search"):
        em.compile(w.updated.sum(), device="cpu", writes=[w], search="fast")
    with pytest.raises(TypeError, match="state_write"):
        em.compile(w.updated.sum(), device="cpu", writes=[w.updated])


def test_program_with_writes_saves_and_loads(tmp_path):
    prog = _attention_step(1)
    prog.save(tmp_path / "p.ember")
    back = em.Program.load(tmp_path / "p.ember")
    assert back.state_inputs == ["kc", "vc"]
    kc, vc = np.zeros((B, H, S, D), np.float32), np.zeros((B, H, S, D), np.float32)
    x = np.ones((B, H, 1, D), np.float32)
    back.run({"kc": kc, "vc": vc, "q": x, "x": x}, dims={"P": 7})
    np.testing.assert_allclose(vc[:, :, 7], 2.0)
    assert not vc[:, :, 8:].any() and not vc[:, :, :7].any()


@pytest.mark.cuda
def test_state_writes_on_cuda():
    rng = np.random.default_rng(3)
    prog = _attention_step("T", device="cuda")
    kc, vc = np.zeros((B, H, S, D), np.float32), np.zeros((B, H, S, D), np.float32)
    ref_k, ref_v = np.zeros((B, H, S, D)), np.zeros((B, H, S, D))
    pos = 0
    for T in (6, 1, 1, 2):
        q = rng.standard_normal((B, H, T, D)).astype(np.float32)
        x = rng.standard_normal((B, H, T, D)).astype(np.float32)
        want = _ref_step(q, x, ref_k, ref_v, pos)
        got = prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": pos})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(kc, ref_k, rtol=1e-5, atol=1e-6)
        pos += T


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_bounded_dims_share_one_plan(device):
    """dim_bounds: one memory plan (and on the GPU one CUDA graph, its P-reading nodes updated per
    call) for every position; numpy and torch inputs."""
    rng = np.random.default_rng(5)
    prog = _attention_step(1, device=device, bounds={"P": S - 1})
    assert prog.dim_bounds == {"P": S - 1}
    kc, vc = np.zeros((B, H, S, D), np.float32), np.zeros((B, H, S, D), np.float32)
    ref_k, ref_v = np.zeros((B, H, S, D)), np.zeros((B, H, S, D))
    torch = pytest.importorskip("torch") if device == "cuda" else None
    if torch is not None:
        tk, tv = torch.zeros(kc.shape, device="cuda"), torch.zeros(vc.shape, device="cuda")
    for pos in range(S):
        q = rng.standard_normal((B, H, 1, D)).astype(np.float32)
        x = rng.standard_normal((B, H, 1, D)).astype(np.float32)
        want = _ref_step(q, x, ref_k, ref_v, pos)
        if torch is not None and pos % 2:  # device arrays: the torch path, written in place on the GPU
            got = prog.run({"kc": tk, "vc": tv, "q": torch.from_numpy(q).cuda(), "x": torch.from_numpy(x).cuda()},
                           dims={"P": pos}).cpu().numpy()
            kc[:], vc[:] = tk.cpu().numpy(), tv.cpu().numpy()
        else:
            got = prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": pos})
            if torch is not None:
                tk.copy_(torch.from_numpy(kc)), tv.copy_(torch.from_numpy(vc))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(kc, ref_k, rtol=1e-5, atol=1e-6)
    assert len(prog._plans) == 1
    with pytest.raises(em.InputError, match="exceeds its bound"):
        prog.run({"kc": kc, "vc": vc, "q": q, "x": x}, dims={"P": S})
