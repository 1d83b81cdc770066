"""Op cases: contractions (matmul, linear, einsum), convolutions and pooling."""
from __future__ import annotations

import ember as em

from tests.op_cases.registry import F, S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

# contractions

_add("matmul_1d_1d", {"a": S(13), "b": S(13)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_1d_2d", {"a": S(7), "b": S(7, 5)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_1d", {"a": S(5, 7), "b": S(7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_k1", {"a": S(5, 1), "b": S(1, 3)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_37", {"a": S(13, 37), "b": S(37, 11)}, lambda a, b: a.matmul(b), lambda a, b: a.matmul(b))
_add("matmul_batched", {"a": S(3, 5, 7), "b": S(3, 7, 2)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_bcast_batch", {"a": S(2, 1, 5, 7), "b": S(3, 7, 4)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_batched", {"a": S(5, 7), "b": S(3, 7, 2)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_batched_1d", {"a": S(3, 5, 7), "b": S(7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_1d_batched", {"a": S(5), "b": S(3, 5, 7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("bmm", {"a": S(3, 5, 7), "b": S(3, 7, 2)}, lambda a, b: em.bmm(a, b), lambda a, b: torch.bmm(a, b))
_add("linear_bias", {"x": S(5, 7), "w": S(3, 7), "b": S(3)}, lambda x, w, b: em.linear(x, w, b),
     lambda x, w, b: F.linear(x, w, b))
_add("linear_nobias_3d", {"x": S(2, 5, 13), "w": S(6, 13)}, lambda x, w: em.linear(x, w), lambda x, w: F.linear(x, w))
_add("einsum_ij_jk", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: em.einsum("ij,jk->ik", a, b),
     lambda a, b: torch.einsum("ij,jk->ik", a, b))
_add("einsum_batched", {"a": S(2, 5, 7), "b": S(2, 7, 3)}, lambda a, b: em.einsum("bij,bjk->bik", a, b),
     lambda a, b: torch.einsum("bij,bjk->bik", a, b))
_add("einsum_ellipsis", {"a": S(2, 3, 5, 7), "b": S(3, 7, 4)}, lambda a, b: em.einsum("...ij,...jk->...ik", a, b),
     lambda a, b: torch.einsum("...ij,...jk->...ik", a, b))
_add("einsum_attention_scores", {"q": S(2, 3, 5, 4), "k": S(2, 3, 7, 4)},
     lambda q, k: em.einsum("bhqd,bhkd->bhqk", q, k), lambda q, k: torch.einsum("bhqd,bhkd->bhqk", q, k))
_add("einsum_outer", {"a": S(5), "b": S(7)}, lambda a, b: em.einsum("i,j->ij", a, b),
     lambda a, b: torch.einsum("i,j->ij", a, b))
_add("einsum_transpose", {"a": S(5, 7)}, lambda a: em.einsum("ij->ji", a), lambda a: torch.einsum("ij->ji", a))
_add("einsum_sum_all", {"a": S(5, 7)}, lambda a: em.einsum("ij->", a), lambda a: torch.einsum("ij->", a))
_add("einsum_implicit", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: em.einsum("ij,jk", a, b),
     lambda a, b: torch.einsum("ij,jk", a, b))
_add("einsum_three_operands", {"a": S(3, 5), "b": S(5, 7), "c": S(7, 2)},
     lambda a, b, c: em.einsum("ij,jk,kl->il", a, b, c), lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c))
_add("einsum_ellipsis_uppercase", {"a": S(2, 3, 4, 5), "b": S(5, 6)},
     lambda a, b: em.einsum("...Ab,bc->...Ac", a, b), lambda a, b: torch.einsum("...Ab,bc->...Ac", a, b))
_add("einsum_trace_diagonal", {"a": S(5, 5), "b": S(2, 3, 3)},
     lambda a, b: (em.einsum("ii->", a), em.einsum("ii->i", a), em.einsum("bii->bi", b), em.einsum("ii", a)),
     lambda a, b: (torch.einsum("ii->", a), torch.einsum("ii->i", a), torch.einsum("bii->bi", b), torch.einsum("ii", a)))
_add("einsum_repeated_with_contraction", {"a": S(2, 3), "b": S(3, 3), "c": S(3, 4, 3)},
     lambda a, b, c: (em.einsum("ij,jj->i", a, b), em.einsum("iji->j", c)),
     lambda a, b, c: (torch.einsum("ij,jj->i", a, b), torch.einsum("iji->j", c)))
_add("einsum_ellipsis_bcast", {"a": S(1, 3, 5), "b": S(2, 1, 5)}, lambda a, b: em.einsum("...i,...i->...", a, b),
     lambda a, b: torch.einsum("...i,...i->...", a, b))

# ================================================================================================
# convolutions and pooling

_add("conv1d_basic_bias", {"x": S(2, 3, 13), "w": S(5, 3, 3), "b": S(5)},
     lambda x, w, b: em.conv1d(x, w, b), lambda x, w, b: F.conv1d(x, w, b))
_add("conv1d_stride_pad_dil", {"x": S(2, 3, 13), "w": S(4, 3, 3)},
     lambda x, w: em.conv1d(x, w, stride=2, padding=2, dilation=2),
     lambda x, w: F.conv1d(x, w, stride=2, padding=2, dilation=2))
_add("conv1d_same_even_kernel", {"x": S(1, 2, 11), "w": S(3, 2, 4)},
     lambda x, w: em.conv1d(x, w, padding="same"), lambda x, w: F.conv1d(x, w, padding="same"))
_add("conv1d_groups", {"x": S(2, 6, 9), "w": S(9, 2, 3), "b": S(9)},
     lambda x, w, b: em.conv1d(x, w, b, groups=3, padding=1), lambda x, w, b: F.conv1d(x, w, b, groups=3, padding=1))
_add("conv2d_basic", {"x": S(2, 3, 7, 9), "w": S(5, 3, 3, 3), "b": S(5)},
     lambda x, w, b: em.conv2d(x, w, b), lambda x, w, b: F.conv2d(x, w, b))
_add("conv2d_stride_pad", {"x": S(1, 3, 11, 7), "w": S(4, 3, 3, 5)},
     lambda x, w: em.conv2d(x, w, stride=(2, 1), padding=(1, 2)),
     lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2)))
_add("conv2d_dilation", {"x": S(2, 2, 9, 11), "w": S(3, 2, 3, 3)},
     lambda x, w: em.conv2d(x, w, dilation=(2, 3), padding=1), lambda x, w: F.conv2d(x, w, dilation=(2, 3), padding=1))
_add("conv2d_same_dilated", {"x": S(1, 3, 7, 6), "w": S(2, 3, 2, 3)},
     lambda x, w: em.conv2d(x, w, padding="same", dilation=2), lambda x, w: F.conv2d(x, w, padding="same", dilation=2))
_add("conv2d_groups", {"x": S(2, 4, 7, 5), "w": S(6, 2, 3, 3), "b": S(6)},
     lambda x, w, b: em.conv2d(x, w, b, stride=2, padding=1, groups=2),
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2))
_add("conv2d_depthwise", {"x": S(2, 5, 9, 7), "w": S(5, 1, 3, 3)},
     lambda x, w: em.conv2d(x, w, padding=1, groups=5), lambda x, w: F.conv2d(x, w, padding=1, groups=5))
_add("conv2d_1x1", {"x": S(3, 7, 5, 5), "w": S(3, 7, 1, 1)}, lambda x, w: em.conv2d(x, w), lambda x, w: F.conv2d(x, w))
_add("conv2d_valid_str", {"x": S(1, 2, 6, 7), "w": S(2, 2, 3, 2)},
     lambda x, w: em.conv2d(x, w, padding="valid"), lambda x, w: F.conv2d(x, w, padding="valid"))
_add("conv3d", {"x": S(1, 2, 5, 6, 7), "w": S(3, 2, 3, 2, 3), "b": S(3)},
     lambda x, w, b: em.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1)),
     lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1)))
