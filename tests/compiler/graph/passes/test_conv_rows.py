"""pointwise_convs_as_rows (vdla.compiler.graph.passes.conv_rows): a packed 1x1 conv of stride 1
over a small image runs over one row of all its pixels, its elementwise chain (bias, clip, a
residual Add, a per-channel gate) with it, between Reshape views; strided, padded, 3x3, depthwise
and large-image convs keep their rows. Compiled results equal onnxruntime's."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.graph.passes.conv_rows import MAX_PIXELS

from ..onnx_graphs import const, onnx_model, ops, tensor

C = 32


def _block(rng, hw, k=1, group=1, **attrs):
    """x -> Conv(k, bias) -> Clip -> Add(x) -> Mul(gate): a MobileNetV2 projection with a residual
    and a per-channel scale."""
    inits = [const("gate", rng.standard_normal((1, C, 1, 1)).astype(np.float32)),
             const("w", (rng.standard_normal((C, C // group, k, k)) * 0.2).astype(np.float32)),
             const("b", rng.standard_normal(C).astype(np.float32)),
             const("lo", np.float32(0)), const("hi", np.float32(6))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="pw", group=group, **attrs),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["s"]),
             helper.make_node("Mul", ["s", "gate"], ["y"])]
    h, w = hw
    return onnx_model(nodes, [tensor("x", (1, C, h, w))], [tensor("y", None)], inits)


def _check(rng, model, hw):
    feeds = {"x": rng.standard_normal((1, C, *hw)).astype(np.float32)}
    np.testing.assert_allclose(vdla_run(model, feeds)[0], ort_run(model, feeds)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hw", [(14, 14), (7, 9), (28, 28)])
def test_a_pointwise_conv_over_a_small_image_runs_on_one_row(hw, rng):
    model = _block(rng, hw)
    g = optimize(import_onnx(model), fuse=False)
    conv = next(n for n in g.nodes if n.op == "ConvNCHWc")
    pixels = hw[0] * hw[1]
    assert g.types[conv.inputs[0]].shape[2:4] == (1, pixels) and g.types[conv.outputs[0]].shape[2:4] == (1, pixels)
    # the bias, clip, residual and gate on the row; x viewed twice (the conv's input, the residual)
    chain = ops(g)[ops(g).index("ConvNCHWc"):]
    assert chain[:5] == ["ConvNCHWc", "Add", "Clip", "Add", "Mul"] and chain[5] == "Reshape"
    assert all(g.types[n.outputs[0]].shape[2:4] == (1, pixels) for n in g.nodes if n.name in ("pw.bias",))
    _check(rng, model, hw)


@pytest.mark.parametrize("hw,k,group,attrs", [
    ((14, 14), 1, 1, {"strides": [2, 2]}), ((14, 14), 1, 1, {"pads": [1, 1, 1, 1]}),
    ((14, 14), 3, 1, {"pads": [1] * 4}),
    ((14, 14), 1, 2, {}), ((30, 30), 1, 1, {}),
])
def test_other_convs_keep_their_rows(hw, k, group, attrs, rng):
    if hw[0] * hw[1] <= MAX_PIXELS and not attrs and group == 1 and k == 1:
        pytest.fail("this case should be one the pass rewrites")
    model = _block(rng, hw, k, group, **attrs) if not attrs or k > 1 else None
    if model is None:   # a strided or padded 1x1 conv's output has no residual of the input's shape
        inits = [const("w", (rng.standard_normal((C, C, 1, 1)) * 0.2).astype(np.float32))]
        model = onnx_model([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)],
                           [tensor("x", (1, C, *hw))], [tensor("y", None)], inits)
    g = optimize(import_onnx(model), fuse=False)
    for conv in (n for n in g.nodes if n.op.startswith("Conv")):
        assert g.types[conv.inputs[0]].shape[2:4] == hw
    if k == 1 and attrs:
        x = rng.standard_normal((1, C, *hw)).astype(np.float32)
        np.testing.assert_allclose(vdla_run(model, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
    else:
        _check(rng, model, hw)


def test_a_runtime_operand_defined_after_the_conv_ends_the_chain_there(rng):
    """The Add's other operand is computed after the conv (a residual, or a per-channel gate as
    in squeeze-excitation): the chain cannot read it where the conv runs, so it stops and the
    Add runs on the image's own shape."""
    for later in (["Sigmoid", ["x"], ["later"]], ["GlobalAveragePool", ["x"], ["later"]]):
        inits = [const("w", (rng.standard_normal((C, C, 1, 1)) * 0.2).astype(np.float32))]
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node(*later), helper.make_node("Add", ["r", "later"], ["y"])]
        model = onnx_model(nodes, [tensor("x", (1, C, 7, 7))], [tensor("y", None)], inits)
        g = optimize(import_onnx(model), fuse=False)
        add = next(n for n in g.nodes if n.op == "Add" and n.inputs[1].startswith("later"))
        assert g.types[add.outputs[0]].shape[2:4] == (7, 7)
        x = rng.standard_normal((1, C, 7, 7)).astype(np.float32)
        np.testing.assert_allclose(vdla_run(model, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
