"""LinearAttention and CausalConvWithState (host_ops.sequence_state) against onnxruntime, compiled and
as host steps: every update rule with per-key-dim and per-head decay and beta, with and without a
past state, grouped and multi-query heads, an explicit scale and float16; every activation with
and without bias and past state, kernels longer than the input and of size 1; that a prompt run
whole equals it run token by token; and the operand values the ONNX definition forbids."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError

OPSET = 27
B, T, D_K, D_V = 2, 5, 4, 3


def _l2_rows(x, heads):
    """Keys of unit length per head, as the delta rules expect."""
    b, t, _ = x.shape
    x4 = x.reshape(b, t, heads, -1)
    return (x4 / np.linalg.norm(x4, axis=-1, keepdims=True)).reshape(x.shape).astype(x.dtype)


def _attention_inputs(rng, rule, h_q, h_kv, per_head=False, past=False, t=T, dtype=np.float32):
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    return {
        "query": rng.standard_normal((B, t, h_q * D_K)).astype(dtype),
        "key": _l2_rows(rng.standard_normal((B, t, h_kv * D_K)), h_kv).astype(dtype),
        "value": rng.standard_normal((B, t, h_kv * D_V)).astype(dtype),
        "past_state": rng.standard_normal((B, h_kv, D_K, D_V)).astype(dtype) if past else None,
        # log-space decays in (-0.9, 0]: gates in (0.4, 1]
        "decay": -np.abs(rng.uniform(0, 0.9, (B, t, h_kv if per_head else h_kv * D_K))).astype(dtype)
        if gated else None,
        "beta": rng.uniform(0, 1, (B, t, 1 if per_head else h_kv)).astype(dtype) if delta else None,
    }


# -- LinearAttention --------------------------------------------------------------------------------

@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("past", [False, True])
def test_linear_attention_rules(rule, heads, per_head, past, rng):
    """per_head: decay [B, T, H_kv] and beta [B, T, 1] instead of [B, T, H_kv * d_k] and [B, T, H_kv]."""
    h_q, h_kv = heads
    check_node("LinearAttention", _attention_inputs(rng, rule, h_q, h_kv, per_head, past),
               {"update_rule": rule, "q_num_heads": h_q, "kv_num_heads": h_kv}, n_outputs=2, opset=OPSET,
               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [0.3, -1.5])
def test_linear_attention_explicit_scale(scale, rng):
    check_node("LinearAttention", _attention_inputs(rng, "gated_delta", 4, 2, past=True),
               {"q_num_heads": 4, "kv_num_heads": 2, "scale": scale, "chunk_size": 2}, n_outputs=2, opset=OPSET,
               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rule", ["linear", "gated_delta"])
def test_linear_attention_float16(rule, rng):
    check_node("LinearAttention", _attention_inputs(rng, rule, 4, 2, past=True, dtype=np.float16),
               {"update_rule": rule, "q_num_heads": 4, "kv_num_heads": 2}, n_outputs=2, opset=OPSET,
               rtol=2e-3, atol=2e-3)


def test_linear_attention_float16_activations_with_a_float32_state(rng):
    """The state's dtype (S) is free of the activations' (T): present_state keeps past_state's."""
    inputs = _attention_inputs(rng, "linear", 4, 2, dtype=np.float16)
    inputs["past_state"] = rng.standard_normal((B, 2, D_K, D_V)).astype(np.float32)
    check_node("LinearAttention", inputs, {"update_rule": "linear", "q_num_heads": 4, "kv_num_heads": 2},
               n_outputs=2, opset=OPSET, rtol=2e-3, atol=2e-3)


def test_linear_attention_prompt_equals_its_tokens_one_by_one(rng):
    """The recurrence's promise: prefill of T tokens = T decode steps threading the state."""
    inputs = _attention_inputs(rng, "gated_delta", 4, 2, past=True)
    attrs = {"q_num_heads": 4, "kv_num_heads": 2}
    whole, state = vdla_run(node_model("LinearAttention", inputs, attrs, n_outputs=2, opset=OPSET),
                            inputs, kernels=False)
    step_state, steps = inputs["past_state"], []
    for i in range(T):
        token = {k: (v if k == "past_state" else v[:, i:i + 1]) for k, v in inputs.items()}
        token["past_state"] = step_state
        out, step_state = vdla_run(node_model("LinearAttention", token, attrs, n_outputs=2, opset=OPSET),
                                   token, kernels=False)
        steps.append(out)
    np.testing.assert_allclose(np.concatenate(steps, axis=1), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(step_state, state, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rule,attrs,drop,message", [
    ("gated", {"q_num_heads": 4, "kv_num_heads": 2}, "decay", "update_rule 'gated' needs the decay input"),
    ("delta", {"q_num_heads": 4, "kv_num_heads": 2}, "beta", "update_rule 'delta' needs the beta input"),
    ("linear", {"q_num_heads": 4, "kv_num_heads": 3}, None, "q_num_heads 4 must be a positive multiple of "
                                                             "kv_num_heads 3"),
    ("linear", {"kv_num_heads": 2}, None, "required attribute 'q_num_heads' is missing|the q_num_heads attribute "
                                          "is required"),
])
def test_linear_attention_invalid_operands(rule, attrs, drop, message, rng):
    inputs = _attention_inputs(rng, rule, 4, 2)
    if drop:
        inputs[drop] = None
    with pytest.raises(InvalidModelError, match=message):
        import_onnx(node_model("LinearAttention", inputs, {"update_rule": rule, **attrs}, n_outputs=2,
                               opset=OPSET))