_add("conv3d_dil_groups", {"x": S(1, 4, 5, 5, 6), "w": S(2, 2, 2, 2, 2)},
     lambda x, w: em.conv3d(x, w, dilation=2, groups=2), lambda x, w: F.conv3d(x, w, dilation=2, groups=2))
_add("conv_transpose2d_basic", {"x": S(2, 3, 5, 4), "w": S(3, 2, 3, 3), "b": S(2)},
     lambda x, w, b: em.conv_transpose2d(x, w, b), lambda x, w, b: F.conv_transpose2d(x, w, b))
_add("conv_transpose2d_stride_pad_outpad", {"x": S(1, 3, 5, 4), "w": S(3, 4, 3, 3)},
     lambda x, w: em.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
     lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1))
_add("conv_transpose2d_groups_dil", {"x": S(2, 4, 5, 3), "w": S(4, 3, 2, 3), "b": S(6)},
     lambda x, w, b: em.conv_transpose2d(x, w, b, stride=(2, 3), padding=(0, 1), output_padding=(1, 0), groups=2,
                                         dilation=(1, 2)),
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(0, 1), output_padding=(1, 0), groups=2,
                                        dilation=(1, 2)))
_add("conv_transpose1d", {"x": S(2, 3, 7), "w": S(3, 5, 4)},
     lambda x, w: em.conv_transpose1d(x, w, stride=3, padding=2), lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2))

