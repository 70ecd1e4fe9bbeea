"""enable() / disable() / enabled() / counters(): install, chain, restore. The public functions' signatures: the
attention functions' (SDPA's), causal_conv1d's (Dao's) and the plugin switches'."""
import inspect

import pytest
import torch

import inductor_conv
from inductor_conv import _counters
from inductor_conv._compat import CustomGraphPass, dynamo_counters, get_joint_custom_pre_pass, has_lowering


class _UserPass(CustomGraphPass):
    """Another user's joint pass: it must keep running while we are enabled, and be put back by disable()."""

    def __init__(self):
        self.calls = 0

    def __call__(self, graph):
        self.calls += 1

    def uuid(self):
        return "user-pass"


@pytest.fixture
def clean_state():
    inductor_conv.disable()
    inductor_conv.reset_counters()
    saved_devices = inductor_conv.config.device_types
    inductor_conv.config.device_types = ("cuda",)
    yield
    inductor_conv.disable()
    inductor_conv.config.device_types = saved_devices


def _our_ops():
    return [
        torch.ops.inductor_conv.causal_conv1d_fwd.default,
        torch.ops.inductor_conv.attention_fwd.default,
    ]


def test_enable_is_idempotent_and_disable_restores_none(clean_state):
    from inductor_conv._compat import get_pre_grad_custom_pass

    assert get_joint_custom_pre_pass() is None and get_pre_grad_custom_pass() is None
    inductor_conv.enable(("cpu",))
    first, first_pre_grad = get_joint_custom_pre_pass(), get_pre_grad_custom_pass()
    inductor_conv.enable(("cpu",))
    assert get_joint_custom_pre_pass() is first and get_pre_grad_custom_pass() is first_pre_grad
    assert inductor_conv.is_enabled()
    inductor_conv.disable()
    assert get_joint_custom_pre_pass() is None and get_pre_grad_custom_pass() is None
    assert not inductor_conv.is_enabled()
    assert not any(has_lowering(op) for op in _our_ops())


def test_disable_restores_a_lowering_inductor_had_installed(clean_state):
    """An op compiled before enable() has Inductor's own fallback lowering; enable() replaces it, disable() puts
    that same lowering back (not merely none: Inductor's table is left as enable() found it)."""
    from inductor_conv._compat import inductor_lowerings

    ops = [op for op in _our_ops() if not has_lowering(op)]
    assert ops, "the fixture's disable() leaves our ops without a lowering"
    theirs = {op: (lambda *args, **kwargs: None) for op in ops}  # stand for Inductor's fallback lowerings
    inductor_lowerings.update(theirs)
    try:
        inductor_conv.enable(("cpu",))
        assert all(inductor_lowerings[op] is not theirs[op] for op in ops)
        inductor_conv.disable()
        assert all(inductor_lowerings.get(op) is theirs[op] for op in ops)
    finally:
        for op in ops:
            inductor_lowerings.pop(op, None)


@pytest.mark.parametrize("hook", ["joint_custom_pre_pass", "pre_grad_custom_pass"])
def test_user_pass_is_chained_and_restored(clean_state, hook):
    """Our pass of each hook (the joint one: the patterns; the pre-grad one: Note [einsum attention]) runs another
    user's pass first and puts it back on disable()."""
    from inductor_conv import _compat

    get, set_ = getattr(_compat, f"get_{hook}"), getattr(_compat, f"set_{hook}")
    user = _UserPass()
    set_(user)
    try:
        inductor_conv.enable(("cpu",))
        ours = get()
        assert ours is not user and ours.previous is user
        graph = torch.fx.Graph()
        graph.output(None)
        ours(torch.fx.GraphModule(torch.nn.Module(), graph).graph)  # Inductor passes a GraphModule's graph
        assert user.calls == 1
        assert "user-pass" in repr(ours.uuid())
        inductor_conv.disable()
        assert get() is user
    finally:
        set_(None)


