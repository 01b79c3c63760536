"""Attention and RotaryEmbedding (host_ops.attention) against onnxruntime, compiled and as host
steps: 4-D and 3-D inputs, multi-head, grouped-query and multi-query heads, float and boolean
masks of every rank, is_causal with and without a cache offset, past/present caches,
nonpad_kv_seqlen, softcap, every qk_matmul_output_mode, softmax_precision, the opset-25 windows,
fully-masked rows, and rotary embeddings in both layouts, partial and with and without
position_ids."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, ort_run, vdla_run
from vdla.compiler.frontend import UnsupportedModelError, import_onnx
from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError, Shaped

TOL = {"rtol": 1e-4, "atol": 1e-5}
# vdla computes float16 attention step by step in float16, as the spec's function body does (and the
# onnx node tests' outputs are); onnxruntime accumulates in float32, so the two differ by a few
# float16 ulps of the O(1) results.
FP16_TOL = {"rtol": 2e-2, "atol": 2e-2}


def _normal(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _qkv(rng, batch=2, hq=4, hkv=4, sq=3, skv=5, d=8, dv=8, dtype=np.float32):
    return {"Q": _normal(rng, batch, hq, sq, d, dtype=dtype), "K": _normal(rng, batch, hkv, skv, d, dtype=dtype),
            "V": _normal(rng, batch, hkv, skv, dv, dtype=dtype)}


def _to_3d(x):
    """(batch, heads, sequence, head) -> (batch, sequence, heads * head)."""
    return x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)


# -- Attention: heads, layouts and scale ---------------------------------------------------------

@pytest.mark.parametrize("hq,hkv,dv", [(4, 4, 8), (4, 2, 8), (4, 1, 6), (3, 3, 10)])
@pytest.mark.parametrize("opset", [23, 24, 25])
def test_attention_4d_heads(hq, hkv, dv, opset, rng):
    """MHA, GQA and MQA, a V head size unlike Q's."""
    check_node("Attention", _qkv(rng, hq=hq, hkv=hkv, dv=dv), opset=opset, **TOL)


@pytest.mark.parametrize("hq,hkv", [(4, 4), (4, 2), (4, 1)])
def test_attention_3d_heads(hq, hkv, rng):
    t = _qkv(rng, hq=hq, hkv=hkv, dv=6)
    check_node("Attention", {k: _to_3d(v) for k, v in t.items()}, {"q_num_heads": hq, "kv_num_heads": hkv},
               opset=23, **TOL)


@pytest.mark.parametrize("scale", [0.05, 1.0, 2.5])
def test_attention_scale(scale, rng):
    check_node("Attention", _qkv(rng), {"scale": scale}, opset=23, **TOL)


def test_attention_large_scores_do_not_overflow(rng):
    """Scores of hundreds: the softmax subtracts the row's maximum."""
    t = _qkv(rng, d=16)
    t["Q"] = t["Q"] * 30
    check_node("Attention", t, {"scale": 1.0}, opset=23, rtol=1e-3, atol=1e-4)


# -- masks ---------------------------------------------------------------------------------------

def _check_mask_as(inputs: dict, mask, explicit, attrs=None, opset=24):
    """vdla with `mask` equals onnxruntime with `explicit`, the full (batch, heads, q, total) mask
    the spec makes of it: onnxruntime takes neither a broadcast q or key axis nor a short key axis."""
    want = ort_run(node_model("Attention", {**inputs, "m": explicit}, attrs, opset=opset), {**inputs, "m": explicit})
    for kernels in (True, False):
        got = vdla_run(node_model("Attention", {**inputs, "m": mask}, attrs, opset=opset), {**inputs, "m": mask},
                       kernels=kernels)
        np.testing.assert_allclose(got[0], want[0], err_msg=f"kernels={kernels}", **TOL)


