"""Shapes of the sliding-window ops (vdla.compiler.graph.infer_window): auto_pad, ceil_mode,
dilations, groups and ConvTranspose's output_shape / output_padding resolved to the output
onnxruntime computes, the attributes made explicit on the node, and windows or attributes that do
not fit named."""
import numpy as np
import pytest
from onnx import helper, numpy_helper

from vdla.compiler.frontend import InvalidModelError, import_onnx
from vdla.compiler.graph import optimize, run_reference

from .onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor

CONV = [
    ("same_upper_strided", (1, 4, 7, 6), (6, 4, 3, 3), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    ("same_lower_strided", (1, 4, 7, 6), (6, 4, 3, 2), dict(auto_pad="SAME_LOWER", strides=[2, 3])),
    ("dilated", (1, 4, 7, 6), (6, 4, 3, 2), dict(dilations=[2, 3], pads=[1, 0, 2, 1])),
    ("valid", (1, 4, 7, 6), (6, 4, 3, 3), dict(auto_pad="VALID", strides=[2, 1])),
    ("asymmetric_pads", (1, 4, 5, 5), (6, 4, 3, 3), dict(pads=[0, 2, 1, 0], strides=[1, 2])),
    ("grouped", (1, 4, 5, 5), (6, 2, 1, 3), dict(group=2, pads=[0, 1, 0, 1])),
    ("one_d", (2, 4, 9), (3, 4, 4), dict(strides=[3], pads=[1, 2])),
]
POOL = [
    ("max_ceil", "MaxPool", (1, 2, 7, 6), dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)),
    ("max_same_upper", "MaxPool", (1, 2, 7, 6), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("max_dilated", "MaxPool", (1, 2, 9, 8), dict(kernel_shape=[2, 2], dilations=[2, 3], pads=[1, 1, 1, 1])),
    ("average_same_lower", "AveragePool", (1, 2, 7, 6), dict(kernel_shape=[2, 3], strides=[2, 1],
                                                             auto_pad="SAME_LOWER", count_include_pad=1)),
]
TRANSPOSE = [
    ("output_padding", (1, 4, 3, 4), (4, 2, 3, 3), dict(strides=[2, 2], output_padding=[1, 0])),
    ("output_shape", (1, 4, 3, 4), (4, 2, 3, 3), dict(strides=[2, 2], output_shape=[8, 9])),
    ("pads_dilated", (1, 4, 3, 4), (4, 2, 2, 3), dict(strides=[1, 2], dilations=[2, 1], pads=[1, 0, 0, 1])),
]


def _check(m, x_shape, rng):
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    x = rng.standard_normal(x_shape).astype(np.float32)
    (want,) = onnxruntime_outputs(m, {"x": x})
    assert g.types["y"].shape == want.shape
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-5)
    (node,) = g.nodes
    assert node.attrs["auto_pad"] == "NOTSET" and len(node.attrs["pads"]) == 2 * (len(x_shape) - 2)


@pytest.mark.parametrize("name, x_shape, w_shape, attrs", CONV, ids=[c[0] for c in CONV])
def test_conv_shapes_equal_onnxruntimes(name, x_shape, w_shape, attrs, rng):
    w = rng.standard_normal(w_shape).astype(np.float32)
    m = onnx_model([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], [tensor("x", x_shape)],
                   [tensor("y", None)], [const("w", w)])
    _check(m, x_shape, rng)


@pytest.mark.parametrize("name, op, x_shape, attrs", POOL, ids=[p[0] for p in POOL])
def test_pool_shapes_equal_onnxruntimes(name, op, x_shape, attrs, rng):
    m = onnx_model([helper.make_node(op, ["x"], ["y"], **attrs)], [tensor("x", x_shape)], [tensor("y", None)])
    _check(m, x_shape, rng)


@pytest.mark.parametrize("name, x_shape, w_shape, attrs", TRANSPOSE, ids=[t[0] for t in TRANSPOSE])
def test_conv_transpose_shapes_equal_onnxruntimes(name, x_shape, w_shape, attrs, rng):
    w = rng.standard_normal(w_shape).astype(np.float32)
    m = onnx_model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)], [tensor("x", x_shape)],
                   [tensor("y", None)], [const("w", w)])
    _check(m, x_shape, rng)


def _model(nodes, x_shape, inits=()):
    return onnx_model(nodes, [tensor("x", x_shape)], [tensor("y", None)], inits)


def test_negative_and_zero_output_sizes_of_windows_are_rejected():
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", strides=[2, 2])], (1, 3, 2, 2), [w])
    with pytest.raises(InvalidModelError, match=r"'c'.*output spatial size \[0, 0\] is below 1"):
        import_onnx(m)


@pytest.mark.parametrize("node, x_shape, w_shape, match", [
    (helper.make_node("Conv", ["x", "w"], ["y"], name="k", kernel_shape=[3, 2]), (1, 3, 5, 5), (4, 3, 3, 3),
     r"'k'.*kernel_shape \[3, 2\] disagrees with the weights' spatial shape \[3, 3\]"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="g", group=2), (1, 4, 5, 5), (4, 4, 1, 1),
     r"'g'.*input has 4 channels but the weights expect 4 x group 2"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="s", strides=[1, 1, 1]), (1, 3, 5, 5), (4, 3, 1, 1),
     r"'s'.*strides \[1, 1, 1\] has 3 values; the input float32\[1,3,5,5\] has 2 spatial dims, so expected 2"),
    (helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2, 2], pads=[2, 0, 0, 0]), (1, 3, 5, 5),
     None, r"'p'.*pads \[2, 0, 0, 0\] must be smaller than the window \[2, 2\]"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t", strides=[2, 2], output_padding=[2, 0]),
     (1, 3, 3, 3), (3, 2, 3, 3), r"'t'.*output_padding \[2, 0\] must be non-negative and smaller than the stride"),
])
def test_attributes_that_do_not_fit_are_named(node, x_shape, w_shape, match):
    inits = [] if w_shape is None else [numpy_helper.from_array(np.ones(w_shape, np.float32), "w")]
    with pytest.raises(InvalidModelError, match=match):
        import_onnx(_model([node], x_shape, inits))
