"""The public functions' eager fast path (Note [eager fast path] in ops/eager.py) and the kernels' cached launches
(Note [eager launch path] in kernels/launch.py): the same results as the custom ops, bit for bit, and the custom ops
wherever something must see them."""
from __future__ import annotations

import functools

import pytest
import torch
from helpers import PretendCuda, assert_cudnn_switches_refuse, eager_dropout_seed, node_below_views

import inductor_conv
from inductor_conv.kernels import launch
from inductor_conv.ops import eager

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(autouse=True)
def python_backward(monkeypatch):
    """These tests are about the Python Functions and their launchers: on a GPU the C++ backward node (Note [native
    backward], tests/test_native_backward.py) would take their backward, once its extension is built."""
    monkeypatch.setattr(inductor_conv.config, "native_backward", False)


def _attention_inputs(device, dtype=torch.bfloat16, gqa=False, mask=False, seq=21):
    B, Hq, Hkv, S, D = 1, 2, 1 if gqa else 2, seq, 16
    q = torch.randn(B, Hq, S, D, device=device, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(B, Hkv, S, D, device=device, dtype=dtype, requires_grad=True) for _ in range(2))
    bias = torch.randn(1, Hq, S, S, device=device, dtype=dtype, requires_grad=True) if mask else None
    return q, k, v, bias


def _via_op(q, k, v, bias, p, causal, seed_state):
    """The custom op's path: what the public function did before the fast path, with the seed the fast path draws
    (on a GPU, on the host: Note [host dropout seed])."""
    seed = eager_dropout_seed(seed_state, q.device) if p > 0 else None
    mask = bias.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2]) if bias is not None else None
    out, _ = torch.ops.inductor_conv.attention_fwd(q, k, v, mask, p, causal, q.shape[-1] ** -0.5, seed)
    return out


@pytest.mark.parametrize("p, causal, gqa, mask", [(0.1, True, True, False), (0.0, False, False, True)])
def test_attention_fast_path_equals_custom_op(p, causal, gqa, mask):
    q, k, v, bias = _attention_inputs(DEVICE, gqa=gqa, mask=mask)
    leaves = [t for t in (q, k, v, bias) if t is not None]
    assert eager.fast_path(q, k, v, bias)
    torch.manual_seed(3)
    fast = inductor_conv.attention(q, k, v, attn_mask=bias, dropout_p=p, is_causal=causal, enable_gqa=gqa)
    assert type(fast.grad_fn).__name__ == "_EagerAttentionBackward"
    dout = torch.randn_like(fast)
    fast_grads = torch.autograd.grad(fast, leaves, dout)
    ref = _via_op(q, k, v, bias, p, causal, 3)
    ref_grads = torch.autograd.grad(ref, leaves, dout)
    assert torch.equal(fast, ref)
    for a, b in zip(fast_grads, ref_grads):
        assert torch.equal(a, b)
    with torch.no_grad():  # inference: the launcher alone, no autograd node
        torch.manual_seed(3)
        assert torch.equal(inductor_conv.attention(q, k, v, attn_mask=bias, dropout_p=p, is_causal=causal,
                                                   enable_gqa=gqa), ref)


