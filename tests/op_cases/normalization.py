"""Op cases: normalisations (layer, RMS, group and batch norm)."""
from __future__ import annotations

import ember as em

from tests.op_cases.registry import F, S, case_adder

CASES: list = []
_add = case_adder(CASES)

# normalisations

_add("layer_norm_affine", {"x": S(3, 5, 13), "w": S(13), "b": S(13)},
     lambda x, w, b: em.layer_norm(x, 13, w, b), lambda x, w, b: F.layer_norm(x, (13,), w, b))
_add("layer_norm_plain_2d", {"x": S(3, 5, 7)}, lambda x: em.layer_norm(x, (5, 7), eps=1e-3),
     lambda x: F.layer_norm(x, (5, 7), eps=1e-3))
_add("layer_norm_weight_only_2d", {"x": S(2, 3, 5), "w": S(3, 5)}, lambda x, w: em.layer_norm(x, (3, 5), w),
     lambda x, w: F.layer_norm(x, (3, 5), w))
_add("rms_norm_weight", {"x": S(3, 5, 13), "w": S(13)}, lambda x, w: em.rms_norm(x, 13, w, eps=1e-6),
     lambda x, w: F.rms_norm(x, (13,), w, eps=1e-6))
_add("rms_norm_default_eps_2d", {"x": S(3, 5, 7)}, lambda x: em.rms_norm(x, (5, 7)),
     lambda x: F.rms_norm(x, (5, 7)))
_add("group_norm_affine", {"x": S(2, 6, 5, 3), "w": S(6), "b": S(6)},
     lambda x, w, b: em.group_norm(x, 3, w, b), lambda x, w, b: F.group_norm(x, 3, w, b))
_add("group_norm_1d_plain", {"x": S(3, 4, 7)}, lambda x: em.group_norm(x, 2, eps=1e-3),
     lambda x: F.group_norm(x, 2, eps=1e-3))
_add("group_norm_one_group", {"x": S(2, 5, 3, 3)}, lambda x: em.group_norm(x, 1), lambda x: F.group_norm(x, 1))
_add("batch_norm_inference", {"x": S(3, 5, 7), "rm": S(5), "rv": S(5, kind="positive"), "w": S(5), "b": S(5)},
     lambda x, rm, rv, w, b: em.batch_norm(x, rm, rv, w, b),
     lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b))
_add("batch_norm_training", {"x": S(3, 5, 4, 3), "w": S(5), "b": S(5)},
     lambda x, w, b: em.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True))
_add("batch_norm_training_2d_noaffine", {"x": S(7, 5)},
     lambda x: em.batch_norm(x, None, None, training=True, eps=1e-3),
     lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3))


def _t_bn_stats(x, rm, rv, w, b):
    rm, rv = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    return y, rm, rv


_add("batch_norm_training_running_stats", {"x": S(3, 5, 7), "rm": S(5), "rv": S(5, kind="positive"), "w": S(5),
                                           "b": S(5)},
     lambda x, rm, rv, w, b: em.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, return_stats=True),
     _t_bn_stats)
