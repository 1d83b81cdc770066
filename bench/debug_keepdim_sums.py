"""Issue 18 item 9 at its reported size: Linear(8192, 8192) on (1024, 8192), then sum(keepdim), max,
mean, logsumexp, logsumexp, compiled with the default lowering and checked against torch in float64."""
import json
import sys

import ember as em
import torch


class Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8192, 8192)

    def forward(self, x):
        x = self.linear(x)
        x = torch.sum(x, dim=1, keepdim=True)
        x = torch.max(x, dim=1, keepdim=True)[0]
        x = torch.mean(x, dim=1, keepdim=True)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return torch.logsumexp(x, dim=1, keepdim=True)


def main():
    torch.manual_seed(0)
    m = Chain().cuda()
    x = torch.randn(1024, 8192, device="cuda")
    fn = em.from_torch(m, (x,), device="cuda")
    out = fn(x)
    ref = m.double()(x.double())
    err = (out.double() - ref).abs().max().item()
    res = {"max_abs_err": err, "max_abs_ref": ref.abs().max().item(), "device": torch.cuda.get_device_name()}
    print(json.dumps(res))
    sys.exit(0 if err <= 1e-3 * max(1.0, res["max_abs_ref"]) else 1)


if __name__ == "__main__":
    main()
