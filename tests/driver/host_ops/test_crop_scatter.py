"""CenterCropPad and TensorScatter (host_ops.crop_scatter) against onnxruntime, compiled and as host
steps: crops and pads of odd and even differences on all or some axes (negative axes too), and
KV-cache updates in both modes along inner and outer sequence axes, wrapping around, with and
without write indices; then the operand values the ONNX definition forbids."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError
from vdla.driver.executor import StepError


# -- CenterCropPad ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes", [
    ([3, 8, 7], None),          # crop by 2, pad by 2, keep
    ([4, 3, 10], None),         # odd differences: the crop starts low, the odd pad goes after
    ([5, 4], [1, 2]),
    ([2, 9], [-1, 0]),
    ([10], [1]),
    ([0, 6, 7], None),          # cropped to nothing
    ([5, 6, 7], None),          # the identity
])
def test_center_crop_pad(shape, axes, rng):
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    check_node("CenterCropPad", {"x": x, "shape": np.array(shape, np.int64)}, {} if axes is None else {"axes": axes},
               opset=18, constants={"shape"}, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float16, bool])
def test_center_crop_pad_keeps_the_dtype(dtype, rng):
    x = rng.integers(0, 2, (4, 5)).astype(dtype)
    check_node("CenterCropPad", {"x": x, "shape": np.array([7, 2], np.int64)}, opset=18, constants={"shape"})


def test_center_crop_pad_with_an_int32_shape(rng):
    """onnxruntime's function body mixes the int32 shape with int64 dims and fails; the spec allows
    int32: the same answer as the int64 shape."""
    x = rng.standard_normal((4, 5)).astype(np.float32)
    want = check_node("CenterCropPad", {"x": x, "shape": np.array([7, 2], np.int64)}, opset=18, constants={"shape"})
    model = node_model("CenterCropPad", {"x": x, "shape": np.array([7, 2], np.int32)}, opset=18, constants={"shape"})
    for kernels in (True, False):
        np.testing.assert_array_equal(vdla_run(model, {"x": x}, kernels)[0], want[0])


@pytest.mark.parametrize("shape,attrs,message", [
    ([2, 3], {"axes": [0]}, r"shape \[2, 3\] has 2 lengths for 1 axes \[0\]"),
    ([2, 3], {"axes": [1, -1]}, r"axes \[1, -1\] names an axis more than once"),
    ([2, -1], {}, r"shape \[2, -1\] has a negative length"),
    ([2], {"axes": [2]}, r"axes entry 2 is out of range for a rank-2 input"),
])
def test_center_crop_pad_invalid_operands(shape, attrs, message):
    model = node_model("CenterCropPad", {"x": np.zeros((4, 4), np.float32), "shape": np.array(shape, np.int64)},
                       attrs, opset=18, constants={"shape"})
    with pytest.raises(InvalidModelError, match=message):
        import_onnx(model)


# -- TensorScatter ----------------------------------------------------------------------------------

def _scatter(past, update, write=None, attrs=None):
    check_node("TensorScatter", {"past": past, "update": update, "write_indices": write}, attrs, opset=24,
               rtol=0, atol=0)


@pytest.mark.parametrize("mode,write", [
    ("linear", [0, 2, 5]),          # the last one ends exactly at the cache's end
    ("circular", [6, 7, 2]),        # wraps around
    ("circular", [0, 8, 17]),       # indices of the cache's length and past it
])
def test_tensor_scatter_modes(mode, write, rng):
    past = rng.standard_normal((3, 2, 8, 4)).astype(np.float32)
    update = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    _scatter(past, update, np.array(write, np.int64), {"mode": mode})


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_without_write_indices_writes_from_zero(mode, rng):
    past = rng.standard_normal((2, 6, 5)).astype(np.float32)
    _scatter(past, rng.standard_normal((2, 4, 5)).astype(np.float32), attrs={"mode": mode, "axis": 1})


def test_tensor_scatter_replacing_the_whole_cache_circularly(rng):
    past = rng.standard_normal((2, 8, 3)).astype(np.float16)
    update = rng.standard_normal((2, 8, 3)).astype(np.float16)
    _scatter(past, update, np.array([3, 5], np.int64), {"mode": "circular", "axis": 1})


@pytest.mark.parametrize("axis", [1, 2, -3])
def test_tensor_scatter_sequence_axes_and_integers(axis, rng):
    past = rng.integers(-9, 9, (2, 5, 5, 2)).astype(np.int64)
    update_shape = [2, 5, 5, 2]
    update_shape[axis] = 2
    update = rng.integers(-9, 9, update_shape).astype(np.int64)
    _scatter(past, update, np.array([3, 1], np.int64), {"axis": axis})


@pytest.mark.parametrize("mode,write,message", [
    ("linear", [4, 1], r"write_indices \[4, 1\] plus the update's 2 positions pass the 5 of past_cache's axis 1"),
    ("circular", [-1, 1], r"write_indices \[-1, 1\] has a negative index"),
])
def test_tensor_scatter_write_indices_out_of_range(mode, write, message):
    inputs = {"past": np.zeros((2, 5, 3), np.float32), "update": np.ones((2, 2, 3), np.float32),
              "write_indices": np.array(write, np.int64)}
    model = node_model("TensorScatter", inputs, {"axis": 1, "mode": mode}, opset=24)
    for kernels in (True, False):
        with pytest.raises(StepError, match=message):
            vdla_run(model, inputs, kernels)


@pytest.mark.parametrize("past,update,axis,message", [
    ((2, 5, 3), (2, 2, 3), 0, r"axis 0 is the batch axis"),
    ((2, 5, 3), (2, 6, 3), 1, r"update's 6 positions along axis 1 exceed past_cache's 5"),
    ((2, 5, 3), (2, 2, 4), 1, r"update \[2, 2, 4\] must have past_cache's shape \[2, 5, 3\] except along"),
])
def test_tensor_scatter_invalid_shapes(past, update, axis, message):
    model = node_model("TensorScatter", {"past": np.zeros(past, np.float32), "update": np.zeros(update, np.float32)},
                       {"axis": axis}, opset=24)
    with pytest.raises(InvalidModelError, match=message):
        import_onnx(model)


def test_tensor_scatter_unknown_mode_is_unsupported():
    model = node_model("TensorScatter", {"past": np.zeros((2, 5, 3), np.float32),
                                         "update": np.zeros((2, 2, 3), np.float32)}, {"mode": "ring"}, opset=24)
    with pytest.raises(UnsupportedModelError, match=r"mode='ring'; the ONNX values are 'linear' and 'circular'"):
        import_onnx(model)