def test_enabled_inside_a_pass_list_another_user_built(clean_state):
    """Another user chains a pass after ours ([ours, theirs]): we still report enabled, and enable() again neither
    wraps the list (ours would run twice) nor drops their pass."""
    from inductor_conv._compat import set_joint_custom_pre_pass

    inductor_conv.enable(("cpu",))
    ours, user = get_joint_custom_pre_pass(), _UserPass()
    set_joint_custom_pre_pass([ours, user])
    try:
        assert inductor_conv.is_enabled()
        inductor_conv.enable(("cpu",))
        assert get_joint_custom_pre_pass() == [ours, user]
        inductor_conv.disable()  # ours stays in their list as a pass-through
        assert not inductor_conv.is_enabled() and get_joint_custom_pre_pass() == [ours, user]
        inductor_conv.enable(("cpu",))
        assert inductor_conv.is_enabled() and get_joint_custom_pre_pass() == [ours, user]
    finally:
        set_joint_custom_pre_pass(None)


def test_enabled_context_restores_previous_state(clean_state):
    with inductor_conv.enabled(("cpu",)):
        assert inductor_conv.is_enabled()
        assert inductor_conv.config.device_types == ("cpu",)
    assert not inductor_conv.is_enabled()
    assert inductor_conv.config.device_types == ("cuda",)

    inductor_conv.enable(("cuda",))
    with inductor_conv.enabled(("cpu",)):
        assert inductor_conv.config.device_types == ("cpu",)
    assert inductor_conv.is_enabled() and inductor_conv.config.device_types == ("cuda",)


def test_enabled_is_no_query(clean_state):
    """enabled() makes a context manager, which is always true: used as a test of the state it raises, naming the
    query; as a decorator it enables the plugin around each call."""
    with pytest.raises(TypeError, match=r"is_enabled\(\)"):
        if not inductor_conv.enabled():
            pass

    @inductor_conv.enabled(("cpu",))
    def inside():
        return inductor_conv.is_enabled(), inductor_conv.config.device_types

    assert inside() == (True, ("cpu",)) and inside() == (True, ("cpu",))
    assert not inductor_conv.is_enabled() and inductor_conv.config.device_types == ("cuda",)


@pytest.mark.parametrize("flag", ["deterministic", "attention_cudnn", "conv_eager_output_layout"])
def test_uuid_changes_with_config(clean_state, flag, monkeypatch):
    """Each flag that changes the generated code is in the pass's uuid (an FX-cache hit replays generated code)."""
    inductor_conv.enable(("cpu",))
    ours = get_joint_custom_pre_pass()
    before = ours.uuid()
    monkeypatch.setattr(inductor_conv.config, flag, not getattr(inductor_conv.config, flag))
    assert ours.uuid() != before


def test_uuid_covers_every_config_setting(clean_state, monkeypatch):
    """Every config setting but where the patterns are read from is in the uuid, a setting added later included
    (attention_split_head_dim was missing from a hand-written list: a cached graph compiled with it on would have
    been replayed with it off)."""
    from inductor_conv.patterns.graph_pass import config_switches

    names = config_switches()
    assert "attention_split_head_dim" in names and "pattern_cache_dir" not in names
    inductor_conv.enable(("cpu",))
    ours = get_joint_custom_pre_pass()
    for name in names:
        value = getattr(inductor_conv.config, name)
        before = ours.uuid()
        other = ((not value) if isinstance(value, bool) else 3 if value is None else value + 1 if isinstance(value, int)
                 else (*value, "other"))
        monkeypatch.setattr(inductor_conv.config, name, other)
        assert ours.uuid() != before, name
        monkeypatch.setattr(inductor_conv.config, name, value)


def test_uuid_changes_with_the_torch_switches_the_lowering_reads(clean_state):
    """The attention lowering's cuDNN choice reads torch.are_deterministic_algorithms_enabled()."""
    inductor_conv.enable(("cpu",))
    ours = get_joint_custom_pre_pass()
    before = ours.uuid()
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(not was)
    try:
        assert ours.uuid() != before
    finally:
        torch.use_deterministic_algorithms(was)


@pytest.mark.parametrize("knob,value", [("attention_causal_group", 3), ("attention_causal_bwd_group", 3),
                                        ("attention_masked_first", False), ("attention_bwd_kv_first", False),
                                        ("attention_causal_pair", True), ("attention_tma", True),
                                        ("attention_mask_stages", 2), ("conv_bwd_dy_t", False)])
