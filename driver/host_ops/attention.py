"""The attention operators of the default ONNX domain: Attention (opsets 23, 24 and 25) and
RotaryEmbedding (opset 23), one OpDef each.

Attention is stated as the spec draws it, step by step in the dtype of Q (T1): Q and K scaled
by sqrt(scale), their product, the softcap, the bias (a float attn_mask added; a boolean one,
is_causal, nonpad_kv_seqlen's padding and the opset-25 window each disallowing keys with -inf),
the softmax in `softmax_precision`, and the product with V. Every mask is aligned on an
`offset`, the count of valid keys before the query block: past_key's length (internal cache),
nonpad_kv_seqlen - q_sequence_length per batch (external cache), else 0. A query row that
allows no key gives zeros (in Y and in the mode-3 qk_matmul_output), not NaN.

One reading covers the three opsets: an attn_mask whose last axis is shorter than the total
sequence is padded with -inf (opset 24 on; an opset-23 model cannot hold such a mask), and the
attributes and inputs a later opset adds have their neutral defaults in an earlier one.
"""
from __future__ import annotations

import numpy as np

from .errors import OperandError, Unimplemented
from .opdef import OpDef, dtype_name

# softmax_precision (an onnx TensorProto element type) -> the numpy dtype of the softmax
_SOFTMAX_PRECISION = {1: np.float32, 10: np.float16, 11: np.float64}
_BFLOAT16 = 16

_Q, _K, _V, _MASK, _PAST_K, _PAST_V, _NONPAD = range(7)


def _arg(inputs, index):
    return inputs[index] if len(inputs) > index else None


# -- Attention: shapes ---------------------------------------------------------------------------

def _heads(x, attr: str, attrs: dict, what: str) -> tuple[int, int, int]:
    """(heads, sequence length, head size) of Q, K or V, 3-D (heads from `attr`) or 4-D."""
    if x.ndim == 4:
        return int(x.shape[1]), int(x.shape[2]), int(x.shape[3])
    if x.ndim != 3:
        raise OperandError(f"{what} {list(x.shape)} must be 4-D (batch, heads, sequence, head size) or 3-D "
                           "(batch, sequence, hidden)")
    heads = attrs.get(attr)
    if not heads or heads < 1 or x.shape[2] % heads:
        raise OperandError(f"{what} {list(x.shape)} is 3-D: the attribute {attr} (given: {heads}) must be "
                           f"positive and divide its hidden size {x.shape[2]}")
    return heads, int(x.shape[1]), int(x.shape[2]) // heads


