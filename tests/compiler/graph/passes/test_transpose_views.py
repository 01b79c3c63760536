"""transposes_as_views (vdla.compiler.graph.passes.transpose_views): a Transpose that moves only
size-1 axes becomes a Reshape (an alias in the memory plan), one that moves data stays, and the
result equals onnxruntime's."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.driver.executor import Executor

from ..onnx_graphs import onnx_model, onnxruntime_outputs, tensor


@pytest.mark.parametrize("shape, perm, view", [((1, 5, 3), [1, 0, 2], True), ((4, 1, 1, 6), [0, 2, 1, 3], True),
                                               ((1, 5, 3), [0, 2, 1], False), ((2, 1, 3), None, False)])
def test_only_size_one_axes_moving_is_a_view(rng, shape, perm, view):
    attrs = {} if perm is None else {"perm": perm}
    out = tuple(np.transpose(np.zeros(shape), perm).shape)
    m = onnx_model([helper.make_node("Transpose", ["x"], ["y"], **attrs)], [tensor("x", shape)], [tensor("y", out)])
    ops = [n.op for n in optimize(import_onnx(m), stop_after="transposes_as_views").nodes]
    assert ops == (["Reshape"] if view else ["Transpose"])
    x = rng.standard_normal(shape).astype(np.float32)
    (want,) = onnxruntime_outputs(m, {"x": x})
    np.testing.assert_array_equal(Executor(compile_model(m)).run({"x": x})["y"], want)
