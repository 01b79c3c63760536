"""pack_quantized_conv (vdla.compiler.graph.passes.quantized_conv): an eligible QLinearConv (uint8
activations, symmetric int8 weights, per-tensor activation scales) becomes pack -> uint8 x int8
NCHWc convolution -> per-channel requantize -> unpack, with onnxruntime's result; the others keep
the general QLinearConv."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_oracle import ORT_EXACT_INT8_WEIGHTS
from vdla.compiler.compile_model import compile_model
from vdla.compiler.intrin import cpu as cpu_intrinsics
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference
from vdla.driver.executor import Executor

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, ops, tensor

PACKED = ["LayoutPack", "QConvNCHWcInt8", "RequantizeChannels", "LayoutUnpack"]


def _qlinear_conv(rng, channels=8, out_channels=16, group=1, w_zero=0, y_type=TensorProto.UINT8, bias=True,
                  weights=ORT_EXACT_INT8_WEIGHTS, **attrs):
    x_q = rng.integers(0, 256, (1, channels, 6, 5), dtype=np.uint8)
    w_q = rng.integers(*weights, (out_channels, channels // group, 3, 3), dtype=np.int8)
    y_dtype = np.uint8 if y_type == TensorProto.UINT8 else np.int8
    inits = [const("xs", np.float32(0.02)), const("xz", np.uint8(120)), const("w", w_q),
             const("ws", rng.uniform(0.002, 0.01, out_channels).astype(np.float32)),
             const("wz", np.full(out_channels, w_zero, np.int8)), const("ys", np.float32(0.08)),
             const("yz", y_dtype(10))]
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits.append(const("b", rng.integers(-2000, 2000, out_channels, dtype=np.int32)))
        inputs.append("b")
    node = helper.make_node("QLinearConv", inputs, ["y"], name="qconv", group=group, **attrs)
    m = onnx_model([node], [tensor("x", x_q.shape, TensorProto.UINT8)], [tensor("y", None, y_type)], inits)
    return m, x_q


def _agrees_with_onnxruntime(m, g, x_q):
    got = run_reference(g, {"x": x_q})["y"]
    want = onnxruntime_outputs(m, {"x": x_q})[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    # the requantize multiplies in float32 where onnxruntime may not: a .5 tie can round apart
    assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 1
    assert np.mean(got == want) > 0.97


@pytest.mark.parametrize("attrs", [{"pads": [1, 1, 1, 1]}, {"strides": [2, 2]},
                                   {"pads": [2, 0, 1, 2], "dilations": [2, 1]}], ids=["padded", "strided", "dilated"])
def test_an_eligible_conv_is_packed_and_equals_onnxruntime(rng, attrs):
    m, x_q = _qlinear_conv(rng, **attrs)
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == PACKED
    conv = g.nodes[1]
    assert conv.attrs["pad_value"] == 120                # padded with the input's zero point
    _agrees_with_onnxruntime(m, g, x_q)


def _qlinear_conv_numpy(m, x_q):
    """The ONNX definition of QLinearConv, in int64 and float64 (onnxruntime has no uint8-in,
    int8-out kernel)."""
    c = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    a = {at.name: helper.get_attribute_value(at) for at in m.graph.node[0].attribute}
    top, left, bottom, right = a["pads"][0], a["pads"][1], a["pads"][2], a["pads"][3]
    x = np.pad(x_q.astype(np.int64), ((0, 0), (0, 0), (top, bottom), (left, right)),
               constant_values=int(c["xz"])) - int(c["xz"])
    w = c["w"].astype(np.int64)
    oc, _, kh, kw = w.shape
    oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    acc = np.zeros((1, oc, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            acc += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    acc += c["b"].astype(np.int64).reshape(1, -1, 1, 1)
    real = acc * (np.float64(c["xs"]) * c["ws"].astype(np.float64).reshape(1, -1, 1, 1) / np.float64(c["ys"]))
    info = np.iinfo(c["yz"].dtype)
    return np.clip(np.rint(real) + int(c["yz"]), info.min, info.max).astype(c["yz"].dtype)


def test_an_int8_output_equals_the_onnx_definition(rng):
    m, x_q = _qlinear_conv(rng, y_type=TensorProto.INT8, pads=[1, 0, 2, 1])
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == PACKED
    got, want = run_reference(g, {"x": x_q})["y"], _qlinear_conv_numpy(m, x_q)
    assert got.dtype == np.int8 and got.shape == want.shape
    assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 1 and np.mean(got == want) > 0.97


@pytest.mark.parametrize("signed", [True, False], ids=["host_rules", "unsigned_products"])
@pytest.mark.parametrize("weights", [(-127, 128), (-128, 128)], ids=["symmetric", "with_minus_128"])
def test_the_compiled_conv_equals_the_onnx_definition_over_full_range_operands(rng, weights, signed, monkeypatch):
    """Activations and weights over their whole ranges (every onnxruntime x86 kernel without VNNI
    saturates some of these sums; the oracle is the definition in numpy's integers). Weights
    without -128 carry their channel sums (the signed products of AVX2 hosts), with it not; a
    target that multiplies unsigned bytes (VNNI, Arm: unsigned_products) takes the sums and
    leaves them alone, still a kernel."""
    if not signed:
        monkeypatch.setattr(cpu_intrinsics, "signed_products", lambda target: False)
    m, x_q = _qlinear_conv(rng, channels=16, out_channels=32, weights=weights, pads=[1, 1, 1, 1])
    w = numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w")).copy()
    w.reshape(-1)[:4] = [weights[0], weights[0], 127, 127]     # extreme pairs
    m.graph.initializer.remove(next(i for i in m.graph.initializer if i.name == "w"))
    m.graph.initializer.append(numpy_helper.from_array(w, "w"))
    x_q.reshape(-1)[:4] = [255, 255, 0, 0]
    conv = next(n for n in optimize(import_onnx(m), fuse=False).nodes if n.op == "QConvNCHWcInt8")
    assert len(conv.inputs) == (2 if weights[0] == -128 else 3)
    artifact = compile_model(m)
    assert "host" not in [s.kind for s in artifact.plan.steps]
    got = Executor(artifact).run({"x": x_q})["y"]
    want = _qlinear_conv_numpy(m, x_q)
    assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 1 and np.mean(got == want) > 0.97


def test_the_channel_sums_are_the_weights_sums(rng):
    m, _ = _qlinear_conv(rng, channels=8, out_channels=32, weights=(-127, 128))
    g = optimize(import_onnx(m), fuse=False)
    conv = next(n for n in g.nodes if n.op == "QConvNCHWcInt8")
    w = numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w")).astype(np.int64)
    np.testing.assert_array_equal(g.constants[conv.inputs[2]].reshape(-1), w.reshape(32, -1).sum(axis=1))
    assert g.constants[conv.inputs[2]].shape == (2, 16) and g.constants[conv.inputs[2]].dtype == np.int32


@pytest.mark.parametrize("channels", [3, 6])
def test_channels_in_no_block_of_4_gain_zero_point_channels_of_zero_weights(rng, channels):
    """A stem's 3 input channels (or 6) are padded to a multiple of 4 with the input's zero point
    and the weights with zeros: the packed form, equal to onnxruntime's, and compiled a kernel."""
    m, x_q = _qlinear_conv(rng, channels=channels, pads=[1, 1, 1, 1])
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == ["Pad"] + PACKED
    pad = g.nodes[0]
    assert pad.attrs["constant_value"] == 120 and g.types[pad.outputs[0]].shape[1] == -(-channels // 4) * 4
    _agrees_with_onnxruntime(m, g, x_q)
    artifact = compile_model(m)
    assert "host" not in [s.kind for s in artifact.plan.steps]
    got = Executor(artifact).run({"x": x_q})["y"]
    want = onnxruntime_outputs(m, {"x": x_q})[0]
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_without_bias_and_with_a_narrow_channel_block(rng):
    m, x_q = _qlinear_conv(rng, channels=4, bias=False, pads=[1, 1, 1, 1])
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == PACKED and g.nodes[0].attrs == {"block": 4}
    _agrees_with_onnxruntime(m, g, x_q)


@pytest.mark.parametrize("why, kwargs", [
    ("grouped", {"group": 2}),
    ("asymmetric weights", {"w_zero": 3}),
    ("output channels not a multiple of 16", {"out_channels": 12}),
])
def test_other_convs_keep_the_general_form(rng, why, kwargs):
    m, x_q = _qlinear_conv(rng, **kwargs)
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == ["QLinearConv"], why
    _agrees_with_onnxruntime(m, g, x_q)
