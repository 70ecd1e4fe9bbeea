"""``TORCH_LOGS=inductor_conv``: each rewrite (capability, variant) and each near miss with the check that refused it
(Note [rewrite log] in patterns/rewrite_log.py)."""
from __future__ import annotations

import logging
import math
import re

import pytest
import torch
import torch.nn.functional as F
from helpers import compile_and_run

import inductor_conv
from inductor_conv.patterns import checks

LOGGER = "inductor_conv"
B, H, S, D = 2, 2, 8, 16
C, L, K = 4, 10, 3


def _attention(q, k, v):  # HF BERT's eager attention without a mask, q/k/v (B, H, S, D)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    return torch.matmul(F.softmax(s, dim=-1), v)


def _attention_masked(q, k, v, mask):  # HF BERT's, with an additive mask
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1)) + mask
    return torch.matmul(F.softmax(s, dim=-1), v)


def _attention_weights_returned(q, k, v):  # output_attentions: the probabilities have a second consumer
    p = F.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1)), dim=-1)
    return torch.matmul(p, v), p


def _qkv(d=D, train=False):
    torch.manual_seed(0)
    return [torch.randn(B, H, S, d, requires_grad=train) for _ in range(3)]


def _conv(dilation=1):
    """Mamba's causal depthwise conv + SiLU: pad K - 1 both sides (dilated: (K - 1)·dilation), keep the first L."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(C, C, K, groups=C, padding=(K - 1) * dilation, dilation=dilation)
    return lambda x: F.silu(conv(x)[..., : x.shape[-1]]), torch.randn(B, C, L)


def _logged(caplog, fn, *args, level=logging.INFO, **kwargs):
    """(counters, the rewrite log's messages) of compiling and running fn(*args), the log at ``level``."""
    caplog.clear()
    with caplog.at_level(level, logger=LOGGER):
        _, counts, _ = compile_and_run(fn, *args, **kwargs)
    return counts, [r for r in caplog.records if r.name == "inductor_conv.patterns.rewrite_log"]


def test_a_rewrite_logs_its_capability_and_variant(caplog):
    counts, records = _logged(caplog, _attention, *_qkv(train=True))
    assert counts["attention"] == 1
    assert _what(records) == ["rewrote attention (bert_no_mask_training)"]
    counts, records = _logged(caplog, *_conv())  # the conv's parameters need grad: a training graph
    assert counts["causal_conv1d"] == 1
    assert _what(records) == ["rewrote causal_conv1d (_pattern_conv_pad_slice_silu_training_x_nograd)"]


def _what(records, level=logging.INFO) -> list[str]:
    """The messages logged at ``level`` without the node they name: "rewrote attention (variant)", "... near miss
    (variant): check refused it: reason"."""
    return [re.sub(r" at \w+", "", r.getMessage(), count=1) for r in records if r.levelno == level]


@pytest.mark.parametrize("case, check, reason", [
    ("head_dim_8", "head_dim_supported", "q and k share a head dim D_qk, v has its own D_v, and 16 <= D <= 256"),
    ("weights_returned", "no_outside_users", "No matched intermediate (scores, probabilities, ...) is used outside"),
])
def test_an_attention_near_miss_names_the_check_that_refused_it(caplog, case, check, reason):
    fn, args = (_attention, _qkv(d=8)) if case == "head_dim_8" else (_attention_weights_returned, _qkv())
    counts, records = _logged(caplog, fn, *args)
    assert counts["attention"] == 0
    (message,) = _what(records)
    assert message.startswith(f"attention near miss (bert_no_mask_inference): {check} refused it: {reason}"), message


def test_a_conv_near_miss_names_the_check_that_refused_it(caplog):
    counts, records = _logged(caplog, *_conv(dilation=2))
    assert counts["causal_conv1d"] == 0
    assert _what(records) == [  # the first variant that matched: the others' refusals are the same
        "causal_conv1d near miss (_pattern_conv_pad_slice_silu_training_x_nograd): is_unit_stride_dilation refused "
        "it: A plain (not transposed) convolution with stride 1, dilation 1 and no output padding."]


def test_a_near_miss_of_a_match_another_variant_rewrites_is_not_logged(caplog):
    """A mask that needs a gradient: the additive-mask variant matches first and is refused (the mask's gradient
    reads dS), then the learned-bias variant rewrites the same attention: only the rewrite is news."""
    q, k, v = _qkv(train=True)
    mask = torch.randn(B, H, S, S, requires_grad=True)
    counts, records = _logged(caplog, _attention_masked, q, k, v, mask)
    assert counts["attention"] == 1
    assert _what(records) == ["rewrote attention (t5_learned_bias_training)"] and not _what(records, logging.DEBUG)


def test_refusals_that_are_not_news_are_logged_at_debug(caplog):
    # attention on a CPU while only CUDA graphs are rewritten: the user asked for that, so DEBUG, not INFO
    counts, records = _logged(caplog, _attention, *_qkv(), level=logging.DEBUG, device_types=("cuda",))
    assert counts["attention"] == 0
    assert not _what(records)
    assert [m.split(": ")[:2] for m in _what(records, logging.DEBUG)] == [
        ["attention near miss (bert_no_mask_inference)", "device_enabled refused it"]]


def test_torch_logs_prints_the_rewrite_with_the_graph(capfd):
    """What TORCH_LOGS=inductor_conv prints (torch._logging.set_logs is its API): torch's format, whose prefix names
    the graph being compiled ([frame/compile])."""
    logger = logging.getLogger(LOGGER)
    # set_logs() resets the levels but leaves the logger not propagating, with torch's handler: later tests that
    # read the log through pytest's caplog (tests/test_pattern_cache.py) would see nothing
    propagate, level, handlers = logger.propagate, logger.level, list(logger.handlers)
    torch._logging.set_logs(modules={LOGGER: logging.INFO})
    try:
        capfd.readouterr()
        compile_and_run(_attention, *_qkv())
        err = capfd.readouterr().err
    finally:
        torch._logging.set_logs()
        logger.propagate, logger.handlers[:] = propagate, handlers
        logger.setLevel(level)
    (line,) = [line for line in err.splitlines() if "rewrote" in line]
    assert re.search(r"/rewrite_log\.py:\d+\] \[0/0\] rewrote attention \(bert_no_mask_inference\) at \w+$", line), err


def test_a_predicate_called_outside_a_watched_check_records_nothing(monkeypatch):
    """Called directly (tests, other passes), a predicate is its plain function."""
    from inductor_conv.patterns import rewrite_log

    monkeypatch.setattr(inductor_conv.config, "causal_conv1d", False)
    assert not checks.conv_rewrite_enabled()
    assert rewrite_log._state.refusal is None
