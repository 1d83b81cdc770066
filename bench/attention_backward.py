"""The attention backward on the GPU (issue 20, item 4): Ember's gradient of SDPA (autograd's graph of
the primitives, lowered by the default pipeline) against torch's SDPA backward (its flash backend
and its default), bf16, causal, same run. Ember's time is its program's graph replay computing
dq, dk, dv from q, k, v and dO (the forward recomputed inside, as torch's backward does not: torch's
figure is the backward call alone, after a forward; `ember_forward_backward_us`: o and the
gradients from one program, against torch's forward + backward). Rates are the causal backward's useful FLOPs
(2.5 x the forward's 4·B·H·L²·D / 2) per second. Errors against a float32 torch backward.

    python bench/attention_backward.py --out bench/results/attention-backward-DATE.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

import ember as em  # noqa: E402

SHAPES = [(4, 16, 512, 64), (4, 16, 1024, 64), (2, 16, 2048, 128)]


def run(B, H, L, D) -> dict:
    import torch
    import torch.nn.functional as F

    from contractions import graph_timed
    BF = "bfloat16"
    q, k, v, do = (em.input(n, (B, H, L, D), BF) for n in ("q", "k", "v", "do"))
    o = em.scaled_dot_product_attention(q, k, v, is_causal=True)
    loss = (o.cast("float32") * do.cast("float32")).sum()
    grads = em.grad(loss, [q, k, v])
    t0 = time.time()
    prog = em.compile(grads, device="cuda")
    build_s = time.time() - t0
    g = torch.Generator(device="cuda").manual_seed(0)
    ins = {n: torch.randn(B, H, L, D, generator=g, device="cuda").to(torch.bfloat16) for n in ("q", "k", "v", "do")}
    outs = prog(**ins)
    us = prog.benchmark(reps=5, **ins)
    # torch: the backward call alone (a forward first), flash backend and default
    tq, tk, tv = (ins[n].clone().requires_grad_(True) for n in ("q", "k", "v"))

    def fwd_bwd(backend):
        with torch.nn.attention.sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
        return out

    res = {"shape": [B, H, L, D], "ember_us": us, "ember_build_s": build_s, "kernels": len(prog.launches)}
    # forward and backward in one program (as a training step has them: o and the gradients), the
    # protocol of torch's forward + backward figure
    both_prog = em.compile((o, *grads), device="cuda")
    res["ember_forward_backward_us"] = both_prog.benchmark(reps=5, **ins)
    res["forward_backward_kernels"] = len(both_prog.launches)
    for name, backend in (("sdpa_flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION),
                          ("sdpa_cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION)):
        try:
            out = fwd_bwd(backend)
            bw = graph_timed(lambda: torch.autograd.grad(out, (tq, tk, tv), ins["do"], retain_graph=True))
            both = graph_timed(lambda: torch.autograd.grad(fwd_bwd(backend), (tq, tk, tv), ins["do"]))
            res[name] = {"backward_us": bw, "forward_backward_us": both}
        except Exception as e:  # noqa: BLE001 - a backend this build lacks is reported
            res[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    fq, fk, fv = (ins[n].float().requires_grad_(True) for n in ("q", "k", "v"))
    ref = torch.autograd.grad(F.scaled_dot_product_attention(fq, fk, fv, is_causal=True), (fq, fk, fv), ins["do"].float())
    res["max_rel_err"] = max(float((o_.float() - r).abs().max() / r.abs().max()) for o_, r in zip(outs, ref))
    flops = 2.5 * 4 * B * H * L * L * D / 2
    res["ember_tflops"] = flops / us / 1e6
    for name in ("sdpa_flash", "sdpa_cudnn"):
        if "backward_us" in res[name]:
            res[name]["backward_tflops"] = flops / res[name]["backward_us"] / 1e6
    print(json.dumps(res), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch
    rows = []
    for shape in SHAPES:
        try:
            rows.append(run(*shape))
        except Exception as e:  # noqa: BLE001 - a shape that fails (memory) is reported
            rows.append({"shape": list(shape), "error": f"{type(e).__name__}: {str(e)[:300]}"})
            print(rows[-1], flush=True)
        if args.out:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
