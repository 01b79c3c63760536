"""trim_dead_conv_taps (vdla.compiler.graph.passes.conv_taps): kernel rows and columns that read
only padding for every output are dropped (DeepLabV3's dilation 24 and 36 over 16x16: a 1x1
conv), the pads shrink with them, and the result equals onnxruntime's; live taps, and a trim
whose output size a stride's floor set, leave the conv as it was."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.graph.passes import trim_dead_conv_taps

from ..onnx_graphs import const, onnx_model, tensor


def _model(rng, x_shape, w_shape, attrs, bias=True):
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    consts = [const("w", w)] + ([const("b", rng.standard_normal(w_shape[0]).astype(np.float32))] if bias else [])
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], **attrs)
    return onnx_model([node], [tensor("x", x_shape)], [tensor("y", None)], consts)


CASES = {   # x, w, attributes, the kernel left
    "aspp dilation 36": ((1, 16, 16, 16), (8, 16, 3, 3), {"dilations": [36, 36], "pads": [36, 36, 36, 36]}, [1, 1]),
    "aspp dilation 24": ((1, 16, 16, 16), (8, 16, 3, 3), {"dilations": [24, 24], "pads": [24, 24, 24, 24]}, [1, 1]),
    "rows only": ((1, 4, 6, 20), (4, 4, 3, 3), {"dilations": [8, 8], "pads": [8, 8, 8, 8]}, [1, 3]),
    "5x5 on 2x2, no dilation": ((1, 4, 2, 2), (4, 4, 5, 5), {"pads": [2, 2, 2, 2]}, [3, 3]),
    "asymmetric, stride 2": ((1, 4, 9, 9), (4, 4, 3, 3), {"dilations": [6, 6], "pads": [6, 0, 6, 6], "strides": [2, 2]},
                             None),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dead_taps_are_dropped_and_the_result_is_the_same(rng, case, bias):
    x_shape, w_shape, attrs, left = CASES[case]
    model = _model(rng, x_shape, w_shape, attrs, bias)
    g = trim_dead_conv_taps(optimize(import_onnx(model), stop_after="infer_types"))
    (conv,) = [n for n in g.nodes if n.op == "Conv"]
    if left is not None:
        assert list(g.constants[conv.inputs[1]].shape[2:]) == left
    x = rng.standard_normal(x_shape).astype(np.float32)
    (got,), (want,) = vdla_run(model, {"x": x}), ort_run(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_conv_whose_taps_all_read_the_input_is_left_alone(rng):
    model = _model(rng, (1, 4, 16, 16), (4, 4, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]})
    g = optimize(import_onnx(model), stop_after="infer_types")
    before = [(n.op, n.inputs) for n in g.nodes]
    assert [(n.op, n.inputs) for n in trim_dead_conv_taps(g).nodes] == before