def test_uuid_changes_with_the_lowering_experiment_switches(clean_state, knob, value, monkeypatch):
    """The lowerings' experiment switches in config (set by benchmarks) change the generated code."""
    inductor_conv.enable(("cpu",))
    ours = get_joint_custom_pre_pass()
    before = ours.uuid()
    monkeypatch.setattr(inductor_conv.config, knob, value)
    assert ours.uuid() != before


def test_bad_device_type_names_argument(clean_state):
    with pytest.raises(ValueError, match="device_types"):
        inductor_conv.enable(("tpu",))


def test_counters_are_mirrored_in_dynamo_counters(clean_state):
    _counters.bump("attention", 2)
    assert inductor_conv.counters() == {"causal_conv1d": 0, "attention": 2}
    assert dynamo_counters["inductor_conv"]["attention"] == 2
    inductor_conv.reset_counters()
    assert inductor_conv.counters() == {"causal_conv1d": 0, "attention": 0}
    assert dynamo_counters["inductor_conv"]["attention"] == 0
    with pytest.raises(KeyError):
        _counters.bump("conv2d")


def _sdpa_parameters():
    """(name, kind, default) of each argument of ``F.scaled_dot_product_attention`` in this torch, read from its
    schema (a builtin: inspect cannot see its signature)."""
    P, K, E = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty
    return [(a.name, K if a.kwarg_only else P, a.default_value if a.has_default_value() else E)
            for a in torch.ops.aten.scaled_dot_product_attention.default._schema.arguments]


def _parameters(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_attention_signature_is_sdpas():
    """``inductor_conv.attention`` is a drop-in for SDPA: the same names, order, defaults and keyword-only arguments
    (scale, enable_gqa), whatever this torch's SDPA has."""
    sdpa = _sdpa_parameters()
    assert [name for name, _, _ in sdpa][:3] == ["query", "key", "value"]  # the schema was read
    assert _parameters(inductor_conv.attention) == sdpa


def test_softcapped_attention_signature_is_sdpas_plus_softcap():
    """SDPA's arguments with the cap, required, right after the tensors (``softcapped_attention(q, k, v, 50.0)``)."""
    sdpa = _sdpa_parameters()
    softcap = ("softcap", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty)
    assert _parameters(inductor_conv.softcapped_attention) == [*sdpa[:3], softcap, *sdpa[3:]]


# The exact parameter lists, whatever this torch's SDPA has: other code and call sites ported from Dao's
# causal_conv1d_fn and from SDPA depend on them.
P, K, E = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty


def test_attention_signature_is_pinned():
    assert _parameters(inductor_conv.attention) == [
        ("query", P, E), ("key", P, E), ("value", P, E), ("attn_mask", P, None), ("dropout_p", P, 0.0),
        ("is_causal", P, False), ("scale", K, None), ("enable_gqa", K, False)]


def test_attention_with_sinks_signature_is_sdpas_plus_sinks_and_softcap():
    """SDPA's arguments with the sinks, required, right after the tensors, and softcap keyword-only."""
    sdpa = _sdpa_parameters()
    sinks = ("sinks", P, E)
    assert _parameters(inductor_conv.attention_with_sinks) == [*sdpa[:3], sinks, *sdpa[3:], ("softcap", K, 0.0)]


def test_causal_conv1d_signature_is_daos():
    assert _parameters(inductor_conv.causal_conv1d) == [
        ("x", P, E), ("weight", P, E), ("bias", P, None), ("seq_idx", P, None), ("initial_states", P, None),
        ("return_final_states", P, False), ("final_states_out", P, None), ("activation", P, None)]


def test_enable_disable_and_counters_signatures():
    assert _parameters(inductor_conv.enable) == [("device_types", P, ("cuda",))]
    assert _parameters(inductor_conv.enabled) == [("device_types", P, ("cuda",))]
    assert _parameters(inductor_conv.disable) == []
    assert _parameters(inductor_conv.reset_counters) == []
    assert set(inductor_conv.counters()) == {"causal_conv1d", "attention"}
