"""VdlaPool (vdla.compiler.vdla.ops.pool; its semantics: vdla.driver.host_ops.vdla.pool): max,
average and global average pooling on the accelerator's ALU, in both quantization modes; VTA
mode keeps a padded max pooling of a tensor that may be negative on the CPU."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


@pytest.mark.parametrize("vta_compat", [False, True])
def test_conv_then_max_pool_then_global_average(rng, vta_compat):
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"], name="relu"),
             node("MaxPool", ["r"], ["p"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("GlobalAveragePool", ["p"], ["y"], name="gap")]
    m = model(nodes, (1, 16, 8, 8), (1, 32, 1, 1), [const("w", weights(rng, (32, 16, 3, 3)))])
    check_offloaded(m, OPS["VdlaPool"].name, ["maxpool", "gap"], rng, vta_compat=vta_compat)


def test_vta_mode_keeps_a_padded_max_pool_of_a_signed_tensor_on_the_cpu(rng):
    m = model([node("MaxPool", ["x"], ["y"], name="maxpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
              (1, 16, 8, 8), (1, 16, 8, 8), [])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    assert place_nodes(g, load_config("pynq"))["maxpool"]["device"] == "vdla"
    place = place_nodes(g, load_config("pynq"), vta_compat=True)["maxpool"]
    assert place["device"] == "cpu" and "VTA's DMA pads with zeros only" in place["reason"]


@pytest.mark.parametrize("vta_compat", [False, True])
def test_average_pools_padded_and_strided(rng, vta_compat):
    """After a ReLU the input's zero point is -128 (not in VTA mode): padding must read that code,
    the real zero that count_include_pad averages in."""
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"], name="relu"),
             node("AveragePool", ["r"], ["a"], name="avg3", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                  count_include_pad=1),
             node("AveragePool", ["a"], ["y"], name="avg2", kernel_shape=[2, 2], strides=[2, 2])]
    m = model(nodes, (1, 16, 8, 8), (1, 32, 4, 4), [const("w", weights(rng, (32, 16, 3, 3)))])
    check_offloaded(m, OPS["VdlaPool"].name, ["avg3", "avg2"], rng, vta_compat=vta_compat)


def test_an_average_of_valid_elements_only_at_padded_borders_stays_on_the_cpu(rng):
    m = model([node("AveragePool", ["x"], ["y"], name="avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
              (1, 16, 8, 8), (1, 16, 8, 8), [])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["avg"]
    assert place["device"] == "cpu" and "count_include_pad=0" in place["reason"]


def test_a_mean_far_below_its_windows_peak_takes_its_own_scale(rng):
    """The global average of a zero-mean conv output over 16x16 pixels is some 50 times smaller
    than the output's peak: in the input's steps it would keep a handful of codes (about 20 dB);
    in its own calibrated scale it is as precise as any int8 tensor."""
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("GlobalAveragePool", ["c"], ["y"], name="gap")]
    m = model(nodes, (1, 16, 16, 16), (1, 32, 1, 1), [const("w", weights(rng, (32, 16, 3, 3)))])
    check_offloaded(m, OPS["VdlaPool"].name, ["gap"], rng, min_sqnr_db=30.0)


def test_a_mean_of_relu_outputs_takes_its_own_grid_despite_their_zero_point(rng):
    """ReLU outputs have zero point -128; their global average (SqueezeNet's logits) is far
    below their peak and non-negative: the window's zero points go into an added immediate and
    the mean spreads over all 256 codes of its own grid (with one seed 53-57 dB, where keeping
    the input's steps gave 38-39)."""
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"], name="relu"),
             node("GlobalAveragePool", ["r"], ["y"], name="gap")]
    m = model(nodes, (1, 16, 16, 16), (1, 32, 1, 1), [const("w", weights(rng, (32, 16, 3, 3)))])
    check_offloaded(m, OPS["VdlaPool"].name, ["gap"], rng, min_sqnr_db=48.0)
