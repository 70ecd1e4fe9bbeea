"""inductor_conv: fused Triton templates for causal conv1d + SiLU and hand-written attention under torch.compile.

    import inductor_conv
    inductor_conv.enable()                      # rewrite on CUDA graphs from now on
    model = torch.compile(model)                # no model code changes
    inductor_conv.counters()                    # {"causal_conv1d": 2, "attention": 4}

Data flow: model -> Dynamo -> AOTAutograd joint graph -> ``inductor_conv.patterns`` rewrites the two patterns into
our custom ops (``inductor_conv.ops``) -> the partitioner saves only their inputs (+ O, LSE, seed) ->
``inductor_conv.lowerings`` turns the ops into Inductor Triton templates (a fallback kernel elsewhere).
"""
from inductor_conv import config
from inductor_conv._counters import counters, reset_counters
from inductor_conv._enable import disable, enable, enabled, is_enabled
from inductor_conv.ops.attention import attention, attention_with_sinks, softcapped_attention
from inductor_conv.ops.causal_conv1d import causal_conv1d
from inductor_conv.ops.causal_conv1d_update import causal_conv1d_update, causal_conv1d_varlen_states

__version__ = "0.1.0"

__all__ = [
    "attention",
    "attention_with_sinks",
    "causal_conv1d",
    "causal_conv1d_update",
    "causal_conv1d_varlen_states",
    "config",
    "counters",
    "disable",
    "enable",
    "enabled",
    "is_enabled",
    "reset_counters",
    "softcapped_attention",
]
