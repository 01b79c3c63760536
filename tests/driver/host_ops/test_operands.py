"""Host ops: operand values the ONNX definition forbids are OperandErrors naming the attribute (never
an IndexError or a silently wrapped axis), and the shape rules agree with the ops and with
onnxruntime."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.driver import host_ops
from vdla.driver.host_ops import HostOpError, OperandError


def test_gather_indices_out_of_range_at_run_time_are_named():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(OperandError, match=r"indices holds 4, outside the 4 elements of axis 1 \(expected -4\.\.3\)"):
        host_ops.run("Gather", [x, np.array([0, 4])], {"axis": 1})
    np.testing.assert_array_equal(host_ops.run("Gather", [x, np.array([-4, 3])], {"axis": 1})[0], x[:, [0, 3]])


@pytest.mark.parametrize("op, inputs, attrs, words", [
    ("Softmax", [np.zeros((2, 3))], {"axis": 2}, "axis 2 is out of range for a rank-2 input: expected -2..1"),
    ("Concat", [np.zeros((2, 3)), np.zeros((2, 3))], {"axis": -3}, "axis -3"),
    ("Split", [np.zeros((2, 6))], {"axis": 1, "split": [2, 2], "num_outputs": 2}, "adds up to 4"),
    ("Reshape", [np.zeros((2, 6))], {"shape": [5, -1]}, "cannot reshape [2, 6]"),
    ("Transpose", [np.zeros((2, 6))], {"perm": [0, 0]}, "not a permutation"),
    ("ReduceMean", [np.zeros((2, 6))], {"axes": [2]}, "axes entry 2"),
    ("Squeeze", [np.zeros((2, 6))], {"axes": [0]}, "size 1"),
    ("Pad", [np.zeros((2, 6))], {"pads": [0, 6, 0, 0], "mode": "reflect"}, "at most 5"),
])
def test_forbidden_operands_raise_operand_errors(op, inputs, attrs, words):
    with pytest.raises(OperandError) as err:
        host_ops.run(op, inputs, attrs)
    assert words in str(err.value)
    assert isinstance(err.value, HostOpError) and isinstance(err.value, ValueError)


def _ort_slice(x, starts, ends, axes, steps):
    ints = [numpy_helper.from_array(np.array(v, np.int64), n)
            for n, v in (("s", starts), ("e", ends), ("a", axes), ("st", steps))]
    graph = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], "slice",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=ints)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_slice_shape_rule_and_op_match_onnxruntime_on_random_bounds(rng):
    x = rng.standard_normal((5, 4, 6)).astype(np.float32)
    bounds = [-2**62, -9, -6, -5, -1, 0, 1, 3, 4, 6, 9, 2**62]
    for _ in range(60):
        axes = list(rng.permutation(3)[:rng.integers(1, 4)])
        starts = [int(rng.choice(bounds)) for _ in axes]
        ends = [int(rng.choice(bounds)) for _ in axes]
        steps = [int(rng.choice([-3, -2, -1, 1, 2, 5])) for _ in axes]
        attrs = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
        want = _ort_slice(x, starts, ends, axes, steps)
        got = host_ops.run("Slice", [x], attrs)[0]
        assert host_ops.output_shapes("Slice", [x], attrs) == [want.shape], attrs
        np.testing.assert_array_equal(got, want, err_msg=str(attrs))


def test_shape_rules_read_only_shapes():
    """A rule sees a data input's shape alone: a 2^40-element input costs nothing."""
    class Shaped:
        shape, ndim, dtype = (2**20, 2**20), 2, "float32"
    assert host_ops.output_shapes("Pad", [Shaped()], {"pads": [1, 2, 3, 4]}) == [(2**20 + 4, 2**20 + 6)]
    assert host_ops.output_shapes("Transpose", [Shaped()], {}) == [(2**20, 2**20)]
    assert host_ops.output_shapes("ReduceMean", [Shaped()], {"axes": [0], "keepdims": 0}) == [(2**20,)]