def _geometry(inputs, attrs) -> dict:
    """The sizes of one Attention node, checked against each other."""
    q, k, v = inputs[_Q], inputs[_K], inputs[_V]
    hq, sq, d = _heads(q, "q_num_heads", attrs, "Q")
    hk, skv, dk = _heads(k, "kv_num_heads", attrs, "K")
    hv, sv, dv = _heads(v, "kv_num_heads", attrs, "V")
    batch = int(q.shape[0])
    if int(k.shape[0]) != batch or int(v.shape[0]) != batch:
        raise OperandError(f"Q {list(q.shape)}, K {list(k.shape)} and V {list(v.shape)} must have one batch size")
    if dk != d:
        raise OperandError(f"K's head size {dk} must equal Q's {d} (Q {list(q.shape)}, K {list(k.shape)})")
    if (hv, sv) != (hk, skv):
        raise OperandError(f"V {list(v.shape)} must have K's heads {hk} and sequence length {skv}")
    if hq % hk:
        raise OperandError(f"q_num_heads {hq} must be a multiple of kv_num_heads {hk}")
    if attrs.get("scale") is not None and not attrs["scale"] > 0:
        # Q and K are each scaled by its square root (onnxruntime also refuses scale <= 0)
        raise OperandError(f"scale {attrs['scale']} must be positive")
    past_k, past_v = _arg(inputs, _PAST_K), _arg(inputs, _PAST_V)
    past = 0
    if (past_k is None) != (past_v is None):
        raise OperandError("past_key and past_value must be given together")
    if past_k is not None:
        past = int(past_k.shape[2]) if past_k.ndim == 4 else -1
        for name, cache, size in (("past_key", past_k, d), ("past_value", past_v, dv)):
            if tuple(cache.shape) != (batch, hk, past, size):
                raise OperandError(f"{name} {list(cache.shape)} must have shape [{batch}, {hk}, "
                                   f"{past if past >= 0 else 'past'}, {size}] (batch, kv heads, past, head size)")
    nonpad = _arg(inputs, _NONPAD)
    if nonpad is not None:
        if past_k is not None:
            raise OperandError("nonpad_kv_seqlen cannot be used together with past_key and past_value")
        if tuple(nonpad.shape) != (batch,):
            raise OperandError(f"nonpad_kv_seqlen {list(nonpad.shape)} must have shape [{batch}] (batch)")
    total = past + skv
    mask = _arg(inputs, _MASK)
    if mask is not None:
        if dtype_name(mask) != "bool" and not np.issubdtype(np.dtype(mask.dtype), np.floating):
            raise Unimplemented(f"attn_mask of dtype {dtype_name(mask)}; supported: bool and the float types")
        if mask.ndim < 1 or mask.ndim > 4 or mask.shape[-1] > total:
            raise OperandError(f"attn_mask {list(mask.shape)} must have rank 1 to 4 and a last axis of at most the "
                               f"total sequence length {total}")
        want = (batch, hq, sq, total)
        padded = tuple(mask.shape[:-1]) + (total if mask.shape[-1] != 1 else 1,)
        try:
            fits = np.broadcast_shapes(padded, want) == want
        except ValueError:
            fits = False
        if not fits:
            raise OperandError(f"attn_mask {list(mask.shape)} does not broadcast to {list(want)} (batch, q heads, "
                               "q sequence, total sequence)")
    return dict(batch=batch, hq=hq, hk=hk, sq=sq, skv=skv, past=past, total=total, d=d, dv=dv)


def _attention_types(inputs, attrs):
    g = _geometry(inputs, attrs)
    t1, t2 = dtype_name(inputs[_Q]), dtype_name(inputs[_V])
    y = (g["batch"], g["hq"], g["sq"], g["dv"]) if inputs[_Q].ndim == 4 else (g["batch"], g["sq"], g["hq"] * g["dv"])
    return [(y, t1),
            ((g["batch"], g["hk"], g["total"], g["d"]), t1),
            ((g["batch"], g["hk"], g["total"], g["dv"]), t2),
            ((g["batch"], g["hq"], g["sq"], g["total"]), t1)]


# -- Attention: values ---------------------------------------------------------------------------

def _as_4d(x, heads: int):
    """(batch, heads, sequence, head size) of a 4-D or 3-D (batch, sequence, hidden) tensor."""
    if x.ndim == 4:
        return x
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3)


def _allowed(g: dict, attrs: dict, nonpad, mask):
    """Where each query may attend each key, (batch or 1, 1 or heads, q, total): the intersection
    of is_causal, the padding of an external cache, the window and a boolean attn_mask."""
    if nonpad is not None:
        offset = (nonpad.astype(np.int64) - g["sq"]).reshape(-1, 1, 1, 1)
    else:
        offset = np.zeros((1, 1, 1, 1), np.int64) + g["past"]
    query = offset + np.arange(g["sq"]).reshape(1, 1, -1, 1)       # absolute position of each query
    key = np.arange(g["total"]).reshape(1, 1, 1, -1)
    allowed = np.ones((1, 1, g["sq"], g["total"]), bool)
    if attrs.get("is_causal", 0):
        allowed = allowed & (key <= query)
    if nonpad is not None:
        allowed = allowed & (key < nonpad.reshape(-1, 1, 1, 1))
    left, right = attrs.get("left_window_size", -1), attrs.get("right_window_size", -1)
    if left >= 0:
        allowed = allowed & (key >= query - left)
    if right >= 0:
        allowed = allowed & (key <= query + right)
    if mask is not None and mask.dtype == bool:
        allowed = allowed & _pad_mask(mask, g["total"], False)
    return allowed


