"""onnxruntime's transformer operators (vdla.compiler.frontend.contrib_transformer): each one-node
model gives onnxruntime's results through vdla (compiled, and as host steps), on masks with
padding, with and without the optional inputs and outputs; what is not covered is refused by name.
And the model the transformer optimizer makes of the checked-in BERT export runs as onnxruntime
runs it."""
import os
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_oracle import check_node, node_model, ort_run, vdla_run
from vdla.compiler.frontend import UnsupportedModelError, import_onnx

MS = "com.microsoft"
F32 = np.float32
EXPORTS = os.path.join(os.path.dirname(__file__), "..", "..", "e2e", "exports")


def _f(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


def _check(op, inputs, attrs=None, n_outputs=1, constants=(), domain=MS, **kw):
    return check_node(op, inputs, attrs, n_outputs=n_outputs, constants=constants, domain=domain,
                      rtol=kw.pop("rtol", 1e-4), atol=kw.pop("atol", 1e-5), **kw)


# -- activations ------------------------------------------------------------------------------------

def test_gelu(rng):
    _check("Gelu", {"x": _f(rng, 2, 3, 8, scale=3)})


def test_bias_gelu(rng):
    _check("BiasGelu", {"a": _f(rng, 2, 3, 8, scale=3), "b": _f(rng, 8)})


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_fast_gelu(rng, bias):
    _check("FastGelu", {"x": _f(rng, 2, 3, 8, scale=3), "bias": _f(rng, 8) if bias else None})


@pytest.mark.parametrize("alpha", [None, 1.0, -0.5])
def test_quick_gelu(rng, alpha):
    _check("QuickGelu", {"x": _f(rng, 4, 8, scale=4)}, {} if alpha is None else {"alpha": alpha})


def test_bias_add(rng):
    # onnxruntime has no CPU kernel for BiasAdd: its definition, X + bias + skip, is the oracle
    inputs = {"x": _f(rng, 2, 5, 4), "bias": _f(rng, 4), "skip": _f(rng, 2, 5, 4)}
    model = node_model("BiasAdd", inputs, domain=MS)
    for kernels in (True, False):
        (got,) = vdla_run(model, inputs, kernels)
        np.testing.assert_allclose(got, inputs["x"] + inputs["bias"] + inputs["skip"], rtol=1e-6)


# -- normalizations ---------------------------------------------------------------------------------

@pytest.mark.parametrize("beta", [True, False], ids=["beta", "no_beta"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("n_outputs", [1, 4])
def test_skip_layer_norm(rng, beta, bias, n_outputs):
    _check("SkipLayerNormalization", {"x": _f(rng, 2, 3, 16, scale=2), "skip": _f(rng, 2, 3, 16),
                                      "gamma": _f(rng, 16), "beta": _f(rng, 16) if beta else None,
                                      "bias": _f(rng, 16) if bias else None},
           {"epsilon": 1e-5}, n_outputs=n_outputs, constants={"gamma", "beta", "bias"})


@pytest.mark.parametrize("skip_shape", [(1, 3, 16), (3, 16)])
def test_skip_layer_norm_broadcast_skip(rng, skip_shape):
    _check("SkipLayerNormalization", {"x": _f(rng, 2, 3, 16), "skip": _f(rng, *skip_shape), "gamma": _f(rng, 16)})


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_skip_simplified_layer_norm(rng, bias):
    inputs = {"x": _f(rng, 2, 3, 16, scale=2), "skip": _f(rng, 2, 3, 16), "gamma": _f(rng, 16),
              "bias": _f(rng, 16) if bias else None}
    model = node_model("SkipSimplifiedLayerNormalization", inputs, {"epsilon": 1e-6}, n_outputs=4, domain=MS)
    # outputs 0, 2 (inv_std_var) and 3 (the sum); output 1 (mean) is refused below
    model.graph.node[0].output[1] = ""
    del model.graph.output[1]
    feeds = {k: v for k, v in inputs.items() if v is not None}
    want = ort_run(model, feeds)
    for kernels in (True, False):
        for g, w in zip(vdla_run(model, feeds, kernels), want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1])
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_simplified_layer_norm(rng, axis, n_outputs):
    # onnxruntime registers it in the default domain
    scale_shape = (8,) if axis == -1 else (3, 8)
    _check("SimplifiedLayerNormalization", {"x": _f(rng, 2, 3, 8, scale=3), "scale": _f(rng, *scale_shape)},
           {"axis": axis, "epsilon": 1e-5}, n_outputs=n_outputs, domain="")


def _embed_inputs(rng, segments=True, mask=None, position_ids=None, batch=2, seq=5, hidden=8):
    return {"ids": rng.integers(0, 20, (batch, seq)).astype(np.int32),
            "segment_ids": rng.integers(0, 2, (batch, seq)).astype(np.int32) if segments else None,
            "words": _f(rng, 20, hidden), "positions": _f(rng, 7, hidden),
            "segments": _f(rng, 2, hidden) if segments else None,
            "gamma": _f(rng, hidden), "beta": _f(rng, hidden), "mask": mask, "position_ids": position_ids}


@pytest.mark.parametrize("segments", [True, False], ids=["segments", "no_segments"])
@pytest.mark.parametrize("masked", [True, False], ids=["mask", "no_mask"])
def test_embed_layer_norm(rng, segments, masked):
    # a mask with padding on the right, in the middle, and values other than 0 and 1
    mask = np.array([[1, 1, 1, 0, 0], [1, 2, 0, 1, -1]], np.int32) if masked else None
    _check("EmbedLayerNormalization", _embed_inputs(rng, segments, mask), {"epsilon": 1e-5}, n_outputs=3,
           constants={"words", "positions", "segments", "gamma", "beta"})


@pytest.mark.parametrize("shape", [(2, 5), (1, 5)])
def test_embed_layer_norm_position_ids(rng, shape):
    positions = rng.integers(0, 7, shape).astype(np.int32)
    _check("EmbedLayerNormalization", _embed_inputs(rng, position_ids=positions), n_outputs=3,
           constants={"words", "positions", "segments", "gamma", "beta"})


# -- attention --------------------------------------------------------------------------------------

B, S, N, HS = 2, 4, 2, 4            # batch, sequence, heads, head size
HID = N * HS


def _mask(form, total=S):
    if form == "lengths":           # right padding
        return np.array([3, total], np.int32)
    if form == "ends_starts":        # left padding: exclusive ends, then inclusive starts
        return np.array([total, total - 1, 1, 0], np.int32)
    if form == "raw2d":
        return np.array([[1] * (total - 2) + [0, 0], [0, 1] + [1] * (total - 2)], np.int32)
    if form == "raw3d":
        m = np.ones((B, S, total), np.int32)
        m[0, :, -1] = 0
        m[1, 1, 0] = 0
        return m
    return None


MASK_FORMS = [None, "lengths", "ends_starts", "raw2d", "raw3d"]


@pytest.mark.parametrize("mask", MASK_FORMS)
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_masks(rng, mask, unidirectional):
    _check("Attention", {"x": _f(rng, B, S, 6), "w": _f(rng, 6, 3 * HID, scale=0.5), "bias": _f(rng, 3 * HID),
                         "mask_index": _mask(mask)},
           {"num_heads": N, "unidirectional": unidirectional}, constants={"w", "bias"})


def test_attention_options(rng):
    # no bias, V of another width, a custom scale and filter value, attention_bias
    _check("Attention", {"x": _f(rng, B, S, 6), "w": _f(rng, 6, 2 * HID + 2 * N, scale=0.5), "bias": None,
                         "mask_index": _mask("raw2d"), "past": None, "attention_bias": _f(rng, 1, N, S, S)},
           {"num_heads": N, "qkv_hidden_sizes": [HID, HID, 2 * N], "scale": 0.3, "mask_filter_value": -500.0},
           constants={"w"})


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_past(rng, unidirectional):
    past = 3
    _check("Attention", {"x": _f(rng, B, S, 6), "w": _f(rng, 6, 3 * HID, scale=0.5), "bias": _f(rng, 3 * HID),
                         "mask_index": _mask("raw2d", past + S), "past": _f(rng, 2, B, N, past, HS)},
           {"num_heads": N, "unidirectional": unidirectional}, n_outputs=2, constants={"w", "bias"})


@pytest.mark.parametrize("mask", [None, "lengths", "raw2d", "raw3d"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_multi_head_attention(rng, mask, bias):
    _check("MultiHeadAttention", {"q": _f(rng, B, S, HID), "k": _f(rng, B, S, HID), "v": _f(rng, B, S, HID),
                                  "bias": _f(rng, 3 * HID) if bias else None, "mask": _mask(mask)},
           {"num_heads": N})


@pytest.mark.parametrize("mask", ["lengths", "raw2d"])
def test_multi_head_attention_unidirectional(rng, mask):
    _check("MultiHeadAttention", {"q": _f(rng, B, S, HID), "k": _f(rng, B, S, HID), "v": _f(rng, B, S, HID),
                                  "bias": None, "mask": _mask(mask)},
           {"num_heads": N, "unidirectional": 1, "mask_filter_value": -300.0})


def test_multi_head_attention_4d_key_value(rng):
    # key and value given per head (batch, heads, kv sequence, head size), as a cross-attention cache
    _check("MultiHeadAttention", {"q": _f(rng, B, S, HID), "k": _f(rng, B, N, 5, HS), "v": _f(rng, B, N, 5, HS)},
           {"num_heads": N})


def test_multi_head_attention_cross(rng):
    # a key sequence of another length, attention_bias, a custom scale
    kv = 6
    _check("MultiHeadAttention", {"q": _f(rng, B, S, HID), "k": _f(rng, B, kv, HID), "v": _f(rng, B, kv, HID),
                                  "bias": _f(rng, 3 * HID), "mask": _mask("raw2d", kv),
                                  "attention_bias": _f(rng, B, 1, S, kv)}, {"num_heads": N, "scale": 0.25})


def test_multi_head_attention_past(rng):
    past = 3
    _check("MultiHeadAttention", {"q": _f(rng, B, S, HID), "k": _f(rng, B, S, HID), "v": _f(rng, B, S, HID),
                                  "bias": None, "mask": _mask("raw2d", past + S), "attention_bias": None,
                                  "past_key": _f(rng, B, N, past, HS), "past_value": _f(rng, B, N, past, HS)},
           {"num_heads": N}, n_outputs=3)


@pytest.mark.parametrize("layout", ["3d", "4d"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("positions", ["offset", "ids"])
def test_rotary_embedding(rng, layout, interleaved, positions):
    x = _f(rng, B, S, HID) if layout == "3d" else _f(rng, B, N, S, HS)
    pos = np.array([2], np.int64) if positions == "offset" else rng.integers(0, 8, (B, S)).astype(np.int64)
    attrs = {"interleaved": interleaved} | ({"num_heads": N} if layout == "3d" else {})
    _check("RotaryEmbedding", {"x": x, "pos": pos, "cos": _f(rng, 8, HS // 2), "sin": _f(rng, 8, HS // 2)}, attrs,
           constants={"cos", "sin"})


# -- refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, attrs, n_outputs, what", [
    ("Attention", {"x": np.zeros((B, S, 6), F32), "w": np.zeros((6, 3 * HID), F32)},
     {"num_heads": N, "do_rotary": 1}, 1, "do_rotary=1"),
    ("Attention", {"x": np.zeros((B, S, 6), F32), "w": np.zeros((6, 3 * HID), F32),
                   "bias": None, "mask_index": np.zeros((B, 1, S, S), np.int32)},
     {"num_heads": N}, 1, "mask of shape [2, 1, 4, 4]"),
    ("MultiHeadAttention", {"q": np.zeros((B, S, N, 3, HS), F32)}, {"num_heads": N}, 1, "packed QKV"),
    ("SkipSimplifiedLayerNormalization", {"x": np.zeros((B, S, 8), F32), "skip": np.zeros((B, S, 8), F32),
                                          "gamma": np.ones(8, F32)}, {}, 2, "output mean"),
    ("RotaryEmbedding", {"x": np.zeros((B, S, HID), F32), "pos": np.zeros(1, np.int64),
                         "cos": np.zeros((8, 2), F32), "sin": np.zeros((8, 2), F32)},
     {"num_heads": N, "is_packed_batching": 1}, 1, "is_packed_batching=1"),
    ("FastGelu", {"x": np.zeros(4, F32)}, {"approximate": 1}, 1, "'approximate'"),
])
def test_refused(op, inputs, attrs, n_outputs, what):
    model = node_model(op, inputs, attrs, n_outputs=n_outputs, domain=MS,
                       constants={k for k in inputs if k not in ("x", "q")})
    with pytest.raises(UnsupportedModelError, match=f"{op}.*{re.escape(what)}"):
        import_onnx(model)


# -- the BERT export, through onnxruntime's transformer optimizer -----------------------------------

def test_optimized_bert(tmp_path):
    pytest.importorskip("onnxruntime.transformers.optimizer")
    from onnxruntime.transformers.optimizer import optimize_model
    try:
        optimized = optimize_model(os.path.join(EXPORTS, "bert_torchscript.onnx"), model_type="bert", num_heads=2,
                                   hidden_size=32)
    except ImportError as e:        # it needs sympy (symbolic shapes) and torch, optional to vdla
        pytest.skip(f"onnxruntime's transformer optimizer cannot run here: {e}")
    path = str(tmp_path / "bert_optimized.onnx")
    optimized.save_model_to_file(path)
    model = onnx.load(path)
    fused = {n.op_type for n in model.graph.node if n.domain == MS}
    assert fused, "the optimizer fused nothing into com.microsoft operators"
    data = np.load(os.path.join(EXPORTS, "bert.npz"))
    feeds = {"input_ids": data["in_input_ids"], "attention_mask": data["in_attention_mask"]}
    # onnxruntime's own graph optimizations fail on the optimizer's output (a shared initializer
    # "replaced"): the oracle runs the model as written
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)
    for kernels in (True, False):
        got = vdla_run(model, feeds, kernels)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_bert_layer_of_fused_ops(rng):
    """The optimizer's form of an older BERT export: EmbedLayerNormalization's mask_index (valid
    lengths) feeding Attention, then SkipLayerNormalization, in one model."""
    batch, seq, hidden, heads = 2, 6, 8, 2
    inits = {"words": _f(rng, 30, hidden), "positions": _f(rng, seq, hidden), "segments": _f(rng, 2, hidden),
             "gamma": _f(rng, hidden), "beta": _f(rng, hidden), "w": _f(rng, hidden, 3 * hidden, scale=0.5),
             "b": _f(rng, 3 * hidden)}
    nodes = [
        helper.make_node("EmbedLayerNormalization", ["ids", "seg", "words", "positions", "segments", "gamma", "beta",
                                                     "mask"], ["emb", "mask_index"], domain=MS, epsilon=1e-5),
        helper.make_node("Attention", ["emb", "w", "b", "mask_index"], ["att"], domain=MS, num_heads=heads),
        helper.make_node("SkipLayerNormalization", ["att", "emb", "gamma", "beta"], ["y"], domain=MS, epsilon=1e-5),
    ]
    int_input = lambda name: helper.make_tensor_value_info(name, TensorProto.INT32, [batch, seq])  # noqa: E731
    graph = helper.make_graph(nodes, "bert_layer", [int_input("ids"), int_input("seg"), int_input("mask")],
                              [helper.make_empty_tensor_value_info("y")],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17),
                                                                   helper.make_opsetid(MS, 1)])
    feeds = {"ids": rng.integers(0, 30, (batch, seq)).astype(np.int32),
             "seg": rng.integers(0, 2, (batch, seq)).astype(np.int32),
             "mask": np.array([[1, 1, 1, 1, 0, 0], [1] * seq], np.int32)}
    (want,) = ort_run(model, feeds)
    for kernels in (True, False):
        (got,) = vdla_run(model, feeds, kernels)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
