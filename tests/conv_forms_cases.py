"""The causal conv1d forms the pattern tests compile, as data: each model's own spelling of a depthwise causal conv1d
(+ SiLU) (Mamba, Mamba-2, fla / Hyena's left pad, SiLU written out or in place, channel-last layouts) as a ``Block``
module, the RECOGNISED, LEFT_ALONE and SILU_FORMS tables of named cases and ``make_case`` (a case with seeded
parameters and input).

tests/test_patterns_causal_conv1d.py compiles every case; conv_forms_checks.py holds the checks it and
tests/test_golden_graphs_conv.py share.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, L = 2, 4, 10


# ---------------------------------------------------------------------------------------------------------------
# Models: one nn.Conv1d (parameters stay static under dynamic=True, as in real models) and a spelled-out forward
# ---------------------------------------------------------------------------------------------------------------
class Block(nn.Module):
    """``forward`` is ``spelling(self, x)``; ``self.conv`` is nn.Conv1d(C, C * mult, K, **conv_kwargs)."""

    def __init__(self, spelling, K=3, bias=True, groups=C, mult=1, linear=False, **conv_kwargs):
        super().__init__()
        self.K, self.spelling = K, spelling
        self.conv = nn.Conv1d(C, C * mult, K, groups=groups, bias=bias, **conv_kwargs)
        self.act = nn.SiLU()
        self.linear = nn.Linear(C, C) if linear else None

    def forward(self, x):
        return self.spelling(self, x)


def _mamba1(m, x):  # mamba_simple.py
    return m.act(m.conv(x)[..., : x.shape[-1]])


def _left_pad(m, x):  # fla / Hyena
    return F.silu(F.conv1d(F.pad(x, (m.K - 1, 0)), m.conv.weight, m.conv.bias, groups=C))


def _left_pad_no_act(m, x):
    return F.conv1d(F.pad(x, (m.K - 1, 0)), m.conv.weight, m.conv.bias, groups=C)


def _colon_slice(m, x):
    return torch.nn.functional.silu(m.conv(x)[:, :, : x.shape[2]])


def _silu_then_negative_slice(m, x):
    return F.silu(m.conv(x))[..., : -(m.K - 1)]


def _mul_sigmoid(m, x):
    z = m.conv(x)[..., : x.shape[-1]]
    return z * torch.sigmoid(z)


def _sigmoid_times_z(m, x):  # the factors the other way round
    z = m.conv(x)[..., : x.shape[-1]]
    return torch.sigmoid(z) * z


def _mul_sigmoid_then_slice(m, x):
    z = m.conv(x)
    return (z * torch.sigmoid(z))[..., : x.shape[-1]]


def _linear_transposed(m, h):  # (B, L, C) Linear output in, (B, L, C) out
    x = m.linear(h).transpose(1, 2)
    return F.silu(m.conv(x)[..., : h.shape[1]]).transpose(1, 2)


def mamba2(m, h):  # mamba2.py: act(conv1d(xBC.transpose(1, 2)).transpose(1, 2)[:, :-(d_conv - 1)])
    return m.act(m.conv(m.linear(h).transpose(1, 2)).transpose(1, 2)[:, : -(m.K - 1)])


def _mamba2_silu_first(m, h):  # the activation before the transpose and slice, the slice's end L
    return F.silu(m.conv(m.linear(h).transpose(1, 2))).transpose(1, 2)[:, : h.shape[1]]


def _mamba2_mul_sigmoid_first(m, h):  # the same with SiLU written out and a negative end
    z = m.conv(m.linear(h).transpose(1, 2))
    return (z * torch.sigmoid(z)).transpose(1, 2)[:, : -(m.K - 1)]


def _mamba2_simple(m, h):  # mamba2_simple.py: the activation on the padded conv output, then [:, :seqlen, :]
    xBC = m.act(m.conv(m.linear(h).transpose(1, 2)).transpose(1, 2))
    return xBC[:, : h.shape[1], :]


def _transpose_f_silu_then_slice(m, h):  # the same with F.silu, the channel-last view of the input, a negative end
    return F.silu(m.conv(h.transpose(1, 2)).transpose(1, 2))[:, : -(m.K - 1)]


def _nn_silu_then_slice(m, x):  # the plain (B, C, L) form: nn.SiLU on the padded output, then [:, :, :L]
    return m.act(m.conv(x))[:, :, : x.shape[2]]


def _no_act(m, x):
    return m.conv(x)[..., : x.shape[-1]]


def _two_convs(m, x):  # the same conv twice in sequence: two rewrites
    return _mamba1(m, _mamba1(m, x))


PAD = dict(padding=2)  # K - 1 for K = 3
# name: (Block kwargs, input layout, expected rewrites, activation the fused op gets)
RECOGNISED = {
    "mamba1_nn_silu": (dict(spelling=_mamba1, **PAD), "BCL", 1, "silu"),
    "left_pad_f_silu": (dict(spelling=_left_pad), "BCL", 1, "silu"),
    "left_pad_no_act": (dict(spelling=_left_pad_no_act, K=4), "BCL", 1, "none"),
    "colon_slice_K4": (dict(spelling=_colon_slice, K=4, padding=3), "BCL", 1, "silu"),
    "silu_then_negative_slice": (dict(spelling=_silu_then_negative_slice, **PAD), "BCL", 1, "silu"),
    "mul_sigmoid": (dict(spelling=_mul_sigmoid, **PAD), "BCL", 1, "silu"),
    "mul_sigmoid_then_slice": (dict(spelling=_mul_sigmoid_then_slice, **PAD), "BCL", 1, "silu"),
    "sigmoid_times_z": (dict(spelling=_sigmoid_times_z, **PAD), "BCL", 1, "silu"),
    "linear_transposed": (dict(spelling=_linear_transposed, linear=True, **PAD), "BLC", 1, "silu"),
    "mamba2_transpose_slice": (dict(spelling=mamba2, linear=True, K=4, padding=3), "BLC", 1, "silu"),
    "silu_then_transpose_slice": (dict(spelling=_mamba2_silu_first, linear=True, **PAD), "BLC", 1, "silu"),
    "mul_sigmoid_then_transpose_slice": (dict(spelling=_mamba2_mul_sigmoid_first, linear=True, K=4, padding=3),
                                         "BLC", 1, "silu"),
    "mamba2_simple_transpose_silu_slice": (dict(spelling=_mamba2_simple, linear=True, K=4, padding=3), "BLC", 1,
                                           "silu"),
    "transpose_f_silu_then_slice": (dict(spelling=_transpose_f_silu_then_slice, **PAD), "BLC", 1, "silu"),
    "nn_silu_then_slice": (dict(spelling=_nn_silu_then_slice, **PAD), "BCL", 1, "silu"),
    "no_act": (dict(spelling=_no_act, **PAD), "BCL", 1, "none"),
    "no_bias": (dict(spelling=_mamba1, bias=False, **PAD), "BCL", 1, "silu"),
    "two_convs": (dict(spelling=_two_convs, **PAD), "BCL", 2, "silu"),
}


def _right_pad(m, x):
    return F.silu(F.conv1d(F.pad(x, (0, m.K - 1)), m.conv.weight, m.conv.bias, groups=C))


def _keep_last(m, x):  # anti-causal: the last L outputs of a symmetric conv
    return F.silu(m.conv(x)[..., m.K - 1 :])


def _slice_too_short(m, x):
    return F.silu(m.conv(x)[..., : -m.K])


# The activation on the transposed padded output (Mamba2Simple's order), where more than its first L rows are read:
# the rows past L exist only in the padded tensor, so the rewrite (which never computes them) must not happen.
def _transpose_act_padded_also_read(m, h):  # a user of the unsliced activated tensor besides the slice
    y = m.act(m.conv(h.transpose(1, 2)).transpose(1, 2))
    return y[:, : h.shape[1]] * y.mean(1, keepdim=True)


def _transpose_act_slice_keeps_more(m, h):
    return m.act(m.conv(h.transpose(1, 2)).transpose(1, 2))[:, : h.shape[1] + 1]


def _transpose_act_slice_starts_late(m, h):
    return m.act(m.conv(h.transpose(1, 2)).transpose(1, 2))[:, 1 : h.shape[1] + 1]


# name: (Block kwargs, input layout)
LEFT_ALONE = {
    "groups_2": (dict(spelling=_mamba1, groups=2, **PAD), "BCL"),
    "channel_multiplier_2": (dict(spelling=_mamba1, mult=2, **PAD), "BCL"),
    "symmetric_pad_no_slice": (dict(spelling=lambda m, x: F.silu(m.conv(x)), padding=1), "BCL"),
    "right_pad": (dict(spelling=_right_pad), "BCL"),
    "keep_last": (dict(spelling=_keep_last, **PAD), "BCL"),
    "slice_too_short": (dict(spelling=_slice_too_short, **PAD), "BCL"),
    "transpose_act_padded_also_read": (dict(spelling=_transpose_act_padded_also_read, **PAD), "BLC"),
    "transpose_act_slice_keeps_more": (dict(spelling=_transpose_act_slice_keeps_more, **PAD), "BLC"),
    "transpose_act_slice_starts_late": (dict(spelling=_transpose_act_slice_starts_late, **PAD), "BLC"),
    "stride_2": (dict(spelling=_mamba1, stride=2, **PAD), "BCL"),
    "dilation_2": (dict(spelling=_mamba1, dilation=2, padding=4), "BCL"),
    "circular": (dict(spelling=_mamba1, padding_mode="circular", **PAD), "BCL"),
    "reflect": (dict(spelling=_mamba1, padding_mode="reflect", **PAD), "BCL"),
}


def make_case(kwargs, layout, seed=0):
    """(model, input) with fresh random parameters and input (never zeros)."""
    torch.manual_seed(seed)
    model = Block(**kwargs)
    x = torch.randn(B, L, C) if layout == "BLC" else torch.randn(B, C, L)
    return model, x


# ---------------------------------------------------------------------------------------------------------------
# SiLU spelled in place or as a quotient (test_inplace_and_quotient_silu)
# ---------------------------------------------------------------------------------------------------------------
def _mamba1_inplace_silu(m, x):  # nn.SiLU(inplace=True) on the slice: a view of the conv output
    return nn.SiLU(inplace=True)(m.conv(x)[..., : x.shape[-1]])


def _left_pad_inplace_silu(m, x):
    return F.silu(F.conv1d(F.pad(x, (m.K - 1, 0)), m.conv.weight, m.conv.bias, groups=C), inplace=True)


def _silu_div_exp(m, x):  # SiLU written as a quotient
    z = m.conv(x)[..., : x.shape[-1]]
    return z / (1 + torch.exp(-z))


# name: (spelling, rewrites in inference, rewrites in training)
SILU_FORMS = {
    "mamba1_inplace_silu": (_mamba1_inplace_silu, 1, 1),
    "left_pad_inplace_silu": (_left_pad_inplace_silu, 1, 1),
    "silu_div_exp": (_silu_div_exp, 1, None),
}