@pytest.mark.parametrize("kind", ["bias", "bool"])
def test_attention_fast_path_reads_unaligned_masks_padded(monkeypatch, kind):
    """Note [mask row alignment]: a mask over 21 keys (rows 21 elements apart) reaches the eager kernels copied into
    rows 32 elements apart, its broadcast dims still stride 0 (a learned [1, Hq, S, S] bias over the batch, a bool
    [B, 1, S, S] mask over the heads); the results and the bias's gradient equal the unpadded read's, bit for bit."""
    from inductor_conv.kernels import attention as kernels
    from inductor_conv.ops import attention as attention_ops

    B, H, S, D = 2, 2, 21, 16
    q, k, v = (torch.randn(B, H, S, D, device=DEVICE, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    if kind == "bias":
        mask = torch.randn(1, H, S, S, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    else:
        mask = torch.randn(B, 1, S, S, device=DEVICE) > -1.0
    seen = []
    launch_rows = kernels.launch_fwd_rows
    monkeypatch.setattr(kernels, "launch_fwd_rows", lambda q, k, v, m, *a, **kw: seen.append(m.stride()) or
                        launch_rows(q, k, v, m, *a, **kw))
    dout = torch.randn(B, H, S, D, device=DEVICE, dtype=torch.bfloat16)
    results = []
    for row_bytes in (16, 0):
        monkeypatch.setattr(inductor_conv.config, "attention_mask_row_bytes", row_bytes)
        torch.manual_seed(0)  # the same dropout seed
        out = inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=0.1)
        leaves = [q, k, v] + ([mask] if kind == "bias" else [])
        results.append([out, *torch.autograd.grad(out, leaves, dout)])
    padded = (0, S * 32, 32, 1) if kind == "bias" else (S * 32, 0, 32, 1)
    assert seen == [padded, (0, S * S, S, 1) if kind == "bias" else (S * S, 0, S, 1)], seen
    for a, b in zip(*results):
        assert torch.equal(a, b)
    assert attention_ops._aligned_rows(mask, 64) is mask  # above EAGER_MASK_PAD_HEAD_DIM the copy does not pay


def test_attention_fast_path_makes_the_rows_summary_once(monkeypatch):
    """Note [mask ranges]: with a mask tensor the fast path's backward reuses the forward's rows summary and flags
    (Note [mask summary passes]: one flags and one rows launch a forward+backward, where the custom op's path makes
    both in each pass), with the same results."""
    from inductor_conv.kernels import attn_mask_summary

    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", True)
    launches = []
    for name in ("_FLAGS", "_ROWS"):
        launch = getattr(attn_mask_summary, name)
        monkeypatch.setattr(attn_mask_summary, name,
                            lambda *a, launch=launch, **kw: (launches.append(a[1][0]), launch(*a, **kw)))
    S = 80  # more than SHORT_MASK_LENGTH: shorter calls are not summarised (Note [short sequences])
    q, k, v, _ = _attention_inputs(DEVICE, gqa=True, seq=S)
    mask = (torch.arange(S)[None, :] <= torch.arange(S)[:, None] + 3).to(DEVICE).expand(1, 1, S, S)
    fast = inductor_conv.attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert type(fast.grad_fn).__name__ == "_EagerAttentionBackward"
    dout = torch.randn_like(fast)
    fast_grads = torch.autograd.grad(fast, (q, k, v), dout)
    assert launches == ["flags", "rows"], launches
    ref = _via_op(q, k, v, mask, 0.0, False, 3)
    ref_grads = torch.autograd.grad(ref, (q, k, v), dout)
    assert launches == ["flags", "rows"] * 3, launches  # the custom op's forward and backward make their own
    assert torch.equal(fast, ref)
    for a, b in zip(fast_grads, ref_grads):
        assert torch.equal(a, b)


def test_conv_fast_path_equals_custom_op():
    x = torch.randn(2, 24, 45, device=DEVICE, dtype=torch.bfloat16).transpose(1, 2).contiguous().transpose(1, 2)
    x.requires_grad_()
    w = torch.randn(24, 4, device=DEVICE, requires_grad=True)  # fp32 weight with bf16 x, as Mamba under autocast
    b = torch.randn(24, device=DEVICE, requires_grad=True)
    fast = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    assert type(fast.grad_fn).__name__ == "_EagerCausalConv1dBackward"
    dy = torch.randn_like(fast)
    ref = torch.ops.inductor_conv.causal_conv1d_fwd(x, w, b, None, None, "silu")
    assert torch.equal(fast, ref) and fast.stride() == ref.stride()
    for a, c in zip(torch.autograd.grad(fast, (x, w, b), dy), torch.autograd.grad(ref, (x, w, b), dy)):
        assert torch.equal(a, c)


def test_custom_ops_wherever_something_must_see_them():
    q, k, v, _ = _attention_inputs(DEVICE)
    x = torch.randn(2, 8, 16, device=DEVICE)
    assert eager.fast_path(q, k, v, None) == eager.use_triton(q)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():  # a dispatch mode: tracing must see the op
        assert not eager.fast_path(torch.empty(2, 4, 8, 16, device=DEVICE))
    assert not eager.fast_path(torch.randn(2, 4, 8, 16, dtype=torch.float64))  # the torch fallback's dtype
    seen = []
    torch.vmap(lambda t: seen.append(eager.fast_path(t)) or t)(x)
    assert seen == [False]

    class Sub(torch.Tensor):
        pass

    assert not eager.fast_path(x.as_subclass(Sub))
    # under torch.compile the public functions trace into the custom ops
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm.code)
        return gm

    torch._dynamo.reset()
    torch.compile(lambda q, k, v: inductor_conv.attention(q, k, v), backend=backend, fullgraph=True)(q, k, v)
    assert "inductor_conv.attention_fwd" in graphs[0]


@pytest.mark.gpu
def test_cached_launches_equal_triton_generic_launches(monkeypatch):
    """A cache hit launches what Triton's generic path would: the same results for aligned and misaligned inputs
    (the key tells them apart), and with the cache off."""
    q, k, v, bias = _attention_inputs("cuda", mask=True)
    x = torch.randn(2, 24, 46, device="cuda", dtype=torch.bfloat16)[..., 1:]  # 2-byte offset: not 16-byte aligned
    w, b = torch.randn(24, 4, device="cuda"), torch.randn(24, device="cuda")

    def run():
        torch.manual_seed(0)
        o = inductor_conv.attention(q, k, v, attn_mask=bias, dropout_p=0.1)
        grads = torch.autograd.grad(o, (q, k, v, bias), torch.ones_like(o))
        return (o, *grads, inductor_conv.causal_conv1d(x, w, b, activation="silu"),
                inductor_conv.causal_conv1d(x.contiguous(), w, b, activation="silu"))

    first, second = run(), run()  # the second call hits the cache
    monkeypatch.setattr(launch, "_KNOWN_TRITON", False)
    generic = run()
    for a, c, g in zip(first, second, generic):
        assert torch.equal(a, c) and torch.equal(a, g)


@pytest.mark.parametrize("gqa, mask", [(True, False), (False, True)])
def test_new_lengths_reuse_the_configurations_kernels(monkeypatch, gqa, mask):
    """Note [one kernel per configuration]: calls of one configuration at new sequence lengths take the kernel
    variants already made (one per GQA group and EVEN, and the forward's ROWS16: Triton's compile key beyond the
    constexprs the plan fixes), and a repeated call gives the same bits.  In self-attention the forward's EVEN
    implies ROWS16 (Note [length hints]), so it makes no variant more.  Calls of at most SHORT_MASK_LENGTH queries
    and keys (37, 53, 64 here) are a configuration of their own (Note [short sequences]): two plans a pass."""
    import inductor_conv.kernels.attention as kernels

    used = set()
    variant = kernels._Plan.variant

    def record(plan, group, even, rows16=None, seed_arg=False, wide=False):
        used.add((id(plan), group, even, rows16, wide))
        return variant(plan, group, even, rows16, seed_arg, wide)

    monkeypatch.setattr(kernels._Plan, "variant", record)

    def step(S):
        torch.manual_seed(0)
        q, k, v, bias = _attention_inputs(DEVICE, gqa=gqa, mask=mask, seq=S)
        leaves = [t for t in (q, k, v, bias) if t is not None]
        torch.manual_seed(5)
        o = inductor_conv.attention(q, k, v, attn_mask=bias, dropout_p=0.1, is_causal=not mask, enable_gqa=gqa)
        return (o, *torch.autograd.grad(o, leaves, torch.ones_like(o)))

    for S in (37, 53, 64, 71, 96):
        step(S)
    plans = {plan for plan, *_ in used}
    assert len(plans) == 4  # the forward's and the backward's plan, short and not
    assert len(used) <= 8 and {group for _, group, *_ in used} == {2 if gqa else 1}  # EVEN or not, each
    forward = {(even, rows16) for _, _, even, rows16, _ in used if rows16 is not None}
    assert not any(wide for *_, wide in used)  # Note [int64 offsets]: only for slices of 2^31 elements
    assert forward and all(rows16 for even, rows16 in forward if even), forward
    for a, b in zip(step(53), step(53)):
        assert torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_new_lengths_compile_nothing_on_the_gpu():
    """Note [one kernel per configuration], on the GPU: once a configuration has run at a length of each EVEN kind,
    further lengths add no compiled kernel to Triton's caches (SEQ_Q / SEQ_K are not specialised)."""
    import inductor_conv.kernels.attention as kernels

    def call(S):
        q, k, v = (torch.randn(2, 4, S, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        inductor_conv.attention(q, k, v, is_causal=True, dropout_p=0.1).sum().backward()

    def compiled():
        return sum(len(cache[0]) for fn in (kernels._attn_fwd_kernel, kernels._attn_bwd_kernel)
                   for cache in fn.device_caches.values())

    call(300), call(256)  # a ragged and an even length
    before = compiled()
    for S in (301, 337, 401, 555, 320, 512, 1024):
        call(S)
    assert compiled() == before


def test_few_queries_take_flash_decoding(monkeypatch):
    """The forward launcher hands few queries (Sq <= 16, no dropout) to the flash-decoding kernels
    (kernels/attention_decode.py), eagerly and through the op; the result is the forward's."""
    import inductor_conv.kernels.attention_decode as decode
    from inductor_conv.reference.attention import attention_ref

    calls = []
    real = decode.attention_decode_fwd
    monkeypatch.setattr(decode, "attention_decode_fwd", lambda *a, **k: calls.append(1) or real(*a, **k))
    q = torch.randn(1, 4, 3, 16, device=DEVICE, dtype=torch.bfloat16)
    k, v = (torch.randn(1, 2, 70, 16, device=DEVICE, dtype=torch.bfloat16) for _ in range(2))
    mask = torch.rand(1, 1, 3, 70, device=DEVICE) > 0.3
    out = inductor_conv.attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert calls == [1]
    ref = attention_ref(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask)
    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)


def test_dout_in_layout_hands_the_node_a_gradient_with_its_strides():
    """ops/attention.py's _dout_in_layout: the same values and strides as the tensor it views, and whatever the
    layout of the gradient given to it (O's own, transposed, broadcast, strided), the node that made the tensor
    receives it with the tensor's strides, through C++ view nodes only."""
    from inductor_conv.ops.attention import _dout_in_layout

    seen = []

    class Node(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, layout):
            return x.detach().clone() if layout == "bhsd" else x.detach().transpose(1, 2).contiguous().transpose(1, 2)

        @staticmethod
        def backward(ctx, g):
            seen.append(g.stride())
            return g, None

    B, H, S, D = 2, 3, 5, 4
    x = torch.randn(B, H, S, D, requires_grad=True)
    grads = {"own": None, "transposed": torch.randn(B, S, H, D).transpose(1, 2),
             "broadcast": torch.randn(1, 1, 1, D).expand(B, H, S, D), "strided": torch.randn(B, H, 2 * S, D)[:, :, ::2]}
    for layout in ("bhsd", "bshd"):
        for name, g in grads.items():
            raw = Node.apply(x, layout)
            out = _dout_in_layout(raw)
            assert out.stride() == raw.stride() and torch.equal(out, raw)
            g = torch.randn_like(raw) if g is None else g
            seen.clear()
            (dx,) = torch.autograd.grad(out, x, g)
            assert seen == [raw.stride()] and torch.equal(dx, g), (layout, name, seen)
            assert node_below_views(out) == "NodeBackward"


def test_cudnn_route_admits_what_the_lowerings_admit(monkeypatch):
    """Note [cuDNN route]: the eager op's gate (ops/attention.py's _cudnn_eager) condition by condition, on concrete
    tensors, as tests/test_lowerings_attention.py checks the lowerings' _use_cudnn: every refusal is one changed
    property of an admitted form."""
    from inductor_conv.ops import attention as ops

    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    # a cache of its own for the pretend GPU's capability, the process's restored after the test
    monkeypatch.setattr(ops, "_capability", functools.lru_cache(maxsize=None)(ops._capability.__wrapped__))
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", 0)

    def t(B, H, S, D, dtype=torch.bfloat16, offset=0):
        base = torch.randn(B * H * S * D + offset + 64, dtype=dtype)
        start = (-base.data_ptr() // base.element_size()) % 8 + offset  # 16-byte aligned, then `offset` elements on
        return base[start:start + B * H * S * D].view(B, H, S, D).as_subclass(PretendCuda)

    def gate(q, k, v, mask=None, p=0.0, causal=False, softcap=0.0):
        return ops._cudnn_eager(q, k, v, mask, p, causal, softcap)

    B, H, S, D = 2, 4, 128, 64
    qkv = lambda **kw: [t(B, H, S, D, **kw) for _ in range(3)]  # noqa: E731
    assert gate(*qkv())
    assert gate(*qkv(), causal=True)  # Sq == Sk
    assert gate(t(B, 8, S, D), t(B, 2, S, D), t(B, 2, S, D), causal=True)  # GQA 4
    assert gate(*qkv(dtype=torch.float16))
    assert not gate(*qkv(dtype=torch.float32))
    assert not gate(*qkv(), mask=torch.ones(B, 1, S, S, dtype=torch.bool))
    assert not gate(*qkv(), p=0.1)
    assert not gate(*qkv(), softcap=50.0)
    short_q = t(B, H, 64, D)
    assert gate(short_q, *qkv()[1:])  # Sq != Sk, not causal
    assert not gate(short_q, *qkv()[1:], causal=True)  # cuDNN's band is bottom-right aligned there, ours top-left
    assert not gate(*qkv()[:1], t(B, H, 1, D), t(B, H, 1, D))  # a single key: SDPA refuses cuDNN
    assert not gate(t(B, H, 16, D), *qkv()[1:])  # a few queries: flash-decoding (Note [flash-decoding])
    assert gate(t(B, H, 17, D), *qkv()[1:])
    for head_dim in (68, 264):  # not a multiple of 8, above 256
        assert not gate(*[t(B, H, S, head_dim) for _ in range(3)])
    for head_dim in (72, 136, 256):
        assert gate(*[t(B, H, S, head_dim) for _ in range(3)])
    assert not gate(t(B, H, S, 192), t(B, H, S, 192), t(B, H, S, 128))  # MLA: our kernels
    q, k, v = qkv()
    assert not gate(t(B, H, S, D, offset=4), k, v)  # not 16-byte aligned
    assert not gate(q, k, t(B, H, D, S).transpose(-2, -1))  # head dim not unit-stride
    assert gate(q, t(B, S, H, D).transpose(1, 2), v)  # (B, S, H, D) memory: fine
    assert not gate(q.as_subclass(torch.Tensor), k, v)  # not on a GPU
    work = B * H * S * S * (D // 8) ** 2  # below config.attention_cudnn_eager_min_work: our kernels (halved causal)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", work)
    assert gate(q, k, v) and not gate(q, k, v, causal=True)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", work + 1)
    assert not gate(q, k, v)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", 0)
    assert_cudnn_switches_refuse(monkeypatch, lambda: gate(q, k, v), lambda: ops._capability.cache_clear())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("causal, gqa", [(True, True), (False, False)])
def test_cudnn_route_equals_the_custom_ops_cudnn_path(causal, gqa, eager_cudnn_at_every_size):
    """Note [cuDNN route]: the fast path hands a plain p = 0 call to SDPA's cuDNN call (its C++ autograd node), the
    custom ops' CUDA path computes the same forward with the same kernel and the backward from the same O and LSE:
    the same output and the same gradients, for a dO in O's layout and for one in another layout, which both put
    into O's layout (cuDNN's backward reads dO with O's strides: without the copy SDPA's own node returned
    gradients off by 1-13 on the H200, torch 2.11), both as close to float64 as with a dO in O's layout; and
    config.attention_cudnn off gives our kernels.  No Python runs in the fast path's backward (the layout is set
    by C++ view nodes: _dout_in_layout)."""
    from inductor_conv.reference.attention import attention_ref

    torch.manual_seed(0)
    B, Hq, Hkv, S, D = 2, 8, 2 if gqa else 8, 256, 64
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    fast = inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    assert "Cudnn" in node_below_views(fast)
    op, _ = torch.ops.inductor_conv.attention_fwd(q, k, v, None, 0.0, causal, D ** -0.5, None)
    assert torch.equal(fast, op) and op.stride() == q.stride()
    leaves64 = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = attention_ref(*leaves64, is_causal=causal)
    errors = []
    for dout in (torch.randn_like(fast), torch.randn(B, S, Hq, D, device="cuda", dtype=fast.dtype).transpose(1, 2)):
        got = torch.autograd.grad(fast, (q, k, v), dout, retain_graph=True)
        want = torch.autograd.grad(op, (q, k, v), dout, retain_graph=True)
        exact = torch.autograd.grad(ref, leaves64, dout.double(), retain_graph=True)
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        errors.append([(a.double() - e).abs().max().item() for a, e in zip(got, exact)])
    for in_layout, other in zip(*errors):  # dq, dk, dv: a few bf16 roundings either way
        assert other <= 2 * in_layout + 1e-2, errors
    with pytest.MonkeyPatch.context() as m:
        m.setattr(inductor_conv.config, "attention_cudnn", False)
        ours = inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        assert type(ours.grad_fn).__name__ == "_EagerAttentionBackward"
        torch.testing.assert_close(ours, fast, atol=2e-2, rtol=2e-2)
