"""Recurrent sequence ops that carry a state from one call to the next, of the default ONNX domain
(opset 27): LinearAttention (the linear / gated / delta / gated-delta recurrences of linear
transformers and DeltaNets) and CausalConvWithState (a depthwise causal 1-D convolution whose
last k - 1 inputs are the next call's left padding), one OpDef each.

Both take the optional past state as an input and return the present one, so a decoder runs
them token by token or a whole prompt at once with the same answer. float16 inputs compute in
float32 and round once at the end, as onnxruntime does.
"""
from __future__ import annotations

import numpy as np

from .errors import OperandError
from .opdef import OpDef, dtype_name


def _work_dtype(dtype):
    """float32 (onnxruntime's and the ONNX reference's accumulator) for float16 and float32 inputs."""
    return np.promote_types(dtype, np.float32)


def _optional(inputs, index):
    return inputs[index] if len(inputs) > index else None


# -- LinearAttention --------------------------------------------------------------------------------

_RULES = ("linear", "gated", "delta", "gated_delta")


def _heads(attrs) -> tuple[int, int]:
    for key in ("q_num_heads", "kv_num_heads"):
        if key not in attrs:
            raise OperandError(f"the {key} attribute is required")
    h_q, h_kv = int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])
    if h_kv < 1 or h_q < 1 or h_q % h_kv:
        raise OperandError(f"q_num_heads {h_q} must be a positive multiple of kv_num_heads {h_kv}")
    return h_q, h_kv


def _linear_attention_dims(inputs, attrs) -> dict:
    """The head counts and sizes, after checking every present input's shape against them."""
    q, k, v = inputs[0], inputs[1], inputs[2]
    past, decay, beta = _optional(inputs, 3), _optional(inputs, 4), _optional(inputs, 5)
    h_q, h_kv = _heads(attrs)
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3 or not q.shape[:2] == k.shape[:2] == v.shape[:2]:
        raise OperandError(f"query {list(q.shape)}, key {list(k.shape)} and value {list(v.shape)} must be "
                           "[B, T, heads * size] with the same B and T")
    b, t = q.shape[:2]
    if q.shape[2] % h_q or v.shape[2] % h_kv or k.shape[2] != q.shape[2] // h_q * h_kv:
        raise OperandError(f"query's last dim {q.shape[2]} must be q_num_heads {h_q} * d_k, key's {k.shape[2]} "
                           f"kv_num_heads {h_kv} * d_k, and value's {v.shape[2]} kv_num_heads * d_v")
    d_k, d_v = q.shape[2] // h_q, v.shape[2] // h_kv
    if past is not None and tuple(past.shape) != (b, h_kv, d_k, d_v):
        raise OperandError(f"past_state {list(past.shape)} must be [B, kv_num_heads, d_k, d_v] = "
                           f"{[b, h_kv, d_k, d_v]}")
    rule = attrs["update_rule"]
    if rule in ("gated", "gated_delta"):
        if decay is None:
            raise OperandError(f"update_rule {rule!r} needs the decay input")
        if tuple(decay.shape) not in ((b, t, h_kv * d_k), (b, t, h_kv)):
            raise OperandError(f"decay {list(decay.shape)} must be [B, T, kv_num_heads * d_k] = "
                               f"{[b, t, h_kv * d_k]} or [B, T, kv_num_heads] = {[b, t, h_kv]}")
    if rule in ("delta", "gated_delta"):
        if beta is None:
            raise OperandError(f"update_rule {rule!r} needs the beta input")
        if tuple(beta.shape) not in ((b, t, h_kv), (b, t, 1)):
            raise OperandError(f"beta {list(beta.shape)} must be [B, T, kv_num_heads] = {[b, t, h_kv]} "
                               f"or [B, T, 1]")
    return {"b": b, "t": t, "h_q": h_q, "h_kv": h_kv, "d_k": d_k, "d_v": d_v}


def _linear_attention_types(inputs, attrs):
    q, past = inputs[0], _optional(inputs, 3)
    n = _linear_attention_dims(inputs, attrs)
    state_dtype = dtype_name(past) if past is not None else dtype_name(q)
    return [((n["b"], n["t"], n["h_q"] * n["d_v"]), dtype_name(q)),
            ((n["b"], n["h_kv"], n["d_k"], n["d_v"]), state_dtype)]


