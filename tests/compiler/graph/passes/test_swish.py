"""fold_swish (vdla.compiler.graph.passes.swish): x * Sigmoid(x), either operand order, becomes
one Swish(x) that fuses into the conv that makes x; a Sigmoid whose result is used elsewhere, or
the sigmoid of another tensor, stays; compiled results equal onnxruntime's."""
import numpy as np
from onnx import helper

from ort_oracle import ort_run, vdla_run

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import const, onnx_model, ops, patterns, tensor


def _model(rng, tail):
    """x -> 3x3 conv c -> `tail` (nodes ending in y)."""
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), *tail]
    return onnx_model(nodes, [tensor("x", (1, 16, 6, 5))], [tensor("y", None)], [const("w", w)])


def _check(rng, model):
    x = rng.standard_normal((1, 16, 6, 5)).astype(np.float32)
    for got, want in zip(vdla_run(model, {"x": x}), ort_run(model, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_x_times_its_sigmoid_is_one_swish_fused_into_the_conv(rng):
    for mul in (["c", "s"], ["s", "c"]):
        model = _model(rng, [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", mul, ["y"])])
        g = optimize(import_onnx(model))
        assert "Sigmoid" not in ops(g) and [p for p in patterns(g) if "Swish" in p] == ["ConvNCHWc+Swish"]
        _check(rng, model)


def test_a_sigmoid_of_another_tensor_or_read_elsewhere_stays():
    rng = np.random.default_rng(0)
    other = _model(rng, [helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Sigmoid", ["r"], ["s"]),
                         helper.make_node("Mul", ["c", "s"], ["y"])])
    read_twice = _model(rng, [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["m"]),
                              helper.make_node("Add", ["m", "s"], ["y"])])
    for model in (other, read_twice):
        g = optimize(import_onnx(model), fuse=False)
        assert "Swish" not in ops(g) and "Sigmoid" in ops(g)
        _check(rng, model)


def test_the_accelerator_pipeline_keeps_its_sigmoid(rng):
    """Without the CPU layout passes (layout=False: the accelerator's quantizer and the GPU take
    the graph so) the product stays as written."""
    model = _model(rng, [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])])
    assert {"Sigmoid", "Mul"} <= set(ops(optimize(import_onnx(model), fuse=False, layout=False)))