def _pad_mask(mask, total: int, fill):
    """attn_mask with its last axis padded to `total` with `fill` (opset 24: a shorter mask)."""
    short = total - mask.shape[-1]
    if mask.shape[-1] == 1 or short == 0:
        return mask
    return np.concatenate([mask, np.full(mask.shape[:-1] + (short,), fill, mask.dtype)], axis=-1)


def _softmax(logits, dtype):
    """Softmax over the keys in `dtype`; a row with no allowed key (all -inf) is zeros."""
    x = logits.astype(dtype)
    top = x.max(axis=-1, keepdims=True)
    empty = np.isneginf(top)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - np.where(empty, 0, top).astype(dtype))
        p = e / e.sum(axis=-1, keepdims=True)
    return np.where(empty, dtype(0), p).astype(dtype)


def _attention(inputs, attrs):
    g = _geometry(inputs, attrs)
    q, k, v = inputs[_Q], inputs[_K], inputs[_V]
    t1 = q.dtype
    k4 = _as_4d(k, g["hk"]).astype(t1)
    v4 = _as_4d(v, g["hk"])
    past_k, past_v = _arg(inputs, _PAST_K), _arg(inputs, _PAST_V)
    present_k = k4 if past_k is None else np.concatenate([past_k.astype(t1), k4], axis=2)
    present_v = v4 if past_v is None else np.concatenate([past_v.astype(v.dtype), v4], axis=2)
    group = g["hq"] // g["hk"]                      # query heads per key/value head (GQA, MQA)
    keys = np.repeat(present_k, group, axis=1)
    values = np.repeat(present_v, group, axis=1)
    scale = attrs.get("scale")
    root = np.sqrt(t1.type(1.0 / np.sqrt(g["d"]) if scale is None else scale))
    with np.errstate(over="ignore"):
        qk = np.matmul(_as_4d(q, g["hq"]) * root, (keys * root).swapaxes(-1, -2)).astype(t1)
        capped = qk
        if attrs.get("softcap", 0.0) > 0:
            cap = t1.type(attrs["softcap"])
            capped = (cap * np.tanh(qk / cap)).astype(t1)
        mask, nonpad = _arg(inputs, _MASK), _arg(inputs, _NONPAD)
        biased = capped
        if mask is not None and mask.dtype != bool:
            biased = (biased + _pad_mask(mask, g["total"], -np.inf).astype(t1)).astype(t1)
        biased = np.where(_allowed(g, attrs, nonpad, mask), biased, t1.type(-np.inf)).astype(t1)
        precision = _SOFTMAX_PRECISION.get(attrs.get("softmax_precision"), t1.type)
        probs = _softmax(biased, precision).astype(t1)
        y = np.matmul(probs, values.astype(t1)).astype(t1)
    if q.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(g["batch"], g["sq"], -1)
    qk_out = (qk, capped, biased, probs)[attrs.get("qk_matmul_output_mode", 0)]
    return [y, present_k, present_v, qk_out]


