"""pointwise_convs_as_matmul (vdla.compiler.graph.passes.pointwise_matmul): a 1x1 conv the layout
pass left NCHW (58 output channels) becomes W @ pixels with its bias a column Add, between two
Reshape views; strided, padded, grouped, batched or packed ones stay convs. Compiled results
equal onnxruntime's."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import const, onnx_model, ops, tensor


def _model(rng, oc, batch=1, bias=True, **attrs):
    ic = 24
    inits = [const("w", (rng.standard_normal((oc, ic // attrs.get("group", 1), 1, 1)) * 0.3).astype(np.float32))]
    if bias:
        inits.append(const("b", rng.standard_normal(oc).astype(np.float32)))
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"], name="pw", **attrs),
             helper.make_node("Relu", ["c"], ["y"])]
    return onnx_model(nodes, [tensor("x", (batch, ic, 7, 9))], [tensor("y", None)], inits)


def _check(rng, model, batch=1):
    x = rng.standard_normal((batch, 24, 7, 9)).astype(np.float32)
    np.testing.assert_allclose(vdla_run(model, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_a_narrow_pointwise_conv_is_a_matmul_over_the_pixels(bias, rng):
    model = _model(rng, 58, bias=bias)
    g = optimize(import_onnx(model), fuse=False)
    mm = next(n for n in g.nodes if n.op == "MatMul")
    assert mm.name == "pw" and [g.types[t].shape for t in (*mm.inputs, mm.outputs[0])] == [(58, 24), (24, 63), (58, 63)]
    assert "Conv" not in ops(g) and ops(g).count("Reshape") == 2 and ops(g).count("Add") == int(bias)
    _check(rng, model)


@pytest.mark.parametrize("oc,batch,attrs", [
    (58, 1, {"strides": [2, 2]}), (58, 1, {"pads": [1, 1, 0, 0]}), (58, 1, {"group": 2}), (58, 2, {}),
    (32, 1, {}),     # whole blocks of 16: packed, ConvNCHWc
])
def test_other_convs_stay_convs(oc, batch, attrs, rng):
    model = _model(rng, oc, batch, **attrs)
    g = optimize(import_onnx(model), fuse=False)
    assert "MatMul" not in ops(g) and ({"Conv", "ConvNCHWc"} & set(ops(g)))
    _check(rng, model, batch)
