"""The custom ops (``torch.ops.inductor_conv.*``) with their autograd, fake impls and public functions."""
from inductor_conv.ops import attention, causal_conv1d  # noqa: F401
