"""Op cases: losses."""
from __future__ import annotations

import ember as em

from tests.op_cases.registry import F, S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

# losses

_add("mse_loss_mean", {"p": S(5, 7), "t": S(5, 7)}, lambda p, t: em.mse_loss(p, t), lambda p, t: F.mse_loss(p, t))
_add("mse_loss_sum_none", {"p": S(3, 5), "t": S(3, 5)},
     lambda p, t: (em.mse_loss(p, t, reduction="sum"), em.mse_loss(p, t, reduction="none")),
     lambda p, t: (F.mse_loss(p, t, reduction="sum"), F.mse_loss(p, t, reduction="none")))
_add("cross_entropy_indices", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x * 3, t), lambda x, t: F.cross_entropy(x * 3, t.long()))
_add("cross_entropy_spatial_sum", {"x": S(2, 5, 3, 4), "t": S(2, 3, 4, dtype="int32", kind="int:0:5")},
     lambda x, t: em.cross_entropy(x, t, reduction="sum"),
     lambda x, t: F.cross_entropy(x, t.long(), reduction="sum"))
_add("cross_entropy_unbatched", {"x": S(7), "t": S(dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x, t), lambda x, t: F.cross_entropy(x, t.long()))
_add("cross_entropy_probs", {"x": S(5, 7), "t": S(5, 7)},
     lambda x, t: em.cross_entropy(x, t.softmax(1)), lambda x, t: F.cross_entropy(x, t.softmax(1)))
_add("cross_entropy_label_smoothing", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x, t, label_smoothing=0.15, reduction="none"),
     lambda x, t: F.cross_entropy(x, t.long(), label_smoothing=0.15, reduction="none"))
_add("cross_entropy_probs_smoothing", {"x": S(3, 7), "t": S(3, 7)},
     lambda x, t: em.cross_entropy(x, t.softmax(-1), label_smoothing=0.2),
     lambda x, t: F.cross_entropy(x, t.softmax(-1), label_smoothing=0.2))
_add("cross_entropy_ignore_index", {"x": S(7, 5), "t": S(7, dtype="int32", kind="int:-1:5")},
     lambda x, t: (em.cross_entropy(x, t, ignore_index=-1), em.cross_entropy(x, t, reduction="none", ignore_index=-1),
                   em.cross_entropy(x, t, label_smoothing=0.1, ignore_index=-1)),
     lambda x, t: (F.cross_entropy(x, t.long(), ignore_index=-1),
                   F.cross_entropy(x, t.long(), reduction="none", ignore_index=-1),
                   F.cross_entropy(x, t.long(), label_smoothing=0.1, ignore_index=-1)))
_add("cross_entropy_default_ignore_minus100", {"x": S(2, 5, 3), "t": S(2, 3, dtype="int32", kind="int:0:5")},
     lambda x, t: em.cross_entropy(x, em.where(t == 0, -100, t)),
     lambda x, t: F.cross_entropy(x, torch.where(t == 0, -100, t).long()))
_add("nll_loss_ignore_class", {"x": S(7, 5), "t": S(7, dtype="int32", kind="int:0:5")},
     lambda x, t: (em.nll_loss(x, t, ignore_index=2), em.nll_loss(x, t, reduction="sum", ignore_index=2)),
     lambda x, t: (F.nll_loss(x, t.long(), ignore_index=2), F.nll_loss(x, t.long(), reduction="sum", ignore_index=2)))
_add("nll_loss", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.nll_loss(x.log_softmax(1), t), lambda x, t: F.nll_loss(x.log_softmax(1), t.long()))
_add("nll_loss_spatial_none", {"x": S(2, 5, 3), "t": S(2, 3, dtype="int32", kind="int:0:5")},
     lambda x, t: em.nll_loss(x, t, reduction="none"), lambda x, t: F.nll_loss(x, t.long(), reduction="none"))
_add("bce_with_logits", {"x": S(5, 7), "t": S(5, 7)},
     lambda x, t: em.binary_cross_entropy_with_logits(x * 4, t.sigmoid()),
     lambda x, t: F.binary_cross_entropy_with_logits(x * 4, t.sigmoid()))
_add("bce_with_logits_sum_large", {"x": S(13), "t": S(13)},
     lambda x, t: em.binary_cross_entropy_with_logits(x * 50, t.sigmoid(), reduction="sum"),
     lambda x, t: F.binary_cross_entropy_with_logits(x * 50, t.sigmoid(), reduction="sum"))