@pytest.mark.parametrize("shape", [(3, 5), (4, 3, 5), (2, 1, 3, 5), (2, 4, 3, 5)])
def test_attention_float_mask(shape, rng):
    check_node("Attention", {**_qkv(rng), "attn_mask": _normal(rng, *shape) * 2}, opset=23, **TOL)


@pytest.mark.parametrize("shape", [(1, 5), (3, 1), (4, 1, 5), (2, 1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, bool])
def test_attention_mask_broadcasts_over_queries_and_keys(shape, dtype, rng):
    mask = _normal(rng, *shape) if dtype is np.float32 else rng.random(shape) < 0.7
    if dtype is bool:
        mask[..., 0] = True
    _check_mask_as(_qkv(rng), mask, np.broadcast_to(mask, (2, 4, 3, 5)).copy(), opset=23)


@pytest.mark.parametrize("dtype", [np.float32, bool])
def test_attention_rank_1_mask(dtype, rng):
    """A mask over the keys alone (onnxruntime takes rank 1 from opset 25)."""
    mask = (_normal(rng, 5) if dtype is np.float32 else np.array([True, False, True, True, False]))
    check_node("Attention", {**_qkv(rng), "attn_mask": mask}, opset=25, **TOL)


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3, 5)])
def test_attention_bool_mask(shape, rng):
    mask = rng.random(shape) < 0.7
    mask[..., 0] = True         # every row keeps a key
    check_node("Attention", {**_qkv(rng), "attn_mask": mask}, opset=23, **TOL)


def test_attention_float_mask_with_minus_infinity(rng):
    mask = np.zeros((3, 5), np.float32)
    mask[:, 3:] = -np.inf
    mask[1, 0] = -np.inf
    check_node("Attention", {**_qkv(rng), "attn_mask": mask}, {"softcap": 0.5}, opset=23, **TOL)


@pytest.mark.parametrize("opset", [23, 24])
def test_attention_fully_masked_row_is_zero(opset, rng):
    """A query row that allows no key: zeros in Y and in the mode-3 probabilities, not NaN."""
    mask = np.array([[False] * 5, [True, False, True, False, True], [True] * 5])
    check_node("Attention", {**_qkv(rng), "attn_mask": mask}, {"qk_matmul_output_mode": 3}, n_outputs=4,
               opset=opset, **TOL)


def test_attention_shorter_mask_is_padded_with_minus_infinity(rng):
    """Opset 24: a mask shorter than the total sequence leaves the keys past it out."""
    t = _qkv(rng, skv=6)
    for short, fill in ((_normal(rng, 2, 1, 3, 4), -np.inf), (rng.random((3, 4)) < 0.8, False)):
        short[..., 0] = 0 if short.dtype != bool else True
        padded = np.concatenate([short, np.full(short.shape[:-1] + (2,), fill, short.dtype)], axis=-1)
        _check_mask_as(t, short, np.broadcast_to(padded, (2, 4, 3, 6)).copy(), {"is_causal": 1})


# -- is_causal, caches and nonpad_kv_seqlen --------------------------------------------------------

@pytest.mark.parametrize("sq,skv", [(4, 4), (3, 6), (1, 5)])
def test_attention_causal(sq, skv, rng):
    """Without a cache the causal mask is top-left aligned: query i sees keys 0..i."""
    check_node("Attention", _qkv(rng, sq=sq, skv=skv, hkv=2), {"is_causal": 1}, opset=23, **TOL)


