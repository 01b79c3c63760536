"""onnxruntime's quantized contrib operators (vdla.compiler.frontend.contrib_ops): each is imported
as DequantizeLinear -> float op -> QuantizeLinear, and the imported graph gives onnxruntime's
com.microsoft kernels' results (to one quantization step, where those round in fixed point);
what is not covered is refused by name."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.frontend import UnsupportedModelError, import_onnx
from vdla.compiler.frontend.contrib_ops import CONTRIB_DOMAIN
from vdla.compiler.graph import optimize, run_reference

U8 = TensorProto.UINT8


def _model(node, inputs, output_shape, output_type=U8, inits=()):
    graph = helper.make_graph([node], "contrib", inputs, [helper.make_tensor_value_info("y", output_type, output_shape)],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid(CONTRIB_DOMAIN, 1)])


def _scales(**values):
    return [(k, np.float32(v) if isinstance(v, float) else v) for k, v in values.items()]


def _agree(model, feeds, steps=1):
    g = optimize(import_onnx(model), stop_after="infer_types", fuse=False, layout=False)
    assert not [n for n in g.nodes if n.op.startswith("QLinear") or n.op == "QGemm"]
    got = run_reference(g, feeds)["y"]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))) <= steps


def test_qlinear_add(rng):
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN)
    shape = [2, 3, 4]
    m = _model(node, [helper.make_tensor_value_info(n, U8, shape) for n in "ab"], shape,
               inits=_scales(**{"as": 0.05, "az": np.uint8(120), "bs": 0.02, "bz": np.uint8(10), "ys": 0.07,
                                "yz": np.uint8(60)}))
    feeds = {n: rng.integers(0, 256, shape, dtype=np.uint8) for n in "ab"}
    _agree(m, feeds)


def test_qlinear_global_average_pool(rng):
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN,
                            channels_last=0)
    m = _model(node, [helper.make_tensor_value_info("x", U8, [1, 4, 5, 3])], [1, 4, 1, 1],
               inits=_scales(xs=0.1, xz=np.uint8(100), ys=0.05, yz=np.uint8(128)))
    _agree(m, {"x": rng.integers(0, 256, (1, 4, 5, 3), dtype=np.uint8)})


@pytest.mark.parametrize("quantized_output", [True, False], ids=["uint8_out", "float_out"])
def test_qgemm(rng, quantized_output):
    b = rng.integers(0, 256, (6, 4), dtype=np.uint8)          # [N, K] with transB
    inputs = ["a", "as", "az", "b", "bs", "bz", "c"] + (["ys", "yz"] if quantized_output else [])
    node = helper.make_node("QGemm", inputs, ["y"], domain=CONTRIB_DOMAIN, transB=1, alpha=1.0)
    values = {"as": 0.03, "az": np.uint8(128), "b": b, "bs": 0.02, "bz": np.uint8(127),
              "c": rng.integers(-2000, 2000, 6, dtype=np.int32)}
    if quantized_output:
        values.update(ys=0.1, yz=np.uint8(64))
    m = _model(node, [helper.make_tensor_value_info("a", U8, [3, 4])], [3, 6],
               U8 if quantized_output else TensorProto.FLOAT, _scales(**values))
    feeds = {"a": rng.integers(0, 256, (3, 4), dtype=np.uint8)}
    if quantized_output:
        _agree(m, feeds)
    else:
        g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
        want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(run_reference(g, feeds)["y"], want, rtol=1e-5, atol=1e-5)


def test_qlinear_softmax(rng):
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN,
                            axis=-1, opset=13)
    m = _model(node, [helper.make_tensor_value_info("x", U8, [2, 7])], [2, 7],
               inits=_scales(xs=0.05, xz=np.uint8(128), ys=1 / 256, yz=np.uint8(0)))
    _agree(m, {"x": rng.integers(0, 256, (2, 7), dtype=np.uint8)})


@pytest.mark.parametrize("node, match", [
    (helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN,
                      channels_last=1), r"channels_last=1 \(NHWC\) is not supported"),
    (helper.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN),
     r"domain .com.microsoft. is not supported \(the default ONNX domain, and from com.microsoft: Attention, .*"
     r"QGemm, QLinearAdd, QLinearGlobalAveragePool, QLinearSoftmax, .*SkipLayerNormalization"),
    (helper.make_node("QLinearAdd", ["x", "xs", "xz", "x", "xs", "xz", "ys", "yz"], ["y"], domain=CONTRIB_DOMAIN,
                      activation="Relu"), r"attributes \['activation'\] are not supported"),
])
def test_what_is_not_covered_is_refused_by_name(node, match):
    m = _model(node, [helper.make_tensor_value_info("x", U8, [1, 2, 2, 2])], [1, 2, 1, 1],
               inits=_scales(xs=0.1, xz=np.uint8(0), ys=0.1, yz=np.uint8(0)))
    with pytest.raises(UnsupportedModelError, match=match):
        import_onnx(m)