def _attention_unsupported(attrs):
    mode = attrs.get("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        return f"qk_matmul_output_mode={mode}; the ONNX values are 0, 1, 2 and 3"
    precision = attrs.get("softmax_precision")
    if precision is not None and precision not in _SOFTMAX_PRECISION:
        what = "bfloat16 is not supported" if precision == _BFLOAT16 else "not an ONNX softmax precision"
        return (f"softmax_precision={precision} ({what}); supported: 1 (float), 10 (float16), 11 (double)")
    return None


# -- RotaryEmbedding -------------------------------------------------------------------------------

def _rotary_geometry(inputs, attrs) -> tuple[int, int]:
    """(heads, rotated dims) of a RotaryEmbedding node, its caches checked against the input."""
    x, cos, sin = inputs[0], inputs[1], inputs[2]
    positions = _arg(inputs, 3)
    if x.ndim == 4:
        heads, seq, head = int(x.shape[1]), int(x.shape[2]), int(x.shape[3])
    elif x.ndim == 3:
        heads = attrs.get("num_heads")
        if not heads or heads < 1 or x.shape[2] % heads:
            raise OperandError(f"X {list(x.shape)} is 3-D: the attribute num_heads (given: {heads}) must be positive "
                               f"and divide its hidden size {x.shape[2]}")
        seq, head = int(x.shape[1]), int(x.shape[2]) // heads
    else:
        raise OperandError(f"X {list(x.shape)} must be 4-D (batch, heads, sequence, head size) or 3-D "
                           "(batch, sequence, hidden)")
    rotated = attrs.get("rotary_embedding_dim", 0) or head
    if rotated % 2 or rotated > head or rotated < 0:
        raise OperandError(f"rotary_embedding_dim {rotated} must be even and at most the head size {head}")
    batch = int(x.shape[0])
    if positions is not None:
        if tuple(positions.shape) != (batch, seq):
            raise OperandError(f"position_ids {list(positions.shape)} must have shape [{batch}, {seq}] "
                               "(batch, sequence)")
        want, what = ("positions", rotated // 2), "(max position + 1, rotary dims / 2) with position_ids"
    else:
        want, what = (batch, seq, rotated // 2), "(batch, sequence, rotary dims / 2) without position_ids"
    for name, cache in (("cos_cache", cos), ("sin_cache", sin)):
        if cache.ndim != len(want) or any(w != "positions" and c != w for c, w in zip(cache.shape, want)):
            raise OperandError(f"{name} {list(cache.shape)} must have shape {list(want)} {what}")
    return heads, rotated


def _rotary(inputs, attrs):
    x, cos, sin = inputs[0], inputs[1], inputs[2]
    positions = _arg(inputs, 3)
    heads, rotated = _rotary_geometry(inputs, attrs)
    if positions is not None:
        if positions.size and (positions.min() < 0 or positions.max() >= cos.shape[0]):
            raise OperandError(f"position_ids hold values outside 0..{cos.shape[0] - 1}, the rows of cos_cache")
        cos, sin = cos[positions], sin[positions]
    # (batch, sequence, heads, head size), the caches broadcast over the heads
    h = x.transpose(0, 2, 1, 3) if x.ndim == 4 else x.reshape(x.shape[0], x.shape[1], heads, -1)
    cos, sin = cos[:, :, None, :].astype(x.dtype), sin[:, :, None, :].astype(x.dtype)
    part = h[..., :rotated]
    if attrs.get("interleaved", 0):
        x1, x2 = part[..., 0::2], part[..., 1::2]
    else:
        x1, x2 = part[..., :rotated // 2], part[..., rotated // 2:]
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if attrs.get("interleaved", 0):
        turned = np.stack([real, imag], axis=-1).reshape(part.shape)
    else:
        turned = np.concatenate([real, imag], axis=-1)
    out = np.concatenate([turned, h[..., rotated:]], axis=-1).astype(x.dtype)
    return [out.transpose(0, 2, 1, 3) if x.ndim == 4 else out.reshape(x.shape)]


def _rotary_types(inputs, attrs):
    _rotary_geometry(inputs, attrs)
    return [(tuple(inputs[0].shape), dtype_name(inputs[0]))]


def _rotary_unsupported(attrs):
    if attrs.get("interleaved", 0) not in (0, 1):
        return f"interleaved={attrs['interleaved']}; the ONNX values are 0 and 1"
    return None


DEFS: dict[str, OpDef] = {
    "Attention": OpDef(_attention, _attention_types, unsupported=_attention_unsupported),
    "RotaryEmbedding": OpDef(_rotary, _rotary_types, unsupported=_rotary_unsupported),
}
