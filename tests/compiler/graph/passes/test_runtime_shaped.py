"""Nodes of run-time shape (vdla.compiler.graph.passes.runtime_shaped): NonZero of an activation and
everything that reads its output become host steps typed by ONNX's shape inference; their tensors
stay out of the memory plan; a consumer whose own shape is static (Shape) is planned again; the
executor returns what onnxruntime does; and where ONNX cannot type an output, the error names it."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import UnsupportedModelError, optimize
from vdla.compiler.graph.passes import fold_constants
from vdla.driver.executor import Executor

from ..onnx_graphs import onnx_model, onnxruntime_outputs, tensor


def _nonzero_model():
    """The coordinates of x's nonzero entries, transposed, doubled; their count as a shape;
    and, beside them, a static branch that kernels compute."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Transpose", ["nz"], ["t"], name="transpose"),
             helper.make_node("Add", ["t", "t"], ["coords"], name="double"),
             helper.make_node("Shape", ["t"], ["count"], name="shape"),
             helper.make_node("Relu", ["x"], ["r"], name="relu")]
    return onnx_model(nodes, [tensor("x", (3, 4))],
                      [helper.make_tensor_value_info("coords", TensorProto.INT64, None),
                       helper.make_tensor_value_info("count", TensorProto.INT64, None), tensor("r", (3, 4))])


def test_the_nodes_of_run_time_shape_become_host_steps_with_their_reason():
    g = fold_constants(import_onnx(_nonzero_model()))
    hosts = {n.name: n for n in g.nodes if n.host_only}
    assert set(hosts) == {"nonzero", "transpose", "double", "shape"}
    assert "known only at run time" in hosts["nonzero"].host_only
    assert "the shape of its input 'nz'" in hosts["transpose"].host_only
    assert str(g.types["nz"]) == "int64[2,?]" and g.types["count"].shape == (2,) and not g.types["count"].dynamic


def test_tensors_of_run_time_shape_are_outside_the_memory_plan_and_the_rest_compiles():
    artifact = compile_model(_nonzero_model())
    plan = artifact.plan
    assert set(plan.dynamic) == {"nz", "t", "coords"}
    assert not set(plan.dynamic) & set(plan.tensors) and "count" in plan.tensors
    kinds = {s.name: s.kind for s in plan.steps}
    assert kinds["relu"] == "kernel" and kinds["nonzero"] == kinds["double"] == "host"


@pytest.mark.parametrize("density", [0.0, 0.4, 1.0])
def test_the_executor_returns_what_onnxruntime_does(rng, density):
    x = (rng.random((3, 4)) < density).astype(np.float32) * rng.standard_normal((3, 4)).astype(np.float32)
    model = _nonzero_model()
    want = onnxruntime_outputs(model, {"x": x})
    executor = Executor(compile_model(model))
    for _ in range(2):          # twice: the second run must not see the first's tensors
        got = executor.run({"x": x})
        for name, w in zip(("coords", "count", "r"), want):
            assert got[name].dtype == w.dtype
            np.testing.assert_array_equal(got[name], w)


def test_an_output_onnx_cannot_type_is_a_clear_error():
    g = import_onnx(_nonzero_model())
    del g.meta["onnx_types"]["nz"]
    with pytest.raises(UnsupportedModelError, match=r"'nonzero' \(NonZero\).*ONNX's shape inference gives no type "
                                                    r"for its output 'nz'"):
        optimize(g)