@pytest.mark.parametrize("mask", [None, "float", "bool"])
def test_attention_causal_with_a_mask(mask, rng):
    t = _qkv(rng)
    if mask == "float":
        t["attn_mask"] = _normal(rng, 2, 1, 3, 5)
    elif mask == "bool":
        t["attn_mask"] = rng.random((3, 5)) < 0.6
    check_node("Attention", t, {"is_causal": 1}, opset=23, **TOL)


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("layout", ["4d", "3d"])
def test_attention_past_and_present(causal, layout, rng):
    """present = past ++ new along the sequence; is_causal offsets the diagonal by the past length
    (opset 24's bottom-right alignment)."""
    t = _qkv(rng, hq=4, hkv=2, sq=2, skv=2, dv=6)
    past = {"past_key": _normal(rng, 2, 2, 4, 8), "past_value": _normal(rng, 2, 2, 4, 6)}
    attrs = {"is_causal": causal}
    if layout == "3d":
        t = {k: _to_3d(v) for k, v in t.items()}
        attrs.update(q_num_heads=4, kv_num_heads=2)
    inputs = {**t, "attn_mask": _normal(rng, 2, 6), **past}
    check_node("Attention", inputs, attrs, n_outputs=3, opset=24, **TOL)


@pytest.mark.parametrize("nonpad", [[4, 6], [2, 5]])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_nonpad_kv_seqlen(nonpad, causal, rng):
    """An external cache: keys past nonpad_kv_seqlen[b] are padding, and is_causal is aligned on
    nonpad - q_sequence_length (negative: the leading query rows see no key and are zero)."""
    t = _qkv(rng, sq=3, skv=6, hkv=2)
    inputs = {**t, "attn_mask": rng.random((2, 1, 3, 6)) < 0.8, "past_key": None, "past_value": None,
              "nonpad_kv_seqlen": np.array(nonpad, np.int64)}
    check_node("Attention", inputs, {"is_causal": causal}, opset=24, **TOL)


# -- softcap, qk_matmul_output, softmax_precision -------------------------------------------------

@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_matmul_output_modes(mode, rng):
    t = _qkv(rng, hq=4, hkv=2)
    t["Q"] = t["Q"] * 3
    inputs = {**t, "attn_mask": _normal(rng, 3, 5)}
    check_node("Attention", inputs, {"softcap": 2.0, "qk_matmul_output_mode": mode}, n_outputs=4, opset=23, **TOL)


def test_attention_mode_2_masks_causal_keys_with_minus_infinity(rng):
    """Mode 2 is the biased scores: onnxruntime writes float32's lowest where the spec's causal bias
    is -inf, so the allowed entries are compared and the others must be -inf."""
    t = _qkv(rng)
    model = node_model("Attention", t, {"is_causal": 1, "qk_matmul_output_mode": 2}, n_outputs=4, opset=23)
    want = ort_run(model, t)[3]
    got = vdla_run(model, t, kernels=False)[3]
    allowed = np.tril(np.ones((3, 5), bool))
    np.testing.assert_allclose(got[..., allowed], want[..., allowed], **TOL)
    assert np.all(np.isneginf(got[..., ~allowed]))


@pytest.mark.parametrize("precision", [None, 1, 11])
def test_attention_float16(precision, rng):
    t = _qkv(rng, hq=4, hkv=2, d=16, dtype=np.float16)
    attrs = {"qk_matmul_output_mode": 3, "is_causal": 1}
    if precision:
        attrs["softmax_precision"] = precision
    check_node("Attention", {**t, "attn_mask": _normal(rng, 3, 5, dtype=np.float16)}, attrs, n_outputs=4, opset=23,
               **FP16_TOL)


def test_attention_softmax_precision_double_on_float32(rng):
    check_node("Attention", _qkv(rng), {"softmax_precision": 11, "softcap": 1.0}, opset=23, **TOL)


# -- opset 25: the local window --------------------------------------------------------------------

@pytest.mark.parametrize("left,right,causal", [(2, -1, 1), (1, 2, 0), (0, 0, 0), (-1, 1, 0), (-1, -1, 1)])
def test_attention_window(left, right, causal, rng):
    t = _qkv(rng, sq=5, skv=7, hkv=2)
    check_node("Attention", t, {"left_window_size": left, "right_window_size": right, "is_causal": causal},
               opset=25, **TOL)


