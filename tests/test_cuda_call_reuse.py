"""A repeated call from PyTorch writes the last call's outputs again only when the caller has dropped them
(backends/cuda_call.py): the test of "dropped" on the CPU, the reuse itself on the GPU."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember as em  # noqa: E402
from ember.backends.cuda_call import outputs_free  # noqa: E402


def _held():
    return (torch.randn(5), torch.randn(3, 4))


def _keep(o, how):
    return {"tensor": lambda: o, "view": lambda: o[1:], "detached": lambda: o.detach(),
            "dlpack": lambda: o.__dlpack__(), "storage": lambda: o.untyped_storage(),
            "in_list": lambda: [o], "numpy": lambda: o.numpy()}[how]()


@pytest.mark.parametrize("keep", ["tensor", "view", "detached", "dlpack", "storage", "in_list", "numpy"])
def test_any_reference_the_caller_keeps_makes_outputs_not_free(keep):
    outs = _held()
    assert outputs_free(outs)
    kept = _keep(outs[1], keep)
    assert not outputs_free(outs), keep
    del kept
    assert outputs_free(outs), keep


class _Affine(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2 + 1, x.sum(dim=1)


@pytest.mark.cuda
def test_cuda_reused_outputs_never_change_a_tensor_the_caller_holds():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(37, 129, generator=g).cuda()
    mod = _Affine()
    fn = em.from_torch(mod, (x,), device="cuda")
    for _ in range(4):  # the graph captured and the memo set up with outputs dropped each time
        out = fn(x)
        del out
    seen = []
    for i in range(6):
        x.copy_(torch.randn(37, 129, generator=g))
        want = [t.clone() for t in mod(x)]
        a, b = fn(x)
        torch.testing.assert_close(a, want[0])
        torch.testing.assert_close(b, want[1])
        if i % 3 == 0:
            seen.append((a, want[0]))  # held whole
        elif i % 3 == 1:
            seen.append((b[2:], want[1][2:]))  # only a view held
        del a, b
    torch.cuda.synchronize()
    for got, want in seen:
        torch.testing.assert_close(got, want)
    # dropped outputs are written again: the same memory, new values
    a, _ = fn(x)
    p = a.data_ptr()
    del a, _
    x.copy_(torch.randn(37, 129, generator=g))
    a, b = fn(x)
    assert a.data_ptr() == p
    torch.testing.assert_close(a, mod(x)[0])


class _ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


@pytest.mark.cuda
def test_cuda_general_path_reuse_keeps_buffers_and_outputs_right():
    """A training-mode BatchNorm takes the general call path (buffers fed and written back, one multi-tensor
    copy): called again and again with new contents at the same pointers, outputs and running statistics
    follow eager's, and an output the caller keeps is never overwritten."""
    g = torch.Generator().manual_seed(5)
    ref, mod = _ConvBN().cuda().train(), _ConvBN().cuda().train()
    mod.load_state_dict(ref.state_dict())
    x = torch.randn(4, 3, 17, 19, generator=g).cuda()
    fn = em.from_torch(mod, (x,), device="cuda")
    kept = []
    for i in range(6):
        x.copy_(torch.randn(4, 3, 17, 19, generator=g))
        with torch.backends.cudnn.flags(allow_tf32=False):  # (Ember keeps float32 accuracy by default)
            want = ref(x).detach().clone()
        got = fn(x)
        torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)
        if i % 2:
            kept.append((got, want))
        del got
    for got, want in kept:
        torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(mod.bn.running_mean, ref.bn.running_mean, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(mod.bn.running_var, ref.bn.running_var, rtol=1e-3, atol=1e-4)
    assert int(mod.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked) == 6
