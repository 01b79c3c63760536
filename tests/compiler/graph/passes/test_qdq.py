"""strip_qdq and qlinear_to_qdq (vdla.compiler.graph.passes.qdq): a QDQ model becomes a float
graph plus the ranges its quantizer pairs carry; a pair that clips at zero becomes a ReLU-like
Clip; weights stay dequantized constants; QOperator nodes become the same QDQ form (checked
against onnxruntime's QLinearConv)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_oracle import ORT_EXACT_INT8_WEIGHTS
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference, verify
from vdla.compiler.graph.passes.qdq import has_qdq, qlinear_to_qdq, strip_qdq

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, ops, tensor


def _pair(x, y, scale, zero_point, name):
    return [helper.make_node("QuantizeLinear", [x, f"{name}.s", f"{name}.z"], [f"{name}.q"], name=f"{name}.quant"),
            helper.make_node("DequantizeLinear", [f"{name}.q", f"{name}.s", f"{name}.z"], [y], name=f"{name}.dequant")], \
        [const(f"{name}.s", np.float32(scale)), const(f"{name}.z", zero_point)]


def _sigmoid_between_pairs(zero_point):
    """x -> Q/DQ -> Sigmoid -> Q/DQ(zero_point) -> y: the second pair's range depends on its type."""
    first, c1 = _pair("x", "xd", 0.05, np.int8(0), "in")
    second, c2 = _pair("s", "y", 1 / 255, zero_point, "out")
    nodes = first + [helper.make_node("Sigmoid", ["xd"], ["s"])] + second
    return onnx_model(nodes, [tensor("x", (2, 8))], [tensor("y", (2, 8))], c1 + c2)


def test_has_qdq_finds_quantizers_and_qoperator_nodes():
    assert has_qdq(import_onnx(_sigmoid_between_pairs(np.int8(0))))
    plain = onnx_model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", (2,))], [tensor("y", (2,))])
    assert not has_qdq(import_onnx(plain))


def test_pairs_are_removed_and_their_ranges_recorded(rng):
    g, ranges = strip_qdq(import_onnx(_sigmoid_between_pairs(np.int8(0))))
    verify(optimize(g, stop_after="infer_types"))
    assert ops(g) == ["Sigmoid", "Identity"]                   # the output keeps its name
    assert g.nodes[0].inputs == ["x"] and g.outputs == ["y"]
    assert ranges["x"]["range"] == pytest.approx(0.05 * 128) and ranges["x"]["method"] == "qdq"
    assert ranges["s"]["range"] == pytest.approx(128 / 255)
    x = rng.uniform(-6, 6, (2, 8)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_a_pair_whose_range_starts_at_zero_becomes_a_clip(rng):
    """uint8 with zero point 0 cannot hold a negative value: the quantizer is a folded ReLU,
    and its top is scale * 255."""
    m = _sigmoid_between_pairs(np.uint8(0))
    g, ranges = strip_qdq(import_onnx(m))
    clip = next(n for n in g.nodes if n.op == "Clip")
    assert clip.inputs == ["s"] and clip.attrs == {"min": 0.0, "max": pytest.approx(1.0)}
    assert ranges[clip.outputs[0]]["range"] == pytest.approx(1.0)
    x = rng.uniform(-6, 6, (2, 8)).astype(np.float32)
    got = run_reference(g, {"x": x})["y"]
    want = onnxruntime_outputs(m, {"x": x})[0]
    # the stripped graph is the float computation: it differs from onnxruntime's int8 one by at
    # most half a step of each quantizer (the sigmoid's slope is at most 1/4)
    assert np.max(np.abs(got - want)) <= 0.05 / 2 / 4 + 1 / 255 / 2 + 1e-6


def test_weights_stay_dequantized_constants_that_fold_to_floats(rng):
    w_q = rng.integers(-127, 128, (4, 3, 1, 1), dtype=np.int8)
    w_scale = rng.uniform(0.01, 0.02, 4).astype(np.float32)
    act, c = _pair("x", "xd", 0.1, np.int8(0), "in")
    nodes = act + [helper.make_node("DequantizeLinear", ["w_q", "w_s"], ["w"], axis=0),
                   helper.make_node("Conv", ["xd", "w"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (1, 3, 2, 2))], [tensor("y", (1, 4, 2, 2))],
                   c + [const("w_q", w_q), const("w_s", w_scale)])
    g, ranges = strip_qdq(import_onnx(m))
    assert "DequantizeLinear" in ops(g) and set(ranges) == {"x"}
    folded = optimize(g, stop_after="fold_constants")
    assert ops(folded) == ["Conv"]
    np.testing.assert_allclose(folded.constants["w"], w_q * w_scale.reshape(4, 1, 1, 1), rtol=1e-6)


def test_a_per_channel_activation_quantizer_is_kept():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)]
    m = onnx_model(nodes, [tensor("x", (1, 2, 3))], [tensor("y", (1, 2, 3))],
                   [const("s", np.array([0.1, 0.2], np.float32)), const("z", np.zeros(2, np.int8))])
    g, ranges = strip_qdq(import_onnx(m))
    assert ops(g) == ["QuantizeLinear", "DequantizeLinear"] and ranges == {}


def test_a_reshape_between_quantizer_and_dequantizer_does_not_hide_the_pair(rng):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("Flatten", ["q"], ["f"]),
             helper.make_node("DequantizeLinear", ["f", "s", "z"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 3, 2))], [tensor("y", (2, 6))],
                   [const("s", np.float32(0.1)), const("z", np.int8(0))])
    g, ranges = strip_qdq(import_onnx(m))
    assert not {"QuantizeLinear", "DequantizeLinear"} & set(ops(optimize(g, stop_after="eliminate_dead_code")))
    assert ranges["Flatten_1.float"]["range"] == pytest.approx(12.8)   # the reshape, now before the pair
    assert ranges["x"]["range"] == pytest.approx(12.8)          # a reshape keeps the range
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(run_reference(g, {"x": x})["y"], x.reshape(2, 6))


def test_qlinear_conv_becomes_the_qdq_form_with_onnxruntimes_result(rng):
    x_q = rng.integers(0, 256, (1, 8, 5, 5), dtype=np.uint8)
    w_q = rng.integers(*ORT_EXACT_INT8_WEIGHTS, (4, 8, 3, 3), dtype=np.int8)
    bias = rng.integers(-500, 500, 4, dtype=np.int32)
    x_scale, w_scale, y_scale = np.float32(0.02), rng.uniform(0.005, 0.01, 4).astype(np.float32), np.float32(0.05)
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    node = helper.make_node("QLinearConv", inputs, ["y"], name="qconv", pads=[1, 1, 1, 1])
    m = onnx_model([node], [tensor("x", x_q.shape, TensorProto.UINT8)], [tensor("y", (1, 4, 5, 5), TensorProto.UINT8)],
                   [const("xs", x_scale), const("xz", np.uint8(128)), const("w", w_q), const("ws", w_scale),
                    const("wz", np.zeros(4, np.int8)), const("ys", y_scale), const("yz", np.uint8(100)),
                    const("b", bias)])
    g = qlinear_to_qdq(import_onnx(m))
    assert ops(g) == ["DequantizeLinear", "DequantizeLinear", "Mul", "DequantizeLinear", "Conv", "QuantizeLinear"]
    got = run_reference(optimize(g, stop_after="infer_types", fuse=False, layout=False), {"x": x_q})["y"]
    want = onnxruntime_outputs(m, {"x": x_q})[0]
    assert got.dtype == np.uint8
    assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 1   # float rounding of a .5 tie
    assert np.mean(got == want) > 0.98
