"""Ops whose output shape depends on values (host_ops.value_shaped) against onnxruntime: Compress
with a constant condition, NonZero and Unique on compile-time constants (folded); on a run-time
input the latter two are an UnsupportedModelError that says why, which the onnx node tests skip."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_oracle import IR_VERSION, check_node, node_model, ort_run, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError, optimize

X = np.array([[1, 0, 3, 0], [0, 0, 2, -1], [5, 0, 0, 0]], np.float32)


# -- Compress ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis, condition", [
    (0, [True, False, True]), (1, [False, True, True, False]), (-1, [True]), (-2, [False, False, False]),
    (None, [True, False, True, True, False, True, True]),      # flattened, shorter than the input
    (1, [True, False, True, False, False, False]),            # entries past the axis that select nothing
])
def test_compress(axis, condition):
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", {"x": X, "condition": np.array(condition)}, attrs, constants={"condition"})


def test_compress_selecting_past_the_axis_names_the_condition():
    condition = np.array([True, False, False, False, True])
    with pytest.raises(InvalidModelError, match=r"condition selects entry 4, past the 4 slices along axis 1"):
        import_onnx(node_model("Compress", {"x": X, "condition": condition}, {"axis": 1}, constants={"condition"}))


def test_compress_by_a_run_time_condition_is_a_host_step():
    inputs = {"x": X, "condition": np.array([True, False, True])}
    model = node_model("Compress", inputs, {"axis": 0})
    (node,) = optimize(import_onnx(model)).nodes
    assert "input 1 (condition) = 'condition' is known only at run time" in node.host_only
    np.testing.assert_array_equal(vdla_run(model, inputs)[0], ort_run(model, inputs)[0])


# -- NonZero, Unique --------------------------------------------------------------------------------

def test_non_zero_of_a_constant_folds():
    check_node("NonZero", {"x": X}, constants={"x"})
    check_node("NonZero", {"x": np.array([[False, True], [True, True]])}, constants={"x"})


def test_non_zero_of_a_scalar_has_no_coordinate_rows():
    """The spec: a scalar gives shape (0, N), unlike numpy (and onnxruntime 1.32, which gives (1, N))."""
    (y,) = vdla_run(node_model("NonZero", {"x": np.array(7.0, np.float32)}, constants={"x"}), {})
    assert y.shape == (0, 1) and y.dtype == np.int64


@pytest.mark.parametrize("attrs", [{}, {"sorted": 0}, {"axis": 0}, {"axis": 1, "sorted": 0}, {"axis": -1}])
def test_unique_of_a_constant_folds(attrs):
    x = np.array([[1, 0, 1, 0], [3, 2, 3, 2], [1, 0, 1, 0]], np.int64)
    check_node("Unique", {"x": x}, attrs, n_outputs=4, constants={"x"})


def test_unique_float_values_in_first_occurrence_order():
    check_node("Unique", {"x": np.array([2.5, -1, -1, 3, 2.5, 0], np.float32)}, {"sorted": 0}, n_outputs=4,
               constants={"x"})


def _non_zero_of_a_computed_mask(c):
    """Gather(x, Squeeze(NonZero(c > 0))): NonZero's input is a constant only once folded."""
    nodes = [helper.make_node("Greater", ["c", "zero"], ["mask"]), helper.make_node("NonZero", ["mask"], ["nz"]),
             helper.make_node("Squeeze", ["nz", "axis0"], ["picked"]),
             helper.make_node("Gather", ["x", "picked"], ["y"])]
    graph = helper.make_graph(nodes, "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("c", TensorProto.FLOAT, [12], c),
                               helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
                               helper.make_tensor("axis0", TensorProto.INT64, [1], [0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def test_non_zero_of_a_constant_subgraph_folds(rng):
    model = _non_zero_of_a_computed_mask(rng.standard_normal(12).astype(np.float32))
    g = optimize(import_onnx(model, check_shapes=False), stop_after="absorb_constant_operands")
    assert [n.op for n in g.nodes] == ["Gather"]


def test_non_zero_of_a_constant_subgraph_compiles_to_onnxruntime_values(rng):
    model = _non_zero_of_a_computed_mask(rng.standard_normal(12).astype(np.float32))
    x = rng.standard_normal(12).astype(np.float32)
    np.testing.assert_array_equal(vdla_run(model, {"x": x})[0], ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("op, outputs", [("NonZero", 1), ("Unique", 4)])
def test_a_run_time_input_makes_a_host_step_that_says_why(rng, op, outputs):
    """Its outputs' shapes come at run time (the executor keeps them as they come) and equal
    onnxruntime's; the reason is the host step's."""
    model = node_model(op, {"x": X}, n_outputs=outputs)
    (node,) = optimize(import_onnx(model)).nodes
    assert node.host_only.startswith(f"the output shape depends on the values of {op}'s input X, which are known "
                                     "only at run time")
    x = np.round(rng.standard_normal(X.shape)).astype(X.dtype)
    for got, want in zip(vdla_run(model, {"x": x}), ort_run(model, {"x": x})):
        np.testing.assert_array_equal(got, want)


def test_unique_sorted_must_be_0_or_1():
    with pytest.raises(UnsupportedModelError, match=r"sorted 2; expected 0 or 1"):
        import_onnx(node_model("Unique", {"x": X}, {"sorted": 2}, constants={"x"}))
