"""Shape-making and rearranging ops (host_ops.shape_ops) against onnxruntime, compiled and as host
steps: broadcasting and zero-size shapes, every dtype source, every mode and axis choice, and the
operand values the ONNX definition forbids."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_oracle import check_node, node_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError
from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError


def _rejected(error, match, *args, **kwargs):
    with pytest.raises(error, match=match):
        import_onnx(node_model(*args, **kwargs))


# -- Expand, Tile, ConstantOfShape ------------------------------------------------------------------

@pytest.mark.parametrize("x_shape, shape", [
    ((3, 1), [2, 1, 4]),        # grows on both sides
    ((2, 3, 1), [4]),           # a shorter shape broadcasts from the right
    ((2, 3), [1, 1]),           # ones keep the input's dims
    ((1, 3), [0, 3]),           # a zero-size dim
    ((), [2, 2]),               # a scalar
])
def test_expand_broadcasts_both_ways(x_shape, shape, rng):
    x = rng.standard_normal(x_shape).astype(np.float32)
    check_node("Expand", {"x": x, "shape": np.array(shape, np.int64)}, constants={"shape"})


def test_expand_keeps_integer_and_bool_dtypes(rng):
    check_node("Expand", {"x": rng.integers(-5, 5, (1, 4)).astype(np.int32), "shape": np.array([3, 4])},
               constants={"shape"})
    check_node("Expand", {"x": np.array([[True], [False]]), "shape": np.array([2, 3])}, constants={"shape"})


def test_expand_to_a_shape_that_does_not_broadcast_names_it():
    _rejected(InvalidModelError, r"shape \[3\] does not broadcast with the input's \[2\]", "Expand",
              {"x": np.zeros(2, np.float32), "shape": np.array([3])}, constants={"shape"})
    _rejected(InvalidModelError, r"shape \[-1, 2\] has a negative value", "Expand",
              {"x": np.zeros(2, np.float32), "shape": np.array([-1, 2])}, constants={"shape"})


@pytest.mark.parametrize("repeats", [[2, 1, 3], [1, 1, 1], [0, 2, 1]])
def test_tile(repeats, rng):
    check_node("Tile", {"x": rng.standard_normal((2, 3, 1)).astype(np.float32),
                        "repeats": np.array(repeats, np.int64)}, constants={"repeats"})


def test_tile_integers(rng):
    check_node("Tile", {"x": rng.integers(-9, 9, (3,)).astype(np.int64), "repeats": np.array([4])},
               constants={"repeats"})


def test_tile_needs_one_repeat_per_dim():
    _rejected(InvalidModelError, r"repeats \[2\] has 1 values for a rank-2 input", "Tile",
              {"x": np.zeros((2, 2), np.float32), "repeats": np.array([2])}, constants={"repeats"})


# [] is a 0-d constant graph output: the artifact keeps it 0-d (np.ascontiguousarray made it 1-d).
@pytest.mark.parametrize("shape", [[2, 3], [4], [], [3, 0]])
def test_constant_of_shape_defaults_to_float32_zero(shape):
    check_node("ConstantOfShape", {"shape": np.array(shape, np.int64)}, constants={"shape"})


@pytest.mark.parametrize("value", [np.array([7], np.int64), np.array([-1.5], np.float16), np.array([True]),
                                   np.array([3], np.uint8), np.array([2.25], np.float64)])
def test_constant_of_shape_takes_value_and_dtype_from_the_attribute(value):
    tensor = helper.make_tensor("value", helper.np_dtype_to_tensor_dtype(value.dtype), [1], value.tolist())
    check_node("ConstantOfShape", {"shape": np.array([2, 3], np.int64)}, {"value": tensor}, constants={"shape"})


def test_constant_of_shape_beyond_the_fold_limit_runs_as_a_step():
    """8 MB is left to run time: the shape then travels as an attribute, the dtype with the value."""
    tensor = helper.make_tensor("value", TensorProto.INT32, [1], [5])
    check_node("ConstantOfShape", {"shape": np.array([1000, 2000], np.int64)}, {"value": tensor},
               constants={"shape"})


def test_constant_of_shape_value_of_an_unsupported_type():
    tensor = helper.make_tensor("value", TensorProto.BFLOAT16, [1], [1.0])
    _rejected(UnsupportedModelError, r"ConstantOfShape.*value of type bfloat16; supported: .*float32",
              "ConstantOfShape", {"shape": np.array([2])}, {"value": tensor}, constants={"shape"})


# -- Range, Size ------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, limit, delta, dtype", [
    (3, 9, 3, np.int32), (10, 4, -2, np.int32), (10, 4, 3, np.int64), (-7, 8, 5, np.int16),
    (0.0, 1.0, 0.1, np.float32), (1.0, -2.5, -0.3, np.float64), (5.0, 5.0, 1.0, np.float32),
])
def test_range(start, limit, delta, dtype):
    bounds = {"start": np.array(start, dtype), "limit": np.array(limit, dtype), "delta": np.array(delta, dtype)}
    check_node("Range", bounds, constants=set(bounds), rtol=1e-6)


def test_range_beyond_the_fold_limit_keeps_its_dtype():
    """2M int32 values are left to run time, where only Python numbers remain of the operands."""
    bounds = {"start": np.int32(-5), "limit": np.int32(2_000_000), "delta": np.int32(1)}
    check_node("Range", {k: np.array(v) for k, v in bounds.items()}, constants=set(bounds))


def test_range_of_zero_delta_names_it():
    bounds = {"start": np.array(0), "limit": np.array(4), "delta": np.array(0)}
    _rejected(InvalidModelError, "delta must not be 0", "Range", bounds, constants=set(bounds))


def test_range_unsupported_stash_type():
    bounds = {k: np.array(1, np.float16) for k in ("start", "limit", "delta")}
    _rejected(UnsupportedModelError, r"stash_type 16; supported: 1 \(float\)", "Range", bounds,
              {"stash_type": 16}, constants=set(bounds))


@pytest.mark.parametrize("shape, dtype", [((2, 3, 4), np.float32), ((0, 3), np.int8), ((), np.bool_)])
def test_size(shape, dtype):
    check_node("Size", {"x": np.zeros(shape, dtype)})


# -- EyeLike, Trilu ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 2)])
@pytest.mark.parametrize("k", [0, 1, -2, 7])
def test_eye_like(shape, k):
    check_node("EyeLike", {"x": np.zeros(shape, np.float32)}, {"k": k})


def test_eye_like_dtype_attribute():
    check_node("EyeLike", {"x": np.zeros((3, 4), np.float32)}, {"dtype": TensorProto.INT32, "k": -1})
    check_node("EyeLike", {"x": np.zeros((2, 2), np.int64)})


def test_eye_like_needs_a_matrix():
    _rejected(InvalidModelError, r"input has shape \[2, 2, 2\]; EyeLike takes a 2-D input", "EyeLike",
              {"x": np.zeros((2, 2, 2), np.float32)})


def test_eye_like_unsupported_dtype():
    _rejected(UnsupportedModelError, r"dtype 16 \(an ONNX TensorProto type\); supported: 1 \(float32\)",
              "EyeLike", {"x": np.zeros((2, 2), np.float32)}, {"dtype": TensorProto.BFLOAT16})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 0, 2, 10, -10])
def test_trilu(upper, k, rng):
    inputs = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    if k is not None:
        inputs["k"] = np.array(k, np.int64)
    check_node("Trilu", inputs, {"upper": upper}, constants={"k"})


def test_trilu_needs_a_matrix():
    _rejected(InvalidModelError, r"input has shape \[4\]; Trilu takes a matrix", "Trilu",
              {"x": np.zeros(4, np.float32)})


# -- DepthToSpace, SpaceToDepth -------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("blocksize, shape", [(2, (1, 8, 2, 3)), (3, (2, 9, 1, 2)), (1, (1, 2, 2, 2))])
def test_depth_to_space(mode, blocksize, shape, rng):
    check_node("DepthToSpace", {"x": rng.standard_normal(shape).astype(np.float32)},
               {"blocksize": blocksize, "mode": mode})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("blocksize, shape", [(2, (1, 2, 4, 6)), (3, (2, 1, 3, 6))])
def test_space_to_depth(mode, blocksize, shape, rng):
    check_node("SpaceToDepth", {"x": rng.standard_normal(shape).astype(np.float32)},
               {"blocksize": blocksize, "mode": mode})


def test_space_to_depth_before_opset_28_has_no_mode(rng):
    check_node("SpaceToDepth", {"x": rng.standard_normal((1, 3, 4, 4)).astype(np.float32)}, {"blocksize": 2},
               opset=13)


def test_block_sizes_that_do_not_divide_are_named():
    _rejected(InvalidModelError, r"6 channels do not split into blocksize\^2 = 4", "DepthToSpace",
              {"x": np.zeros((1, 6, 2, 2), np.float32)}, {"blocksize": 2})
    _rejected(InvalidModelError, r"height 3 and width 4 must both be multiples of blocksize 2", "SpaceToDepth",
              {"x": np.zeros((1, 1, 3, 4), np.float32)}, {"blocksize": 2})


# -- ReverseSequence, Shape -----------------------------------------------------------------------

@pytest.mark.parametrize("time_axis, batch_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(time_axis, batch_axis, rng):
    shape = (4, 3, 2) if time_axis == 0 else (3, 4, 2)        # 4 time steps, 3 sequences
    lens = np.array([4, 0, 2], np.int64)
    check_node("ReverseSequence", {"x": rng.standard_normal(shape).astype(np.float32), "lens": lens},
               {"time_axis": time_axis, "batch_axis": batch_axis})


def test_reverse_sequence_length_beyond_the_time_axis_is_an_operand_error():
    with pytest.raises(OperandError, match=r"sequence_lens holds 5, outside 0..4"):
        host_ops.run("ReverseSequence", [np.zeros((4, 2), np.float32), np.array([1, 5])],
                     {"time_axis": 0, "batch_axis": 1})


def test_reverse_sequence_axes_must_be_zero_and_one():
    _rejected(InvalidModelError, r"batch_axis 0 and time_axis 0 must be 0 and 1", "ReverseSequence",
              {"x": np.zeros((2, 2), np.float32), "lens": np.array([1, 1])}, {"time_axis": 0, "batch_axis": 0})


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": -1}, {"start": -3, "end": 3}, {"start": -10},
                                   {"end": 10}, {"start": 3, "end": 1}])
def test_shape_start_and_end(attrs):
    check_node("Shape", {"x": np.zeros((2, 3, 4, 5), np.float32)}, attrs)
