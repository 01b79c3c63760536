"""VdlaConv (vdla.compiler.vdla.ops.conv; its semantics: vdla.driver.host_ops.vdla.conv): dense
and depthwise convolutions with their ReLU on the accelerator, in both quantization modes;
what placement refuses, with the reason."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
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
    ({"group": 2, "pads": [1, 1, 1, 1]}, "group=2: grouped convolutions other than depthwise are not offloaded"),
])
def test_what_the_isa_cannot_express_stays_on_the_cpu_with_the_reason(rng, attrs, reason):
    group = attrs.get("group", 1)
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", **attrs)], (1, 32, 8, 8), (1, 32, 8, 8),
              [const("w", weights(rng, (32, 32 // group, 3, 3)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["conv"]
    assert place["device"] == "cpu" and place["reason"].startswith(reason)


def test_few_input_channels_are_cheaper_on_the_board_cpu(rng):
    m = model([node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], (1, 1, 8, 8), (1, 1, 8, 8),
              [const("w", weights(rng, (1, 1, 3, 3)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["conv"]
    assert place["device"] == "cpu" and place["reason"].startswith("1 input channels: cheaper on the CPU")
    assert place["macs"] == 8 * 8 * 9
