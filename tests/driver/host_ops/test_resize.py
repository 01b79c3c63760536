"""Resize (host_ops.resize) against onnxruntime, compiled and as host steps: every mode, coordinate
transformation and nearest rounding, scales and sizes, axes, aspect-ratio policies, antialias,
tf_crop_and_resize's roi and extrapolation, integer inputs."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, vdla_run
from vdla.compiler.frontend import UnsupportedModelError

COORDINATES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
ROUNDING = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def resize(x, attrs, scales=None, sizes=None, roi=None, opset=None, **kw):
    inputs = {"x": x, "roi": roi, "scales": None if scales is None else np.float32(scales),
              "sizes": None if sizes is None else np.int64(sizes)}
    # onnxruntime computes coordinates and weights in float32: a few ulps of the values apart
    kw.setdefault("atol", 1e-5)
    return check_node("Resize", inputs, attrs, opset=opset, constants={"roi", "scales", "sizes"}, **kw)


@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_modes_and_coordinates_with_sizes(ctm, mode, rng):
    x = rng.standard_normal((1, 2, 10, 7)).astype(np.float32)
    resize(x, {"mode": mode, "coordinate_transformation_mode": ctm}, sizes=[1, 2, 13, 5])
    resize(x, {"mode": mode, "coordinate_transformation_mode": ctm}, sizes=[1, 2, 1, 20])


@pytest.mark.parametrize("ctm", [c for c in COORDINATES if c != "align_corners"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.6, 1.7], [1, 1, 0.7, 0.25]])
def test_modes_and_coordinates_with_scales(ctm, mode, scales, rng):
    x = rng.standard_normal((1, 2, 10, 8)).astype(np.float32)
    resize(x, {"mode": mode, "coordinate_transformation_mode": ctm}, scales=scales)


@pytest.mark.parametrize("rounding", ROUNDING)
@pytest.mark.parametrize("ctm", ["asymmetric", "half_pixel", "align_corners"])
def test_nearest_rounding_on_ties(rounding, ctm, rng):
    """Scales 2.5 and 0.5 put source coordinates on .5 ties (asymmetric) and integers."""
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": rounding}
    if ctm == "align_corners":
        resize(x, attrs, sizes=[2, 3, 11, 4])
    else:
        resize(x, attrs, scales=[1, 1, 2.5, 0.5])


def test_yolo_and_segmentation_upsampling(rng):
    """nearest x2 asymmetric/floor, bilinear x2 with half_pixel, pytorch_half_pixel, align_corners."""
    x = rng.standard_normal((1, 16, 20, 20)).astype(np.float32)
    resize(x, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
           scales=[1, 1, 2, 2])
    for ctm in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        resize(x, {"mode": "linear", "coordinate_transformation_mode": ctm}, sizes=[1, 16, 40, 40])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_downsampling(mode, rng):
    x = rng.standard_normal((1, 2, 12, 9)).astype(np.float32)
    resize(x, {"mode": mode, "antialias": 1}, scales=[1, 1, 0.6, 0.3])
    resize(x, {"mode": mode, "antialias": 1}, sizes=[1, 2, 5, 20])    # upsampling W: no stretch
    resize(x, {"mode": mode, "antialias": 1, "exclude_outside": 1}, scales=[1, 1, 0.45, 0.5])


@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_cubic_coefficient_and_exclude_outside(a, rng):
    x = rng.standard_normal((1, 1, 9, 7)).astype(np.float32)
    for exclude in (0, 1):
        resize(x, {"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exclude}, scales=[1, 1, 1.7, 0.6])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_tf_crop_and_resize_extrapolates(mode, rng):
    x = rng.standard_normal((1, 2, 10, 7)).astype(np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 7.5}
    resize(x, attrs, sizes=[1, 2, 6, 5], roi=np.float32([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4]))
    resize(x, {**attrs, "axes": [3, 2]}, sizes=[1, 8], roi=np.float32([0.1, 0.2, 0.8, 0.7]))


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_axes_and_aspect_ratio_policies(policy, rng):
    x = rng.standard_normal((2, 3, 10, 7)).astype(np.float32)
    resize(x, {"mode": "linear", "keep_aspect_ratio_policy": policy, "axes": [2, 3]}, sizes=[5, 9])
    resize(x, {"mode": "nearest", "keep_aspect_ratio_policy": policy, "axes": [3, 1]}, sizes=[3, 6])


def test_negative_axes_with_scales_and_3d_input(rng):
    resize(rng.standard_normal((2, 3, 10, 7)).astype(np.float32), {"mode": "linear", "axes": [3, -2]},
           scales=[2, 0.5])
    resize(rng.standard_normal((3, 4, 5)).astype(np.float32), {"mode": "linear"}, scales=[2, 0.5, 1.5])
    resize(rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32), {"mode": "nearest"}, scales=[1, 1, 2, 1.5, 0.5])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_integer_inputs_truncate(dtype, mode, rng):
    """Linear results are truncated toward zero: a sum that float32 rounding puts a hair either
    side of an integer truncates to either neighbour, so those may differ by 1."""
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 200), (1, 2, 10, 7)).astype(dtype)
    resize(x, {"mode": mode}, scales=[1, 1, 1.5, 0.7], atol=0 if mode == "nearest" else 1)


def test_opset_11_and_13_forms(rng):
    """Opset 11: roi and scales are required inputs (empty ones stand for none), and the
    tf_half_pixel_for_nn transformation exists."""
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    empty = np.zeros((0,), np.float32)
    for mode in ("nearest", "linear"):
        resize(x, {"mode": mode, "coordinate_transformation_mode": "tf_half_pixel_for_nn"}, scales=[1, 1, 2, 1.5],
               roi=empty, opset=11)
    inputs = {"x": x, "roi": empty, "scales": empty, "sizes": np.int64([1, 2, 9, 4])}
    check_node("Resize", inputs, {"mode": "linear"}, opset=11, constants={"roi", "scales", "sizes"})
    resize(x, {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, sizes=[1, 2, 7, 3], opset=13)


def test_align_corners_with_a_fractional_output_length_is_refused(rng):
    """The spec and onnxruntime divide by (output length - 1), the onnx reference by (scale *
    length - 1): vdla refuses rather than pick one silently."""
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    with pytest.raises(UnsupportedModelError, match="align_corners with scale 0.6 .* fractional output length"):
        resize(x, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, scales=[1, 1, 0.6, 0.6],
               kernels=(False,))


def test_operand_errors_name_the_operand(rng):
    from vdla.driver.host_ops import OperandError, Shaped, output_types
    x = Shaped((1, 2, 3, 4), 4, "float32")
    with pytest.raises(OperandError, match="exactly one of the scales and sizes"):
        output_types("Resize", [x, None, np.float32([1, 1, 2, 2]), np.int64([1, 2, 6, 8])], {})
    with pytest.raises(OperandError, match="scales has 3 entries; expected 4"):
        output_types("Resize", [x, None, np.float32([1, 2, 2])], {})
    with pytest.raises(OperandError, match="must all be positive"):
        output_types("Resize", [x, None, np.float32([1, 1, 0, 2])], {})
    with pytest.raises(OperandError, match="roi must hold 4 values"):
        output_types("Resize", [x, np.float32([0, 1]), None, np.int64([6, 8])],
                     {"axes": [2, 3], "coordinate_transformation_mode": "tf_crop_and_resize"})


def test_unsupported_attribute_values_are_named(rng):
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    for attrs, message in (({"mode": "area"}, "mode 'area' is not supported; supported: nearest, linear, cubic"),
                           ({"nearest_mode": "even"}, "nearest_mode 'even' is not supported")):
        model = node_model("Resize", {"x": x, "roi": None, "scales": np.float32([1, 1, 2, 2])}, attrs,
                           constants={"scales"})
        with pytest.raises(UnsupportedModelError, match=f"op Resize.*{message}"):
            vdla_run(model, {"x": x})
