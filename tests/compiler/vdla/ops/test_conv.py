"""VdlaConv (vdla.compiler.vdla.ops.conv; its semantics: vdla.driver.host_ops.vdla.conv): dense
and depthwise convolutions with their ReLU on the accelerator, in both quantization modes;
what placement refuses, with the reason."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes, quantize_for_vdla
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


@pytest.mark.parametrize("vta_compat", [False, True])
def test_conv_relu_and_a_strided_conv(rng, vta_compat):
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"], name="relu1"),
             node("Conv", ["r1", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2])]
    m = model(nodes, (1, 16, 8, 8), (1, 32, 4, 4),
              [const("w1", weights(rng, (32, 16, 3, 3))), const("b1", weights(rng, (32,))),
               const("w2", weights(rng, (32, 32, 3, 3), 0.1))])
    check_offloaded(m, OPS["VdlaConv"].name, ["conv1", "conv2"], rng, vta_compat=vta_compat)


def test_depthwise_conv(rng):
    nodes = [node("Conv", ["x", "w"], ["y"], name="dw", pads=[1, 1, 1, 1], group=32)]
    m = model(nodes, (1, 32, 8, 8), (1, 32, 8, 8), [const("w", weights(rng, (32, 1, 3, 3), 0.5))])
    check_offloaded(m, OPS["VdlaConv"].name, ["dw"], rng)


@pytest.mark.parametrize("attrs, reason", [
    ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, "dilation [2, 2]: the accelerator's convolutions are not dilated"),
    ({"strides": [1, 2], "pads": [1, 1, 1, 1]}, "strides [1, 2]: the accelerator's convolutions use one stride"),
])
def test_what_the_isa_cannot_express_stays_on_the_cpu_with_the_reason(rng, attrs, reason):
    group = attrs.get("group", 1)
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", **attrs)], (1, 32, 8, 8), (1, 32, 8, 8),
              [const("w", weights(rng, (32, 32 // group, 3, 3)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["conv"]
    assert place["device"] == "cpu" and place["reason"].startswith(reason)


@pytest.mark.parametrize("group, width", [(4, 4), (2, 16), (2, 32)])
def test_grouped_convs(rng, group, width):
    """ResNeXt's groups of 4 (four groups to a block) and RegNet's of 16 (a block each), after a
    ReLU (the input's zero point pads), on the depthwise kernel with block-diagonal weights; and
    ResNeXt's last groups of 32 (two blocks each) as copies of one conv kernel."""
    c = group * width
    nodes = [node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             node("Relu", ["c0"], ["r0"], name="relu0"),
             node("Conv", ["r0", "w"], ["y"], name="grouped", pads=[1, 1, 1, 1], strides=[2, 2], group=group)]
    m = model(nodes, (1, 16, 8, 8), (1, c, 4, 4), [const("w0", weights(rng, (c, 16, 3, 3))),
                                                   const("b0", weights(rng, (c,))),
                                                   const("w", weights(rng, (c, width, 3, 3), 0.3))])
    check_offloaded(m, OPS["VdlaConv"].name, ["conv0", "grouped"], rng)


@pytest.mark.parametrize("channels, group", [(48, 2), (24, 2)])
def test_groups_that_do_not_fit_in_blocks_stay_on_the_cpu(rng, channels, group):
    """Groups of 24 channels (neither inside a block of 16 nor whole blocks) or of 12."""
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1], group=group)],
              (1, channels, 8, 8), (1, channels, 8, 8), [const("w", weights(rng, (channels, channels // group, 3, 3)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["conv"]
    assert place["device"] == "cpu" and place["reason"].startswith(
        f"group={group} of {channels // group} input and {channels // group} output channels: the accelerator's "
        "grouped convolutions take groups inside one block of 16 channels or of whole blocks")


def test_few_input_channels_are_cheaper_on_the_board_cpu(rng):
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], (1, 1, 8, 8), (1, 1, 8, 8),
              [const("w", weights(rng, (1, 1, 3, 3)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["conv"]
    assert place["device"] == "cpu" and place["reason"].startswith("1 input channels: cheaper on the CPU")
    assert place["macs"] == 8 * 8 * 9


@pytest.mark.parametrize("kernel, stride, pad", [(7, 2, 3), (3, 2, 1), (4, 4, 0)])
def test_an_rgb_stem_reads_its_input_as_columns(rng, kernel, stride, pad):
    """ResNet's 7x7/2 stem, MobileNet's 3x3/2 and a ViT-style patch embedding over 3 channels:
    the edge's quantization writes each window's taps as channels and the conv runs 1x1 over
    them (3 * 49 taps in 10 blocks instead of 49 blocks using 3 lanes each); the answer is the
    float model's (onnxruntime) and the simulator equals the numpy semantics."""
    out = (16 + 2 * pad - kernel) // stride + 1
    nodes = [node("Conv", ["x", "w", "b"], ["c"], name="stem", pads=[pad] * 4, strides=[stride] * 2,
                  kernel_shape=[kernel] * 2),
             node("Relu", ["c"], ["r"], name="relu"),
             node("Conv", ["r", "w2"], ["y"], name="next", pads=[1, 1, 1, 1])]
    m = model(nodes, (1, 3, 16, 16), (1, 16, out, out),
              [const("w", weights(rng, (32, 3, kernel, kernel))), const("b", weights(rng, (32,))),
               const("w2", weights(rng, (16, 32, 3, 3), 0.1))])
    check_offloaded(m, OPS["VdlaConv"].name, ["stem", "next"], rng)
    calib = {"x": rng.standard_normal((4, 1, 3, 16, 16)).astype(np.float32)}
    graph, *_ = quantize_for_vdla(m, load_config("pynq"), calib)
    stem = next(n for n in graph.nodes if n.name == "stem")
    edge = next(n for n in graph.nodes if stem.inputs[0] in n.outputs)
    taps = 3 * kernel * kernel
    assert edge.attrs["im2col"] == {"kernel": [kernel, kernel], "stride": stride, "pads": [pad] * 4}
    assert (stem.attrs["layer"]["c"], stem.attrs["layer"]["kh"], stem.attrs["layer"]["stride"]) == (-(-taps // 16), 1, 1)


def test_a_stem_with_many_channels_is_read_directly(rng):
    """16 channels fill the lanes: columns would not save micro-ops."""
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], (1, 16, 8, 8), (1, 16, 8, 8),
              [const("w", weights(rng, (16, 16, 3, 3)))])
    graph, *_ = quantize_for_vdla(m, load_config("pynq"), {"x": rng.standard_normal((2, 1, 16, 8, 8))})
    conv = next(n for n in graph.nodes if n.name == "conv")
    assert conv.attrs["layer"]["kh"] == 3
    assert not any("im2col" in n.attrs for n in graph.nodes)
