"""Spatial ops (host_ops.spatial) against onnxruntime, compiled and as host steps: LpPool, GlobalLpPool,
MaxUnpool, GridSample, AffineGrid, Col2Im, RoiAlign, DeformConv, NonMaxSuppression."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, ort_run, vdla_run
from vdla.compiler.frontend import UnsupportedModelError


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3]},
    {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 0, 1, 2], "p": 3},
    {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2], "p": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "strides": [2, 2]},
    {"kernel_shape": [2, 2], "dilations": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
])
def test_lp_pool(attrs, rng):
    check_node("LpPool", {"x": rng.standard_normal((2, 3, 8, 7)).astype(np.float32)}, attrs, rtol=1e-5, atol=1e-5)


def test_lp_pool_1d_3d_and_global(rng):
    check_node("LpPool", {"x": rng.standard_normal((1, 2, 9)).astype(np.float32)}, {"kernel_shape": [3], "p": 4},
               atol=1e-5)
    check_node("LpPool", {"x": rng.standard_normal((1, 2, 4, 5, 6)).astype(np.float32)}, {"kernel_shape": [2, 2, 3]},
               atol=1e-5)
    for p in (1, 2, 3):
        # onnxruntime 1.2x has GlobalLpPool and RoiAlign up to opset 21
        check_node("GlobalLpPool", {"x": rng.standard_normal((2, 3, 5, 4)).astype(np.float32)}, {"p": p}, atol=1e-5,
                   opset=21)


def test_max_unpool_inverts_max_pool(rng):
    x = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)
    index = np.stack([rng.permutation(np.arange(6 * 8))[:12] for _ in range(6)]).reshape(2, 3, 3, 4)
    index = index + (np.arange(6) * 48).reshape(2, 3, 1, 1)   # indices count over the whole tensor
    check_node("MaxUnpool", {"x": x, "i": index.astype(np.int64)}, {"kernel_shape": [2, 2], "strides": [2, 2]})
    # output_shape equal to the window's shape (the only form the implementations agree on)
    check_node("MaxUnpool", {"x": x, "i": index.astype(np.int64), "shape": np.int64([2, 3, 6, 8])},
               {"kernel_shape": [2, 2], "strides": [2, 2]}, constants={"shape"})


def test_max_unpool_with_a_larger_output_shape_is_refused():
    x, index = np.ones((1, 1, 2, 2), np.float32), np.int64([[[[5, 7], [13, 15]]]])
    model = node_model("MaxUnpool", {"x": x, "i": index, "s": np.int64([1, 1, 5, 5])},
                       {"kernel_shape": [2, 2], "strides": [2, 2]}, constants={"s"})
    with pytest.raises(UnsupportedModelError, match=r"output_shape \[1, 1, 5, 5\] differs"):
        vdla_run(model, {"x": x, "i": index})


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(mode, padding, align, rng):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype(np.float32)
    grid[0, 0, :3] = [[-1, -1], [1, 1], [0.2, -0.6]]      # corners and exact pixel centers
    check_node("GridSample", {"x": x, "grid": grid},
               {"mode": mode, "padding_mode": padding, "align_corners": align}, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d_and_opset_16_names(mode, rng):
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 2, 3, 4, 3)).astype(np.float32)
    check_node("GridSample", {"x": x, "grid": grid}, {"mode": mode, "padding_mode": "border"}, atol=1e-5)
    x2, grid2 = x[:, :, 0], grid[:, 0, :, :, :2]
    check_node("GridSample", {"x": x2, "grid": np.ascontiguousarray(grid2)},
               {"mode": {"linear": "bilinear"}.get(mode, mode)}, opset=16, atol=1e-5)


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(align, rng):
    theta = rng.standard_normal((2, 2, 3)).astype(np.float32)
    check_node("AffineGrid", {"theta": theta, "size": np.int64([2, 3, 5, 4])}, {"align_corners": align},
               constants={"size"}, atol=1e-5)
    theta3 = rng.standard_normal((1, 3, 4)).astype(np.float32)
    check_node("AffineGrid", {"theta": theta3, "size": np.int64([1, 1, 3, 2, 4])}, {"align_corners": align},
               constants={"size"}, atol=1e-5)


@pytest.mark.parametrize("attrs", [{}, {"strides": [2, 1]}, {"pads": [1, 0, 1, 2]}, {"dilations": [2, 1]},
                                   {"strides": [2, 2], "pads": [1, 1, 0, 1], "dilations": [1, 2]}])
def test_col2im(attrs, rng):
    image, block = [6, 5], [2, 3]
    nd = 2
    strides, dil = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
    pads = attrs.get("pads", [0] * 2 * nd)
    grid = [(image[i] + pads[i] + pads[nd + i] - (block[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(nd)]
    x = rng.standard_normal((2, 3 * 6, int(np.prod(grid)))).astype(np.float32)
    check_node("Col2Im", {"x": x, "image": np.int64(image), "block": np.int64(block)}, attrs,
               constants={"image", "block"}, atol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(mode, ctm, ratio, rng):
    x = rng.standard_normal((2, 3, 10, 9)).astype(np.float32)
    rois = np.float32([[0, 0, 8, 7], [1.5, 2.2, 4.1, 9.9], [-2, -1, 3, 3], [5, 5, 5.2, 5.1], [7, 8, 20, 12]])
    batch = np.int64([0, 1, 1, 0, 1])
    check_node("RoiAlign", {"x": x, "rois": rois, "batch": batch},
               {"mode": mode, "coordinate_transformation_mode": ctm, "sampling_ratio": ratio, "output_height": 3,
                "output_width": 4, "spatial_scale": 0.75}, atol=1e-5, opset=21)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1], "strides": [2, 1]}, {"dilations": [2, 2]},
                                   {"group": 2, "offset_group": 2}])
def test_deform_conv(attrs, rng):
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    group = attrs.get("group", 1)
    w = rng.standard_normal((6, 4 // group, 3, 3)).astype(np.float32)
    strides, pads, dil = attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4), attrs.get("dilations", [1, 1])
    out = [(n + pads[i] + pads[i + 2] - (3 - 1) * dil[i] - 1) // strides[i] + 1 for i, n in enumerate((7, 6))]
    og = attrs.get("offset_group", 1)
    offset = rng.uniform(-2.5, 2.5, (2, og * 2 * 9, *out)).astype(np.float32)
    inputs = {"x": x, "w": w, "offset": offset}
    check_node("DeformConv", inputs, attrs, atol=1e-4, rtol=1e-4)
    bias = rng.standard_normal(6).astype(np.float32)
    mask = rng.uniform(0, 1, (2, og * 9, *out)).astype(np.float32)
    check_node("DeformConv", {**inputs, "b": bias, "mask": mask}, attrs, atol=1e-4, rtol=1e-4)


def _boxes(rng, batch=2, n=12):
    corner = rng.uniform(0, 10, (batch, n, 2))
    size = rng.uniform(0.5, 4, (batch, n, 2))
    boxes = np.concatenate([corner, corner + size], axis=-1).astype(np.float32)
    boxes[:, 1] = boxes[:, 0] + 0.1                            # a near duplicate of box 0
    boxes[:, 2, [0, 2]] = boxes[:, 2, [2, 0]]                  # flipped corners
    return boxes


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_folds_constant_inputs(center, rng):
    boxes = _boxes(rng)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    scores[:, :, 5] = scores[:, :, 6]                          # a tie in score
    inputs = {"boxes": boxes, "scores": scores, "max": np.int64([4]), "iou": np.float32([0.3]),
              "score": np.float32([0.2])}
    check_node("NonMaxSuppression", inputs, {"center_point_box": center}, constants=set(inputs))
    check_node("NonMaxSuppression", {**inputs, "score": None}, {"center_point_box": center},
               constants=set(inputs) - {"score"})


def test_non_max_suppression_of_runtime_boxes_is_a_host_step_with_onnxruntime_results(rng):
    """The number of boxes kept is known only at run time: the executor keeps what it gets."""
    inputs = {"boxes": _boxes(rng), "scores": rng.uniform(0, 1, (2, 3, 12)).astype(np.float32),
              "max": np.int64([4]), "iou": np.float32([0.3])}
    model = node_model("NonMaxSuppression", inputs, {}, constants={"max", "iou"})
    feeds = {"boxes": inputs["boxes"], "scores": inputs["scores"]}
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_unsupported_attribute_values_are_named(rng):
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    grid = np.zeros((1, 2, 2, 2), np.float32)
    model = node_model("GridSample", {"x": x, "grid": grid}, {"mode": "area"})
    with pytest.raises(UnsupportedModelError, match="op GridSample.*mode 'area' is not supported"):
        vdla_run(model, {"x": x, "grid": grid})