def _linear_attention(inputs, attrs):
    q, past, decay, beta = inputs[0], _optional(inputs, 3), _optional(inputs, 4), _optional(inputs, 5)
    n = _linear_attention_dims(inputs, attrs)
    b, t, h_q, h_kv, d_k, d_v = n["b"], n["t"], n["h_q"], n["h_kv"], n["d_k"], n["d_v"]
    work = _work_dtype(q.dtype)
    rule = attrs["update_rule"]

    def heads(x, count):        # [B, T, count * d] -> [B, count, T, d]
        return x.astype(work).reshape(b, t, count, -1).transpose(0, 2, 1, 3)

    qh, kh, vh = heads(q, h_q), heads(inputs[1], h_kv), heads(inputs[2], h_kv)
    # a decay per key dim scales rows of the state [d_k, d_v]; one per head scales all of it
    gate = np.exp(heads(decay, h_kv))[..., None] if rule in ("gated", "gated_delta") else None
    rate = heads(beta, beta.shape[2]) if rule in ("delta", "gated_delta") else None
    scale = work.type(attrs["scale"] or 1 / np.sqrt(d_k))
    state = past.astype(work) if past is not None else np.zeros((b, h_kv, d_k, d_v), work)
    group = h_q // h_kv     # query head h reads kv head h // group
    out = np.empty((b, h_q, t, d_v), work)
    for i in range(t):
        k_t, v_t = kh[:, :, i], vh[:, :, i]                                  # [B, H_kv, d]
        if gate is not None:
            state = gate[:, :, i] * state
        if rate is not None:        # the delta rule: write the error of what the state recalls for k_t
            recalled = np.einsum("bhkv,bhk->bhv", state, k_t)
            v_t = rate[:, :, i] * (v_t - recalled)
        state = state + k_t[..., :, None] * v_t[..., None, :]
        out[:, :, i] = scale * np.einsum("bhk,bhkv->bhv", qh[:, :, i], np.repeat(state, group, axis=1))
    output = out.transpose(0, 2, 1, 3).reshape(b, t, h_q * d_v).astype(q.dtype)
    return [output, state.astype(past.dtype if past is not None else q.dtype)]


def _linear_attention_unsupported(attrs):
    if attrs["update_rule"] not in _RULES:
        return f"update_rule={attrs['update_rule']!r}; the ONNX values are {', '.join(map(repr, _RULES))}"
    return None


# -- CausalConvWithState ----------------------------------------------------------------------------

def _causal_conv_types(inputs, attrs):
    x, w, bias, past = inputs[0], inputs[1], _optional(inputs, 2), _optional(inputs, 3)
    if x.ndim != 3:
        raise OperandError(f"input {list(x.shape)} must be [batch, channels, length]")
    b, c, _ = x.shape
    if w.ndim != 3 or w.shape[0] != c or w.shape[1] != 1 or w.shape[2] < 1:
        raise OperandError(f"weight {list(w.shape)} must be [channels, 1, k] = [{c}, 1, k], k >= 1")
    k = w.shape[2]
    if bias is not None and tuple(bias.shape) != (c,):
        raise OperandError(f"bias {list(bias.shape)} must be [channels] = [{c}]")
    if past is not None and tuple(past.shape) != (b, c, k - 1):
        raise OperandError(f"past_state {list(past.shape)} must be [batch, channels, k - 1] = {[b, c, k - 1]}")
    return [(tuple(x.shape), dtype_name(x)), ((b, c, k - 1), dtype_name(x))]


def _causal_conv(inputs, attrs):
    x, w, bias, past = inputs[0], inputs[1], _optional(inputs, 2), _optional(inputs, 3)
    _causal_conv_types(inputs, attrs)
    b, c, length = x.shape
    k = w.shape[2]
    lead = past if past is not None else np.zeros((b, c, k - 1), x.dtype)
    padded = np.concatenate([lead, x], axis=2)          # [B, C, k - 1 + L]
    work = _work_dtype(x.dtype)
    taps = w[:, 0, :].astype(work)                       # [C, k]
    acc = np.zeros((b, c, length), work)
    for j in range(k):      # output l sees padded[l .. l + k - 1]: inputs l - k + 1 .. l
        acc += taps[:, j, None] * padded[:, :, j:j + length].astype(work)
    if bias is not None:
        acc += bias.astype(work)[:, None]
    if attrs["activation"] in ("silu", "swish"):  # on the unrounded sum, one rounding in all, as onnxruntime
        acc = acc / (1 + np.exp(-acc))
    y = acc.astype(x.dtype)
    return [y, np.ascontiguousarray(padded[:, :, padded.shape[2] - (k - 1):])]


def _causal_conv_unsupported(attrs):
    if attrs["activation"] not in ("none", "silu", "swish"):
        return f"activation={attrs['activation']!r}; the ONNX values are 'none', 'silu' and 'swish'"
    return None


DEFS: dict[str, OpDef] = {
    "LinearAttention": OpDef(_linear_attention, _linear_attention_types, unsupported=_linear_attention_unsupported),
    "CausalConvWithState": OpDef(_causal_conv, _causal_conv_types, unsupported=_causal_conv_unsupported),
}
