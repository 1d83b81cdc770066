"""Which whole-chunk conv gathers the im2col copy takes (codegen/cuda_wgmma_im2col.py), CPU only:
ResNet-50 in bf16 and the project KernelBench problems with convs, lowered for the H100 at PyTorch's
precision; per model the gathers, how many become im2col copies, and why the others do not.

    python bench/im2col_survey.py
"""
import glob
import importlib.util
import sys

import torch

sys.path.insert(0, "bench")
import gpu_models as gm  # noqa: E402

from ember.backends.target import get_target  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen.cuda_wgmma_feed import GatherOperand, wgmma_plan  # noqa: E402
from ember.codegen.cuda_wgmma_im2col import im2col_operand  # noqa: E402
from ember.frontends.importer import export, import_graph  # noqa: E402
from ember.kernel.lower import lower  # noqa: E402

TARGET = get_target("h100")


def report(name, model, ins):
    with torch.no_grad():
        ig = import_graph(export(model, ins), precision="torch")
    n = ok = 0
    whys: dict = {}
    for k, _ in lower([x.node for x in ig.outputs if hasattr(x, "node")], target=TARGET).kernels:
        g = cg.contraction_of(cg.canonical(k))
        plan = None if g is None else wgmma_plan(g)
        if plan is None or isinstance(plan, str):
            continue
        for p in plan[1:]:
            if isinstance(p, GatherOperand) and p.vector is not None:
                n += 1
                r = im2col_operand(g, p, 32 if plan[0] in ("tf32", "tf32x3") else 64, {b.name: int(b.size) for b in k.buffers})
                if isinstance(r, str):
                    whys[r] = whys.get(r, 0) + 1
                else:
                    ok += 1
    print(f"{name}: whole-chunk gathers {n}, im2col {ok}", whys or "", flush=True)


def main():
    m, _, _ = gm.resnet50()
    report("resnet50 bf16 b32", m.to(torch.bfloat16), (torch.randn(32, 3, 224, 224).to(torch.bfloat16),))
    files = sorted(glob.glob("kernelbench/level*/*conv*.py")) + [
        "kernelbench/level3/03_resnet_basic_blocks.py", "kernelbench/level3/04_mobilenetv2_blocks.py",
        "kernelbench/level3/08_vgg_small.py"]
    for f in files:
        spec = importlib.util.spec_from_file_location("problem", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        report(f.split("/")[-1][:-3], mod.Model(*mod.get_init_inputs()).eval(), tuple(mod.get_inputs()))


if __name__ == "__main__":
    main()
