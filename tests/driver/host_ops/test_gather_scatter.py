"""Indexing ops (host_ops.gather_scatter) against onnxruntime, compiled and as host steps: every
axis sign, negative indices, duplicate indices under each reduction, batch dims, slices; an index
outside its range is an OperandError naming the operand, never an IndexError or a wraparound."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError
from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError

REDUCTIONS = ["none", "add", "mul", "max", "min"]


def _rejected(error, match, *args, **kwargs):
    with pytest.raises(error, match=match):
        import_onnx(node_model(*args, **kwargs))


# -- GatherElements, ScatterElements ----------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_gather_elements(axis, rng):
    data = rng.standard_normal((3, 4, 5)).astype(np.float32)
    dim = data.shape[axis]
    # negative indices, and an index tensor smaller than data off the axis
    indices = rng.integers(-dim, dim, (2, 3, 4) if axis % 3 else (6, 3, 4)).astype(np.int64)
    check_node("GatherElements", {"data": data, "indices": indices}, {"axis": axis})


def test_gather_elements_int32_indices(rng):
    data = rng.integers(-50, 50, (4, 3)).astype(np.int32)
    check_node("GatherElements", {"data": data, "indices": np.array([[3, -4, 0], [1, 2, -1]], np.int32)})


def test_gather_elements_index_out_of_range_is_an_operand_error():
    with pytest.raises(OperandError, match=r"indices holds 3 at \[0, 1\], outside the 3 elements it indexes "
                                           r"\(expected -3..2\)"):
        host_ops.run("GatherElements", [np.zeros((3, 2)), np.array([[0, 3]])], {"axis": 0})
    with pytest.raises(OperandError, match=r"indices holds -4"):
        host_ops.run("GatherElements", [np.zeros((3, 2)), np.array([[-4, 0]])], {"axis": 0})


def test_gather_elements_indices_larger_than_data_off_the_axis():
    _rejected(InvalidModelError, r"indices has shape \[2, 3\], larger than data \[2, 2\] on axis 1",
              "GatherElements", {"data": np.zeros((2, 2), np.float32), "indices": np.zeros((2, 3), np.int64)})


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements(reduction, axis, rng):
    data = rng.standard_normal((4, 5)).astype(np.float32)
    dim = data.shape[axis]
    if reduction == "none":     # distinct targets along the axis: the order of writes cannot matter
        perm = rng.permutation(np.arange(-dim, 0))[:3]
        indices = np.stack([perm] * 4, axis=1) if axis == 0 else np.stack([perm] * 4, axis=0)
    else:                       # duplicates: each reduces into its target
        indices = rng.integers(-dim, dim, (3, 4) if axis == 0 else (4, 3))
    updates = rng.standard_normal(indices.shape).astype(np.float32)
    check_node("ScatterElements", {"data": data, "indices": indices.astype(np.int64), "updates": updates},
               {"axis": axis, "reduction": reduction})


def test_scatter_elements_before_opset_16_replaces(rng):
    data = rng.integers(0, 9, (3, 3)).astype(np.int64)
    check_node("ScatterElements", {"data": data, "indices": np.array([[1, 0, 2]]), "updates": np.array([[7, 8, 9]])},
               opset=13)


def test_scatter_elements_index_out_of_range_is_an_operand_error():
    with pytest.raises(OperandError, match=r"indices holds 2 at \[0, 0\], outside the 2 elements"):
        host_ops.run("ScatterElements", [np.zeros((2, 2)), np.array([[2]]), np.array([[1.0]])],
                     {"axis": 1, "reduction": "add"})


def test_scatter_elements_updates_must_match_indices():
    _rejected(InvalidModelError, r"updates has shape \[1, 2\]; expected the shape of indices \[1, 1\]",
              "ScatterElements", {"data": np.zeros((2, 2), np.float32), "indices": np.zeros((1, 1), np.int64),
                                  "updates": np.zeros((1, 2), np.float32)})


def test_unsupported_reduction_is_named():
    _rejected(UnsupportedModelError, r"reduction 'xor'; supported: none, add, mul, max, min", "ScatterElements",
              {"data": np.zeros((2, 2), np.float32), "indices": np.zeros((1, 1), np.int64),
               "updates": np.zeros((1, 1), np.float32)}, {"reduction": "xor"})


# -- GatherND, ScatterND --------------------------------------------------------------------------

@pytest.mark.parametrize("data_shape, index_shape, batch_dims", [
    ((2, 3, 4), (5, 3), 0),         # whole index tuples: one element each
    ((2, 3, 4), (2, 2, 1), 0),      # partial tuples: slices
    ((2, 3, 4), (2, 4, 2), 1),      # one batch dim
    ((2, 3, 4, 5), (2, 3, 2, 1), 2),
    ((4, 3), (2,), 0),              # a single tuple: a scalar out
])
def test_gather_nd(data_shape, index_shape, batch_dims, rng):
    data = rng.standard_normal(data_shape).astype(np.float32)
    dims = np.array(data_shape[batch_dims:batch_dims + index_shape[-1]])
    indices = (rng.integers(0, 1 << 20, index_shape) % (2 * dims)) - dims     # in [-dim, dim - 1]
    check_node("GatherND", {"data": data, "indices": indices.astype(np.int64)}, {"batch_dims": batch_dims})


def test_gather_nd_index_out_of_range_names_the_component():
    with pytest.raises(OperandError, match=r"indices holds 4 at \[1, 1\], outside the 4 elements it indexes"):
        host_ops.run("GatherND", [np.zeros((3, 4)), np.array([[0, 1], [2, 4]])], {"batch_dims": 0})


def test_gather_nd_shapes_are_checked():
    _rejected(InvalidModelError, r"its last dim 3 \(the length of an index tuple\) must be in 1..2", "GatherND",
              {"data": np.zeros((2, 2), np.float32), "indices": np.zeros((1, 3), np.int64)})
    _rejected(InvalidModelError, r"batch_dims 2 must be in 0..1", "GatherND",
              {"data": np.zeros((2, 2), np.float32), "indices": np.zeros((2, 1), np.int64)}, {"batch_dims": 2})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd_elements(reduction, rng):
    data = rng.standard_normal((3, 4)).astype(np.float32)
    if reduction == "none":
        indices = np.array([[0, 1], [-1, -1], [1, -4]])
    else:
        indices = np.array([[0, 1], [2, 3], [0, 1], [-3, 1]])       # [0, 1] three times
    updates = rng.standard_normal(len(indices)).astype(np.float32)
    check_node("ScatterND", {"data": data, "indices": indices.astype(np.int64), "updates": updates},
               {"reduction": reduction})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd_slices(reduction, rng):
    data = rng.integers(-9, 9, (4, 2, 3)).astype(np.int32)
    indices = np.array([[[1]], [[-1]]]) if reduction == "none" else np.array([[[1]], [[1]]])
    updates = rng.integers(-9, 9, (2, 1, 2, 3)).astype(np.int32)
    check_node("ScatterND", {"data": data, "indices": indices.astype(np.int64), "updates": updates},
               {"reduction": reduction})


def test_scatter_nd_index_out_of_range_is_an_operand_error():
    with pytest.raises(OperandError, match=r"indices holds -5 at \[0, 0\], outside the 4 elements"):
        host_ops.run("ScatterND", [np.zeros((4, 2)), np.array([[-5]]), np.zeros((1, 2))], {"reduction": "none"})


def test_scatter_nd_updates_shape_is_checked():
    _rejected(InvalidModelError, r"updates has shape \[2\]; expected \[2, 3\]", "ScatterND",
              {"data": np.zeros((4, 3), np.float32), "indices": np.zeros((2, 1), np.int64),
               "updates": np.zeros(2, np.float32)})


# -- OneHot ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, 1, -2, -3])
def test_one_hot(axis):
    # negative indices count from depth; 5 and -6 are outside [-5, 4]: all-off rows, as the spec says
    indices = np.array([[0, 4, -1], [-5, 5, -6]], np.int64)
    check_node("OneHot", {"indices": indices, "depth": np.array(5, np.int64),
                          "values": np.array([-2, 3], np.float32)}, {"axis": axis}, constants={"depth"})


def test_one_hot_float_indices_and_depth():
    """Non-integer indices and depth are cast to int64 (truncated) before use."""
    check_node("OneHot", {"indices": np.array([0.0, 2.7, -1.2], np.float32), "depth": np.array([4.0], np.float32),
                          "values": np.array([0, 9], np.float32)}, constants={"depth"})


def test_one_hot_depth_and_values_are_checked():
    _rejected(InvalidModelError, r"depth 0 must be at least 1", "OneHot",
              {"indices": np.zeros(2, np.int64), "depth": np.array(0), "values": np.zeros(2, np.float32)},
              constants={"depth"})
    _rejected(InvalidModelError, r"values has shape \[3\]; expected \[2\]", "OneHot",
              {"indices": np.zeros(2, np.int64), "depth": np.array(3), "values": np.zeros(3, np.float32)},
              constants={"depth"})