def test_attention_window_with_past_and_nonpad(rng):
    """The window is aligned on the same offset as is_causal: the past length or nonpad - sq."""
    t = _qkv(rng, sq=2, skv=3)
    past = {"past_key": _normal(rng, 2, 4, 4, 8), "past_value": _normal(rng, 2, 4, 4, 8)}
    check_node("Attention", {**t, "attn_mask": None, **past}, {"left_window_size": 2, "is_causal": 1}, n_outputs=3,
               opset=25, **TOL)
    nonpad = {"attn_mask": None, "past_key": None, "past_value": None, "nonpad_kv_seqlen": np.array([4, 5], np.int64)}
    check_node("Attention", {**_qkv(rng, sq=2, skv=6), **nonpad}, {"left_window_size": 1, "is_causal": 1},
               opset=25, **TOL)


# -- what vdla refuses -----------------------------------------------------------------------------

@pytest.mark.parametrize("attrs,message", [
    ({"softmax_precision": 16}, r"softmax_precision=16 \(bfloat16 is not supported\); supported: 1 \(float\)"),
    ({"qk_matmul_output_mode": 4}, r"qk_matmul_output_mode=4; the ONNX values are 0, 1, 2 and 3"),
])
def test_attention_unsupported_attributes(attrs, message, rng):
    with pytest.raises(UnsupportedModelError, match=message):
        import_onnx(node_model("Attention", _qkv(rng), attrs, opset=23))


def test_attention_integer_mask_is_unsupported(rng):
    model = node_model("Attention", {**_qkv(rng), "m": np.ones((3, 5), np.int32)}, opset=23)
    with pytest.raises(UnsupportedModelError, match="attn_mask of dtype int32; supported: bool and the float"):
        import_onnx(model)


def _shaped(*shape, dtype="float32"):
    return Shaped(shape, len(shape), dtype)


@pytest.mark.parametrize("inputs,attrs,message", [
    ([_shaped(2, 3, 16), _shaped(2, 5, 16), _shaped(2, 5, 16)], {}, r"attribute q_num_heads \(given: None\)"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 3, 5, 8), _shaped(2, 3, 5, 8)], {}, "q_num_heads 4 must be a multiple of"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 6), _shaped(2, 4, 5, 8)], {}, "K's head size 6 must equal Q's 8"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 8), _shaped(2, 4, 5, 8)], {"scale": -0.5}, "scale -0.5 must be positive"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 8), _shaped(2, 4, 5, 8), _shaped(3, 6)], {},
     r"attn_mask \[3, 6\] must have rank 1 to 4 and a last axis of at most the total sequence length 5"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 8), _shaped(2, 4, 5, 8), _shaped(2, 3, 5)], {},
     r"attn_mask \[2, 3, 5\] does not broadcast to \[2, 4, 3, 5\]"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 8), _shaped(2, 4, 5, 8), None, _shaped(2, 4, 1, 8)], {},
     "past_key and past_value must be given together"),
    ([_shaped(2, 4, 3, 8), _shaped(2, 4, 5, 8), _shaped(2, 4, 5, 8), None, _shaped(2, 4, 1, 8), _shaped(2, 4, 1, 8),
      _shaped(2, dtype="int64")], {}, "nonpad_kv_seqlen cannot be used together with past_key"),
])
def test_attention_invalid_operands(inputs, attrs, message):
    with pytest.raises(OperandError, match=message):
        host_ops.output_types("Attention", inputs, attrs)


def test_attention_types_of_every_output():
    q, k, v = _shaped(2, 3, 32), _shaped(2, 5, 16), _shaped(2, 5, 12, dtype="float64")
    past_k, past_v = _shaped(2, 2, 4, 8), _shaped(2, 2, 4, 6, dtype="float64")
    types = host_ops.output_types("Attention", [q, k, v, None, past_k, past_v], {"q_num_heads": 4, "kv_num_heads": 2})
    assert types == [((2, 3, 24), "float32"), ((2, 2, 9, 8), "float32"), ((2, 2, 9, 6), "float64"),
                     ((2, 4, 3, 9), "float32")]


