"""conv_transpose_as_conv (vdla.compiler.graph.passes.conv_transpose): a 2-D ConvTranspose
becomes one Conv over its output phases and the phases' interleave, compiled, equal to
onnxruntime's ConvTranspose for strides, kernels, pads, output padding, output shapes and
bias; what it does not take (groups, dilation, 1-D, runtime weights) stays the op."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_oracle import ort_run, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import const, onnx_model, ops, tensor


def _model(rng, x_shape, w_shape, attrs, bias=True, runtime_weight=False):
    w = (rng.standard_normal(w_shape) / np.sqrt(w_shape[0] * np.prod(w_shape[2:]))).astype(np.float32)
    inputs, consts, names = [tensor("x", x_shape)], [], ["x", "w"]
    if runtime_weight:
        inputs.append(tensor("w", w_shape))
    else:
        consts.append(const("w", w))
    if bias:
        names.append("b")
        consts.append(const("b", rng.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32)))
    node = helper.make_node("ConvTranspose", names, ["y"], **attrs)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    if runtime_weight:
        feeds["w"] = w
    return onnx_model([node], inputs, [tensor("y", None)], consts), feeds


def _check(model, feeds):
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


CASES = {   # x, w [IC, OC, KH, KW], attributes
    "unet 2x2 stride 2": ((1, 32, 8, 8), (32, 16, 2, 2), {"strides": [2, 2]}),
    "dcgan 4x4 stride 2 pad 1": ((2, 16, 7, 6), (16, 8, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "3x3 stride 2 output padding": ((1, 8, 5, 5), (8, 12, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                                                    "output_padding": [1, 1]}),
    "3x3 stride 1": ((1, 5, 9, 7), (5, 3, 3, 3), {"pads": [1, 0, 2, 1]}),
    "5x3 strides 3 and 2": ((1, 6, 4, 5), (6, 7, 5, 3), {"strides": [3, 2], "pads": [2, 1, 0, 1],
                                                           "output_padding": [2, 0]}),
    "1x1 stride 2": ((1, 4, 6, 6), (4, 4, 1, 1), {"strides": [2, 2]}),
    "kernel shorter than stride": ((1, 4, 5, 5), (4, 6, 2, 2), {"strides": [3, 3]}),
    "output shape": ((1, 8, 6, 6), (8, 4, 3, 3), {"strides": [2, 2], "output_shape": [12, 12]}),
    "auto pad same": ((1, 8, 5, 5), (8, 4, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_transposed_conv_runs_as_a_conv_over_its_phases(rng, case, bias):
    x_shape, w_shape, attrs = CASES[case]
    model, feeds = _model(rng, x_shape, w_shape, attrs, bias)
    g = optimize(import_onnx(model))
    assert "ConvTranspose" not in ops(g), ops(g)
    _check(model, feeds)


@pytest.mark.parametrize("case", ["groups", "dilation", "1-D", "runtime weight"])
def test_what_it_does_not_take_stays_the_op(rng, case):
    x_shape, w_shape, attrs = {"groups": ((1, 8, 5, 5), (8, 2, 3, 3), {"group": 2, "strides": [2, 2]}),
                               "dilation": ((1, 4, 5, 5), (4, 4, 3, 3), {"dilations": [2, 2]}),
                               "1-D": ((1, 4, 9), (4, 4, 3), {"strides": [2]}),
                               "runtime weight": ((1, 4, 5, 5), (4, 4, 3, 3), {"strides": [2, 2]})}[case]
    model, feeds = _model(rng, x_shape, w_shape, attrs, runtime_weight=case == "runtime weight")
    assert "ConvTranspose" in ops(optimize(import_onnx(model)))
    _check(model, feeds)