_add("max_pool1d", {"x": S(2, 3, 13)}, lambda x: em.max_pool1d(x, 3, 2, 1), lambda x: F.max_pool1d(x, 3, 2, 1))
_add("max_pool1d_ceil_dil", {"x": S(2, 3, 13)}, lambda x: em.max_pool1d(x, 2, 3, 1, dilation=2, ceil_mode=True),
     lambda x: F.max_pool1d(x, 2, 3, 1, dilation=2, ceil_mode=True))
_add("max_pool2d", {"x": S(2, 3, 7, 9)}, lambda x: em.max_pool2d(x, 2), lambda x: F.max_pool2d(x, 2))
_add("max_pool2d_pad_stride", {"x": S(1, 2, 9, 7)}, lambda x: em.max_pool2d(x, (3, 2), (2, 1), (1, 1)),
     lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 1)))
_add("max_pool2d_ceil", {"x": S(1, 3, 8, 7)}, lambda x: em.max_pool2d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True))
_add("max_pool2d_3d_input", {"x": S(3, 7, 5)}, lambda x: em.max_pool2d(x, 2, 1), lambda x: F.max_pool2d(x, 2, 1))
_add("max_pool2d_int", {"x": S(1, 2, 5, 5, dtype="int32", kind="int:-50:50")},
     lambda x: em.max_pool2d(x, 3, 2, 1), lambda x: F.max_pool2d(x.double(), 3, 2, 1).int(), grad=False,
     upcast=False)
_add("avg_pool1d", {"x": S(2, 3, 13)}, lambda x: em.avg_pool1d(x, 3, 2, 1), lambda x: F.avg_pool1d(x, 3, 2, 1))
_add("avg_pool1d_no_pad_count", {"x": S(2, 3, 13)}, lambda x: em.avg_pool1d(x, 4, 3, 2, count_include_pad=False),
     lambda x: F.avg_pool1d(x, 4, 3, 2, count_include_pad=False))
_add("avg_pool1d_ceil", {"x": S(1, 2, 10)}, lambda x: em.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True))
_add("avg_pool2d", {"x": S(2, 3, 7, 9)}, lambda x: em.avg_pool2d(x, 3), lambda x: F.avg_pool2d(x, 3))
_add("avg_pool2d_pad", {"x": S(1, 3, 7, 6)}, lambda x: em.avg_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 3, 2, 1))
_add("avg_pool2d_pad_exclude", {"x": S(1, 3, 7, 6)}, lambda x: em.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
     lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False))
_add("avg_pool2d_ceil_include", {"x": S(1, 2, 8, 7)}, lambda x: em.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True))
_add("avg_pool2d_ceil_exclude", {"x": S(1, 2, 8, 7)},
     lambda x: em.avg_pool2d(x, (2, 3), 2, (1, 1), ceil_mode=True, count_include_pad=False),
     lambda x: F.avg_pool2d(x, (2, 3), 2, (1, 1), ceil_mode=True, count_include_pad=False))
_add("avg_pool2d_divisor", {"x": S(1, 2, 7, 7)}, lambda x: em.avg_pool2d(x, 3, 2, 1, divisor_override=5),
     lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5))
_add("adaptive_avg_pool2d_uneven", {"x": S(2, 3, 7, 5)}, lambda x: em.adaptive_avg_pool2d(x, (3, 2)),
     lambda x: F.adaptive_avg_pool2d(x, (3, 2)))
_add("adaptive_avg_pool2d_even", {"x": S(2, 3, 6, 9)}, lambda x: em.adaptive_avg_pool2d(x, (3, 3)),
     lambda x: F.adaptive_avg_pool2d(x, (3, 3)))
_add("adaptive_avg_pool2d_global", {"x": S(2, 5, 7, 3)}, lambda x: em.adaptive_avg_pool2d(x, 1),
     lambda x: F.adaptive_avg_pool2d(x, 1))
_add("adaptive_avg_pool2d_none", {"x": S(1, 2, 7, 5)}, lambda x: em.adaptive_avg_pool2d(x, (2, None)),
     lambda x: F.adaptive_avg_pool2d(x, (2, None)))
_add("adaptive_avg_pool2d_upsample", {"x": S(1, 2, 3, 2)}, lambda x: em.adaptive_avg_pool2d(x, (5, 3)),
     lambda x: F.adaptive_avg_pool2d(x, (5, 3)))