# -- RotaryEmbedding ------------------------------------------------------------------------------

def _rotary_inputs(rng, batch=2, heads=3, seq=4, head=8, rotary=None, positions=True, max_pos=10,
                   dtype=np.float32):
    half = (rotary or head) // 2
    x = _normal(rng, batch, heads, seq, head, dtype=dtype)
    if positions:
        angle = rng.uniform(-np.pi, np.pi, (max_pos, half))
        ids = rng.integers(0, max_pos, (batch, seq)).astype(np.int64)
    else:
        angle = rng.uniform(-np.pi, np.pi, (batch, seq, half))
        ids = None
    return {"X": x, "cos": np.cos(angle).astype(dtype), "sin": np.sin(angle).astype(dtype), "ids": ids}


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary", [None, 4, 8])
@pytest.mark.parametrize("positions", [True, False])
def test_rotary_embedding_4d(interleaved, rotary, positions, rng):
    inputs = _rotary_inputs(rng, rotary=rotary, positions=positions)
    attrs = {"interleaved": interleaved, **({"rotary_embedding_dim": rotary} if rotary else {})}
    check_node("RotaryEmbedding", inputs, attrs, opset=23, **TOL)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary", [None, 2])
def test_rotary_embedding_3d(interleaved, rotary, rng):
    inputs = _rotary_inputs(rng, rotary=rotary)
    inputs["X"] = _to_3d(inputs["X"])
    attrs = {"interleaved": interleaved, "num_heads": 3, **({"rotary_embedding_dim": rotary} if rotary else {})}
    check_node("RotaryEmbedding", inputs, attrs, opset=23, **TOL)


def test_rotary_embedding_float16(rng):
    check_node("RotaryEmbedding", _rotary_inputs(rng, dtype=np.float16), {"interleaved": 1}, opset=23,
               rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("inputs,attrs,message", [
    ([_shaped(2, 4, 24), _shaped(10, 4), _shaped(10, 4), _shaped(2, 4, dtype="int64")], {},
     r"attribute num_heads \(given: None\)"),
    ([_shaped(2, 3, 4, 8), _shaped(10, 4), _shaped(10, 4), _shaped(2, 4, dtype="int64")], {"rotary_embedding_dim": 3},
     "rotary_embedding_dim 3 must be even and at most the head size 8"),
    ([_shaped(2, 3, 4, 8), _shaped(10, 3), _shaped(10, 3), _shaped(2, 4, dtype="int64")], {},
     r"cos_cache \[10, 3\] must have shape \['positions', 4\]"),
    ([_shaped(2, 3, 4, 8), _shaped(2, 4, 4), _shaped(2, 4, 4), _shaped(2, 5, dtype="int64")], {},
     r"position_ids \[2, 5\] must have shape \[2, 4\]"),
    ([_shaped(2, 3, 4, 8), _shaped(2, 5, 4), _shaped(2, 5, 4)], {},
     r"cos_cache \[2, 5, 4\] must have shape \[2, 4, 4\]"),
])
def test_rotary_embedding_invalid_operands(inputs, attrs, message):
    with pytest.raises(OperandError, match=message):
        host_ops.output_types("RotaryEmbedding", inputs, attrs)


def test_rotary_embedding_position_out_of_the_cache_is_refused(rng):
    inputs = _rotary_inputs(rng, max_pos=4)
    inputs["ids"][0, 0] = 4
    with pytest.raises(OperandError, match=r"position_ids hold values outside 0..3"):
        host_ops.run("RotaryEmbedding", list(inputs.values()), {"interleaved": 0, "rotary_embedding_dim": 0})


def test_rotary_embedding_unsupported_interleaved(rng):
    with pytest.raises(UnsupportedModelError, match="interleaved=2; the ONNX values are 0 and 1"):
        import_onnx(node_model("RotaryEmbedding", _rotary_inputs(rng), {"interleaved": 2}, opset=23))
