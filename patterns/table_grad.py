"""The gradient of a small table's lookup summed per row, instead of by an atomic add per looked-up element.

Note [small table gradients]: an embedding's backward (``F.embedding``, ``nn.Embedding``) reaches the joint graph as
``_unsafe_masked_index_put_accumulate(zeros(R, *row), mask, [idx], values)`` and a table indexed with a tensor
(``table[idx]``) as ``index_put(zeros(R, *row), [idx], values, accumulate=True)``: row ``idx[i]`` of the table's
gradient gets ``values[i]`` added for every i (where ``mask[i]``: the index is in range and not the padding index).
Inductor compiles that as one atomic add per element of ``values``.  Adds to one address queue behind each other,
and for the bias an attention looks up from a small table -- T5's relative-position bias, 32 buckets x H heads looked
up at an (S, S) bucket index, whose gradient is the attention's dS summed over the batch -- every lane of a warp
adds to the same few addresses: 2.2 ms of T5-small's 5.3 ms training step under the plugin (B8, S512, two layers,
an H100; default Inductor's, fused with its softmax backward, 1.5 ms of 4.5).

This pass writes such a gradient as what it is, for each row r a sum over the index::

    grad[r] = sum_i where(idx[i] == r and mask[i], values[i], 0)

one reduction that reads ``values`` once per row of the table (Inductor fuses the compare into it), with no atomics
and a fixed order (so two runs give the same bits, which the atomics do not).  It is the same sum: every element of
``values`` goes to the one row its index names, or nowhere where the mask is off, as before; a negative index of
``index_put`` (Python's wrap-around) is taken as ``idx + R`` first.  An index out of range adds nowhere, where
eager's index_put raises; the forward's lookup of the same index has raised before.  Only the order of the float
additions changes, which the atomics do not fix either.  Which tables get it is measured
(``inductor_conv/heuristics/table_grad.py``): its reads grow with the table's rows, so only small tables whose rows
make the atomics collide.
"""
from __future__ import annotations

import math

import torch

from inductor_conv import config
from inductor_conv._compat import dynamo_counters, values_recomputed
from inductor_conv.heuristics.table_grad import sum_per_row
from inductor_conv.patterns.checks import known_equal

aten = torch.ops.aten
_ZERO_FILLS = (aten.full.default, aten.zeros.default, aten.new_zeros.default)
# an embedding's backward (torch 2.13's decomposition), then table[idx]'s and torch 2.11's embedding backward
_ACCUMULATIONS = (aten._unsafe_masked_index_put_accumulate.default, aten.index_put.default,
                  aten._unsafe_index_put.default)


def _value(arg):
    value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _static(shape) -> bool:
    return all(isinstance(n, int) for n in shape)


def _zero_table(node):
    """The value of ``node`` if it is a freshly filled table of zeros (full(shape, 0), zeros, new_zeros), else None."""
    if not isinstance(node, torch.fx.Node) or node.target not in _ZERO_FILLS:
        return None
    if node.target == aten.full.default and node.args[1] != 0:
        return None
    return _value(node)


def _accumulation(node):
    """(table, mask or None, index, values) of an accumulating index_put into a zero table of static shape along its
    first dim with one integer index (of any shape, symbolic included) whose values have exactly the shape it adds
    (no broadcast), else None."""
    if node.target == aten._unsafe_masked_index_put_accumulate.default:
        base, mask, indices, values = node.args
    elif node.target in _ACCUMULATIONS:
        base, indices, values = node.args[:3]
        accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
        if accumulate is not True:
            return None
        mask = None
    else:
        return None
    table = _zero_table(base)
    if table is None or not isinstance(indices, (list, tuple)) or len(indices) != 1:
        return None
    idx, vals = _value(indices[0]), _value(values)
    if idx is None or vals is None or idx.dtype not in (torch.int64, torch.int32) or table.dim() < 1:
        return None
    if not (table.dtype.is_floating_point and vals.dtype == table.dtype and _static(table.shape)
            and known_equal(list(vals.shape), [*idx.shape, *table.shape[1:]])):
        return None
    if mask is not None:
        m = _value(mask)
        if m is None or m.dtype != torch.bool or not known_equal(list(m.shape), [*idx.shape, *[1] * (table.dim() - 1)]):
            return None
    return table, mask, indices[0], values


def small_table_grads_summed(graph) -> int:
    """Rewrite each accumulation of a small table's gradient (Note [small table gradients]) on the devices the
    plugin is enabled for into a sum per row. Returns the number rewritten, also counted in
    ``torch._dynamo.utils.counters["inductor_conv"]["small_table_grad"]``."""
    if not config.small_table_grads:
        return 0
    rewritten = 0
    for node in [n for target in _ACCUMULATIONS for n in graph.find_nodes(op="call_function", target=target)]:
        found = _accumulation(node)
        if found is None:
            continue
        table, mask, idx, values = found
        rows, row_shape = table.shape[0], tuple(table.shape[1:])
        if table.device.type not in config.device_types or not sum_per_row(rows, math.prod(row_shape)):
            continue
        index_dims, index_dtype = idx.meta["val"].dim(), idx.meta["val"].dtype
        new = []

        def call(target, *args, **kwargs):
            new.append(graph.call_function(target, args, kwargs))
            return new[-1]

        with graph.inserting_before(node):
            if mask is None:  # index_put wraps a negative index around, as Python does
                idx = call(aten.where.self, call(aten.lt.Scalar, idx, 0), call(aten.add.Tensor, idx, rows), idx)
            for _ in row_shape:  # (*index, 1, ...): one 1 per dim of a row
                idx = call(aten.unsqueeze.default, idx, -1)
            row_ids = call(torch.ops.prims.iota.default, rows, start=0, step=1, dtype=index_dtype, device=table.device,
                           requires_grad=False)
            row_ids = call(aten.view.default, row_ids, [rows] + [1] * (index_dims + len(row_shape)))
            hit = call(aten.eq.Tensor, idx, row_ids)  # (rows, *index, 1, ...)
            if mask is not None:
                hit = call(aten.bitwise_and.Tensor, hit, mask)
            zero = call(aten.full.default, [], 0.0, dtype=table.dtype, device=table.device, pin_memory=False)
            picked = call(aten.where.self, hit, values, zero)  # (rows, *index, *row)
            summed = call(aten.sum.dim_IntList, picked, list(range(1, 1 + index_dims)))
        values_recomputed(new, table)
        summed.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        node.replace_all_uses_with(summed)
        graph.erase_node(node)
        rewritten += 1
    dynamo_counters["inductor_conv"]["small_table_grad"] += rewritten  # beside counters()' keys, not one of them
    return rewritten