def test_linear_attention_past_state_of_the_wrong_shape(rng):
    inputs = _attention_inputs(rng, "linear", 4, 2)
    inputs["past_state"] = np.zeros((B, 2, D_V, D_K), np.float32)
    with pytest.raises(InvalidModelError, match=r"past_state \[2, 2, 3, 4\] must be \[B, kv_num_heads, d_k, d_v\]"):
        import_onnx(node_model("LinearAttention", inputs, {"update_rule": "linear", "q_num_heads": 4,
                                                           "kv_num_heads": 2}, n_outputs=2, opset=OPSET))


# -- CausalConvWithState ----------------------------------------------------------------------------

def _conv_inputs(rng, b, c, length, k, bias, past, dtype=np.float32):
    return {"input": rng.standard_normal((b, c, length)).astype(dtype),
            "weight": rng.standard_normal((c, 1, k)).astype(dtype),
            "bias": rng.standard_normal(c).astype(dtype) if bias else None,
            "past_state": rng.standard_normal((b, c, k - 1)).astype(dtype) if past else None}


@pytest.mark.parametrize("activation", ["none", "silu", "swish"])
@pytest.mark.parametrize("shape", [(2, 3, 6, 4), (1, 1, 2, 4), (2, 4, 1, 3), (3, 2, 7, 2), (2, 3, 5, 1)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("past", [False, True])
def test_causal_conv(activation, shape, bias, past, rng):
    """Kernels longer than the input (the state is then partly the old state or zeros) and of size
    1 (an empty state)."""
    check_node("CausalConvWithState", _conv_inputs(rng, *shape, bias, past), {"activation": activation},
               n_outputs=2, opset=OPSET, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ["none", "silu"])
def test_causal_conv_float16(activation, rng):
    check_node("CausalConvWithState", _conv_inputs(rng, 2, 3, 6, 4, True, True, np.float16),
               {"activation": activation}, n_outputs=2, opset=OPSET, rtol=1e-3, atol=1e-3)


def test_causal_conv_prompt_equals_its_tokens_one_by_one(rng):
    inputs = _conv_inputs(rng, 2, 3, 6, 4, True, True)
    attrs = {"activation": "silu"}
    whole, state = vdla_run(node_model("CausalConvWithState", inputs, attrs, n_outputs=2, opset=OPSET), inputs,
                            kernels=False)
    step_state, steps = inputs["past_state"], []
    for i in range(6):
        token = {**inputs, "input": inputs["input"][:, :, i:i + 1], "past_state": step_state}
        out, step_state = vdla_run(node_model("CausalConvWithState", token, attrs, n_outputs=2, opset=OPSET),
                                   token, kernels=False)
        steps.append(out)
    np.testing.assert_allclose(np.concatenate(steps, axis=2), whole, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(step_state, state)


@pytest.mark.parametrize("change,message", [
    ({"weight": np.zeros((3, 2, 4), np.float32)}, r"weight \[3, 2, 4\] must be \[channels, 1, k\] = \[3, 1, k\]"),
    ({"bias": np.zeros(4, np.float32)}, r"bias \[4\] must be \[channels\] = \[3\]"),
    ({"past_state": np.zeros((2, 3, 4), np.float32)}, r"past_state \[2, 3, 4\] must be \[batch, channels, k - 1\]"),
])
def test_causal_conv_invalid_shapes(change, message, rng):
    inputs = {**_conv_inputs(rng, 2, 3, 6, 4, True, True), **change}
    with pytest.raises(InvalidModelError, match=message):
        import_onnx(node_model("CausalConvWithState", inputs, n_outputs=2, opset=OPSET))


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("LinearAttention", "attention", {"update_rule": "mamba", "q_num_heads": 4, "kv_num_heads": 2},
     r"update_rule='mamba'; the ONNX values are 'linear', 'gated', 'delta', 'gated_delta'"),
    ("CausalConvWithState", "conv", {"activation": "gelu"}, r"activation='gelu'; the ONNX values are 'none', 'silu'"),
])
def test_unsupported_attribute_values_are_named(op, inputs, attrs, message, rng):
    inputs = _attention_inputs(rng, "linear", 4, 2) if inputs == "attention" else \
        _conv_inputs(rng, 2, 3, 6, 4, False, False)
    with pytest.raises(UnsupportedModelError, match=message):
        import_onnx(node_model(op, inputs, attrs, n_outputs=2, opset=OPSET))
