"""Attention written with ``torch.einsum``: respelled as ``torch.matmul`` before AOTAutograd, so the attention patterns
(traced with matmul) see it.

Note [einsum attention]: ``torch.einsum`` is implicit-autograd: AOTAutograd records what its C++ implementation
does, which for ``"bhqd,bhkd->bhqk"`` is an unsqueeze of each operand to 5-D, permutes that move the size-1 dims,
a view to 3-D, the bmm, a view back to 5-D, a permute and a view to 4-D, and the backward of all of them. No traced
pattern sees through that (the matmul spelling gives expand, view, bmm, view). This pass runs on the Dynamo graph
(Inductor's ``pre_grad_custom_pass``), where an einsum is still one call with its equation, and replaces each
einsum that is a batched matrix product (two operands; the letters of both operands and of the output are the
batch dims, one letter of both operands only is contracted, one letter of each operand with the output are the
rows and columns; no letter repeated within an operand, no ``...``) by ``torch.matmul`` of the operands permuted
to (batch..., rows, contracted) and (batch..., contracted, columns) (``matmul_plan``), permuted to the output's
order. Both spellings compute the same products with a bmm (fp32 accumulation), and autograd gives them the same
gradients.

Only the einsums of an attention are respelled: a product whose result reaches a softmax, or whose operand comes
from one, within a few ops (the scale, masks, casts, dropout between them). Other einsums keep eager's own
decomposition. An attention einsum that the patterns then do not match (a mask they refuse, say) stays a matmul,
the same product. Only a match counts in ``counters()["attention"]``.
"""
from __future__ import annotations

import torch

from inductor_conv._compat import get_hash_for_files
from inductor_conv.patterns.chained_pass import ChainedPass

# How far (in ops) a product may be from the softmax it belongs to: QKᵀ -> scale -> softcap (3) -> masks (2) ->
# cast -> softmax; softmax -> cast -> dropout -> cast -> PV.
_REACH = 8
_SOFTMAX_FUNCTIONS = frozenset({torch.softmax, torch.nn.functional.softmax, torch.Tensor.softmax,
                                torch.special.softmax})


def _is_softmax(node: torch.fx.Node) -> bool:
    if node.op == "call_function":
        return node.target in _SOFTMAX_FUNCTIONS
    return node.op == "call_method" and node.target == "softmax"


def _reaches_softmax(node: torch.fx.Node, forward: bool) -> bool:
    """A softmax within _REACH ops of ``node``: among its users (``forward``) or among its inputs."""
    frontier, seen = [node], {node}
    for _ in range(_REACH):
        nxt = []
        for n in frontier:
            for m in (n.users if forward else n.all_input_nodes):
                if m in seen:
                    continue
                if _is_softmax(m):
                    return True
                seen.add(m)
                nxt.append(m)
        frontier = nxt
    return False


def matmul_plan(equation: str):
    """For an einsum ``equation`` of two operands that is a batched matrix product: (the permutation of the first
    operand, of the second, whether the second is then transposed (its last two dims swapped), the permutation of
    the product), each permutation None where it is the identity; else None.

    A second operand laid out as a key (its columns before the contracted dim) goes to (batch..., contracted,
    columns) as a model writes ``k.transpose(-2, -1)``: permuted to (batch..., columns, contracted), then its last two
    dims swapped, so that the patterns' kᵀ (a swap of the key's last two dims) finds the key. Otherwise (v, or a kᵀ
    the model made) it is permuted to (batch..., contracted, columns) directly."""
    equation = equation.replace(" ", "")
    if "->" not in equation or "." in equation:
        return None
    inputs, out = equation.split("->")
    if inputs.count(",") != 1:
        return None
    a, b = inputs.split(",")
    if any(len(set(t)) != len(t) for t in (a, b, out)) or not set(out) <= set(a) | set(b):
        return None
    batch = [c for c in out if c in a and c in b]
    contracted = [c for c in a if c in b and c not in out]
    rows = [c for c in a if c not in b]
    cols = [c for c in b if c not in a]
    if len(contracted) != 1 or len(rows) != 1 or len(cols) != 1 or rows[0] not in out or cols[0] not in out:
        return None
    order_a = [*batch, rows[0], contracted[0]]
    order_out = [*batch, rows[0], cols[0]]

    def permutation(source: str, target: list[str]):
        perm = [source.index(c) for c in target]
        return None if perm == list(range(len(perm))) else perm

    transpose_b = b.index(cols[0]) < b.index(contracted[0])  # laid out as a key: columns before the contraction
    perm_b = permutation(b, [*batch, *((cols[0], contracted[0]) if transpose_b else (contracted[0], cols[0]))])
    return permutation(a, order_a), perm_b, transpose_b, permutation("".join(order_out), list(out))


def _einsum_operands(node: torch.fx.Node):
    """(equation, a, b) of an ``einsum(eq, a, b)`` or ``einsum(eq, [a, b])`` call, else None."""
    if node.op != "call_function" or node.target is not torch.functional.einsum and node.target is not torch.einsum:
        return None
    if node.kwargs or not node.args or not isinstance(node.args[0], str):
        return None
    operands = node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    if len(operands) != 2 or not all(isinstance(x, torch.fx.Node) for x in operands):
        return None
    return node.args[0], operands[0], operands[1]


def _on_enabled_device(node: torch.fx.Node) -> bool:
    from inductor_conv import config

    value = node.meta.get("example_value")
    return isinstance(value, torch.Tensor) and value.device.type in config.device_types


def einsum_attention_as_matmul(graph: torch.fx.Graph) -> int:
    """Note [einsum attention]: respell the attention einsums of a Dynamo graph (on an enabled device) as matmuls.
    Returns how many."""
    done = 0
    for node in list(graph.nodes):
        parsed = _einsum_operands(node)
        if parsed is None or not _on_enabled_device(node):
            continue
        equation, a, b = parsed
        plan = matmul_plan(equation)
        if plan is None or not (_reaches_softmax(node, forward=True) or _reaches_softmax(node, forward=False)):
            continue
        perm_a, perm_b, transpose_b, perm_out = plan
        with graph.inserting_before(node):
            if perm_a is not None:
                a = graph.call_function(torch.permute, (a, perm_a))
            if perm_b is not None:
                b = graph.call_function(torch.permute, (b, perm_b))
            if transpose_b:
                b = graph.call_function(torch.transpose, (b, -2, -1))
            product = graph.call_function(torch.matmul, (a, b))
            if perm_out is not None:
                product = graph.call_function(torch.permute, (product, perm_out))
        product.meta.update({k: v for k, v in node.meta.items() if k in ("stack_trace", "nn_module_stack")})
        node.replace_all_uses_with(product)
        graph.erase_node(node)
        done += 1
    return done


class EinsumAsMatmulPass(ChainedPass):
    """Inductor's ``pre_grad_custom_pass``: runs the passes installed before it (Note [chained passes]), then, while
    active and with ``config.attention`` on, ``einsum_attention_as_matmul``."""

    def __call__(self, graph: torch.fx.Graph) -> None:
        from inductor_conv import config

        self.run_previous(graph)
        if self.active and config.attention and einsum_attention_as_matmul(graph):
            graph.owning_module.recompile()

    def uuid(self):
        from inductor_conv import config

        return (get_hash_for_files((__file__,)).hex(), self.active, config.attention, tuple(config.device_types),
                self.previous_uuid())
