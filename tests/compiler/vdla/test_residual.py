"""Which residual Adds run in a convolution's epilogue (vdla.compiler.vdla.residual): the conv
that makes the later operand takes it (a downsampling block's shortcut conv, not the main path's
last conv), and nothing is fused in VTA mode, where the conv's output is quantized by the model
(QDQ), or where the conv already has an activation. The numbers the fused kernels compute are
checked against onnxruntime in ops/test_add.py."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import place_nodes
from vdla.compiler.vdla.residual import residual_adds
from vdla.hw import load_config

from .ops.op_oracle import model, node, weights
from ..graph.onnx_graphs import const


def _downsampling_block(rng, shortcut_act: bool = False):
    """x -> conv1 -> relu -> conv2 (main path) and x -> shortcut conv (stride 2 both), Add, ReLU;
    ONNX order puts the shortcut after conv2, as torchvision's export does."""
    nodes = [node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c1"], ["r1"], name="relu1"),
             node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             node("Conv", ["x", "ws"], ["s"], name="shortcut", strides=[2, 2])]
    if shortcut_act:
        nodes.append(node("Relu", ["s"], ["s_r"], name="shortcut_relu"))
    nodes += [node("Add", ["c2", "s_r" if shortcut_act else "s"], ["a"], name="residual"),
              node("Relu", ["a"], ["y"], name="relu2")]
    m = model(nodes, (1, 16, 8, 8), (1, 32, 4, 4), [const("w1", weights(rng, (32, 16, 3, 3))),
                                                    const("w2", weights(rng, (32, 32, 3, 3), 0.1)),
                                                    const("ws", weights(rng, (32, 16, 1, 1)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    return g, place_nodes(g, load_config("pynq"))


def test_the_conv_that_makes_the_later_operand_takes_the_add(rng):
    g, place = _downsampling_block(rng)
    fused = residual_adds(g, place, {})
    assert {conv: add.name for conv, add in fused.items()} == {"shortcut": "residual"}
    assert place["residual"]["fused_into"] == "shortcut" and place["relu2"]["fused_into"] == "residual"
    assert residual_adds(g, place, {}).keys() == fused.keys()       # asked again: the same answer


@pytest.mark.parametrize("why", ["vta_compat", "qdq", "activation"])
def test_nothing_is_fused_where_the_epilogue_cannot_take_the_add(rng, why):
    g, place = _downsampling_block(rng, shortcut_act=why == "activation")
    stats = {"s": {"qdq": {"scale": 0.1, "zero_point": 0, "dtype": "int8"}}} if why == "qdq" else {}
    assert residual_adds(g, place, stats, vta_compat=why == "vta_compat") == {}
    assert not place["residual"].get("fused_into")
