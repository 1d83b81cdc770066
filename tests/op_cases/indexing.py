"""Op cases: gathers, masks and movement ops."""
from __future__ import annotations

import ember as em
import numpy as np

from tests.op_cases.registry import F, S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

# gathers and masks

_add("embedding", {"idx": S(3, 5, dtype="int32", kind="int:0:11"), "table": S(11, 7)},
     lambda idx, table: em.embedding(idx, table), lambda idx, table: F.embedding(idx, table))
_add("gather_axis0", {"x": S(5, 7), "idx": S(3, 7, dtype="int32", kind="int:0:5")},
     lambda x, idx: x.gather(0, idx), lambda x, idx: x.gather(0, idx.long()))
_add("gather_axisneg1", {"x": S(3, 5, 7), "idx": S(3, 5, 4, dtype="int32", kind="int:0:7")},
     lambda x, idx: x.gather(-1, idx), lambda x, idx: x.gather(-1, idx.long()))
_add("gather_smaller_index", {"x": S(5, 7), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x.gather(1, idx), lambda x, idx: x.gather(1, idx.long()))
_add("index_select_axis1", {"x": S(3, 5, 7), "idx": S(4, dtype="int32", kind="int:0:5")},
     lambda x, idx: x.index_select(1, idx), lambda x, idx: x.index_select(1, idx))
_add("index_select_negative", {"x": S(5, 7), "idx": S(6, dtype="int32", kind="int:-7:7")},
     lambda x, idx: x.index_select(-1, idx), lambda x, idx: x.index_select(-1, idx % 7))
_add("take", {"x": S(3, 5), "idx": S(2, 7, dtype="int32", kind="int:0:15")},
     lambda x, idx: x.take(idx), lambda x, idx: torch.take(x, idx.long()))
_add("take_negative", {"x": S(3, 5), "idx": S(9, dtype="int32", kind="int:-15:15")},
     lambda x, idx: x.take(idx), lambda x, idx: torch.take(x, idx.long()))
_add("one_hot", {"idx": S(3, 5, dtype="int32", kind="int:0:7")},
     lambda idx: em.one_hot(idx, 7, dtype=em.int32), lambda idx: F.one_hot(idx.long(), 7), grad=False)
_add("one_hot_float", {"idx": S(13, dtype="int32", kind="int:0:4")},
     lambda idx: em.one_hot(idx, 4), lambda idx: F.one_hot(idx.long(), 4).float(), grad=False)
_add("tril", {"x": S(3, 5, 7)}, lambda x: x.tril(), lambda x: x.tril())
_add("tril_k", {"x": S(5, 7)}, lambda x: (x.tril(2), x.tril(-1)), lambda x: (x.tril(2), x.tril(-1)))
_add("triu", {"x": S(3, 7, 5)}, lambda x: x.triu(), lambda x: x.triu())
_add("triu_k", {"x": S(5, 7)}, lambda x: (x.triu(1), x.triu(-2)), lambda x: (x.triu(1), x.triu(-2)))
_add("tril_triu_bool_int", {"b": S(4, 5, dtype="bool", kind="bool"), "i": S(5, 4, dtype="int32", kind="int:-5:5")},
     lambda b, i: (b.tril(), b.triu(1), i.tril(-1), i.triu()), lambda b, i: (b.tril(), b.triu(1), i.tril(-1), i.triu()),
     grad=False)
_add("index_list_and_array", {"x": S(7, 5)}, lambda x: (x[[0, 2, -1]], x[:, np.array([4, 0, 4])], x[[[1], [3]]]),
     lambda x: (x[[0, 2, -1]], x[:, torch.tensor([4, 0, 4])], x[torch.tensor([[1], [3]])]))
_add("masked_fill", {"x": S(5, 7), "m": S(7, dtype="bool", kind="bool")},
     lambda x, m: x.masked_fill(m, -2.5), lambda x, m: x.masked_fill(m, -2.5))
_add("index_tensor_first", {"x": S(7, 5), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x[idx], lambda x, idx: x[idx.long()])
_add("index_tensor_second", {"x": S(3, 7, 5), "idx": S(4, dtype="int32", kind="int:-7:7")},
     lambda x, idx: x[:, idx], lambda x, idx: x[:, idx.long()])
_add("index_tensor_ellipsis", {"x": S(3, 5, 7), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x[..., idx], lambda x, idx: x[..., idx.long()])
_add("index_tensor_with_slices", {"x": S(5, 7, 3), "idx": S(4, dtype="int32", kind="int:-3:3")},
     lambda x, idx: x[1:4, ..., idx], lambda x, idx: x[1:4, ..., idx.long()])
_add("index_tensor_step_slice", {"x": S(7, 5), "idx": S(2, 2, dtype="int32", kind="int:0:5")},
     lambda x, idx: x[::2, idx], lambda x, idx: x[::2, idx.long()])

# ================================================================================================
# movement

_add("concat_axis1", {"a": S(3, 2, 5), "b": S(3, 7, 5), "c": S(3, 1, 5)},
     lambda a, b, c: em.concat([a, b, c], 1), lambda a, b, c: torch.cat([a, b, c], 1))
_add("concat_axisneg1", {"a": S(3, 5), "b": S(3, 2)}, lambda a, b: em.cat([a, b], -1),
     lambda a, b: torch.cat([a, b], -1))
_add("stack_axis0", {"a": S(3, 5), "b": S(3, 5)}, lambda a, b: em.stack([a, b]), lambda a, b: torch.stack([a, b]))
_add("stack_axisneg1", {"a": S(3, 5), "b": S(3, 5), "c": S(3, 5)},
     lambda a, b, c: em.stack([a, b, c], -1), lambda a, b, c: torch.stack([a, b, c], -1))
_add("split_size", {"x": S(7, 3)}, lambda x: tuple(x.split(3, 0)), lambda x: tuple(x.split(3, 0)))
_add("split_sizes", {"x": S(3, 13)}, lambda x: tuple(x.split([2, 5, 6], 1)), lambda x: tuple(x.split([2, 5, 6], 1)))
_add("chunk", {"x": S(3, 11)}, lambda x: tuple(x.chunk(3, -1)), lambda x: tuple(x.chunk(3, -1)))
_add("unbind", {"x": S(3, 5, 2)}, lambda x: tuple(x.unbind(1)), lambda x: tuple(x.unbind(1)))
_add("reshape_infer", {"x": S(3, 5, 7)}, lambda x: x.reshape(5, -1), lambda x: x.reshape(5, -1))
_add("reshape_of_permute", {"x": S(3, 5, 7)}, lambda x: x.permute(2, 0, 1).reshape(7, 15),
     lambda x: x.permute(2, 0, 1).reshape(7, 15))
_add("permute", {"x": S(2, 3, 5, 7)}, lambda x: x.permute(3, 1, 0, 2), lambda x: x.permute(3, 1, 0, 2))
_add("transpose", {"x": S(2, 3, 5)}, lambda x: x.transpose(0, -1), lambda x: x.transpose(0, -1))
_add("transpose_T", {"x": S(3, 5)}, lambda x: x.T + 0.0, lambda x: x.T + 0.0)
_add("expand", {"x": S(3, 1, 5)}, lambda x: x.expand(2, 3, 7, 5), lambda x: x.expand(2, 3, 7, 5))
_add("expand_minus1", {"x": S(3, 1)}, lambda x: x.expand(-1, 4), lambda x: x.expand(-1, 4))
_add("unsqueeze_squeeze", {"x": S(3, 1, 5)},
     lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x.squeeze(1), x.squeeze(0)),
     lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x.squeeze(1), x.squeeze(0)))
_add("flatten", {"x": S(2, 3, 5, 7)}, lambda x: (x.flatten(), x.flatten(1), x.flatten(1, 2)),
     lambda x: (x.flatten(), x.flatten(1), x.flatten(1, 2)))
_add("flip", {"x": S(3, 5, 7)}, lambda x: (x.flip(0), x.flip((1, -1))), lambda x: (x.flip(0), x.flip((1, -1))))
_add("pad_zero", {"x": S(3, 5, 7)}, lambda x: em.pad(x, (1, 2, 0, 3)), lambda x: F.pad(x, (1, 2, 0, 3)))
_add("pad_value", {"x": S(3, 5)}, lambda x: em.pad(x, (2, 1, 1, 1), value=-1.5),
     lambda x: F.pad(x, (2, 1, 1, 1), value=-1.5))
_add("pad_negative", {"x": S(3, 5, 7)}, lambda x: em.pad(x, (-2, 1, 1, -1)), lambda x: F.pad(x, (-2, 1, 1, -1)))
_add("pad_negative_value", {"x": S(5, 7)}, lambda x: em.pad(x, (1, -3, -1, 2), value=3.0),
     lambda x: F.pad(x, (1, -3, -1, 2), value=3.0))
_add("slice_steps", {"x": S(7, 13)}, lambda x: x[1:6:2, ::3], lambda x: x[1:6:2, ::3])
_add("slice_negative_bounds", {"x": S(7, 13)}, lambda x: x[-5:-1, 2:-3], lambda x: x[-5:-1, 2:-3])
_add("slice_int_and_none", {"x": S(3, 5, 7)}, lambda x: x[1, None, :, -2], lambda x: x[1, None, :, -2])
_add("slice_ellipsis", {"x": S(3, 5, 7)}, lambda x: x[..., 1:4], lambda x: x[..., 1:4])
# torch rejects negative steps; the flipped view is the same thing
_add("slice_negative_step", {"x": S(7, 13)}, lambda x: x[::-1, 11:2:-3],
     lambda x: x.flip((0, 1))[:, 1:10:3])
_add("slice_negative_step_full", {"x": S(13,)}, lambda x: x[::-2], lambda x: x.flip(0)[::2])
_add("repeat", {"x": S(3, 5)}, lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3))
_add("roll", {"x": S(3, 5, 7)}, lambda x: (x.roll(2, 1), x.roll((-3, 9), (0, 2))),
     lambda x: (x.roll(2, 1), x.roll((-3, 9), (0, 2))))
_add("narrow_negative_start", {"x": S(3, 7)}, lambda x: (x.narrow(1, -3, 2), x.narrow(-1, -7, 7)),
     lambda x: (x.narrow(1, -3, 2), x.narrow(-1, -7, 7)))
_add("narrow_movedim", {"x": S(3, 5, 7)}, lambda x: x.narrow(2, 1, 4).movedim(0, -1),
     lambda x: x.narrow(2, 1, 4).movedim(0, -1))
