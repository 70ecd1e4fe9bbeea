"""The custom ops (``torch.ops.inductor_conv.*``) with their autograd, fake impls and public functions."""
from inductor_conv.ops import attention, causal_conv1d, causal_conv1d_update  # noqa: F401
