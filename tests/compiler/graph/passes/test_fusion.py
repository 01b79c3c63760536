"""fuse_operators (vdla.compiler.graph.passes.fusion): an anchor and the elementwise chain after
it, or an elementwise chain alone, become one Fused node; a tensor read twice or a graph output
ends a chain; data movement stays alone. Results equal the unfused graph's."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference

from ..onnx_graphs import const, onnx_model, patterns, tensor


def test_resnet_fuses_conv_bias_residual_and_relu(resnet):
    g = optimize(resnet, layout=False)
    found = patterns(g)
    assert found.count("Conv+Add+Relu") == 8  # one per basic block: residual add fused
    assert found[0] == "Conv+Relu"
    assert "Gemm" in found
    packed = patterns(optimize(resnet))
    # in NCHWc the bias is an explicit Add: conv, bias, residual and relu are one kernel; the
    # residual branch ends in a 3x3 stride-1 conv, which runs by Winograd in the first stage
    # (16x16 at this image size) and directly in the smaller ones, where the filter outweighs the
    # multiplies Winograd saves (layout.winograd_tile)
    assert packed.count("ConvWinogradNCHWc+Add+Add+Relu") + packed.count("ConvNCHWc+Add+Add+Relu") == 8
    assert packed.count("ConvWinogradNCHWc+Add+Add+Relu") == 2


def test_elementwise_chain_without_an_anchor_fuses(rng):
    nodes = [helper.make_node("Tanh", ["x"], ["a"]), helper.make_node("Mul", ["a", "x"], ["b"]),
             helper.make_node("Add", ["b", "c"], ["y"]), helper.make_node("Transpose", ["y"], ["z"])]
    m = onnx_model(nodes, [tensor("x", (4, 5))], [tensor("z", (5, 4))], [const("c", np.float32(1.5))])
    g = optimize(import_onnx(m))
    assert patterns(g) == ["Tanh+Mul+Add", "Transpose"]
    x = rng.standard_normal((4, 5)).astype(np.float32)
    want = (np.tanh(x) * x + np.float32(1.5)).T
    np.testing.assert_allclose(run_reference(g, {"x": x})["z"], want, rtol=1e-6, atol=1e-6)


def test_a_tensor_read_twice_or_a_graph_output_ends_the_chain(rng):
    """r is read by two nodes and s is a graph output: neither may disappear into a group."""
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Sigmoid", ["r"], ["s"]), helper.make_node("Tanh", ["r"], ["t"]),
             helper.make_node("Exp", ["s"], ["e"])]
    m = onnx_model(nodes, [tensor("x", (1, 3, 4, 4))],
                   [tensor("s", (1, 4, 4, 4)), tensor("t", (1, 4, 4, 4)), tensor("e", (1, 4, 4, 4))],
                   [const("w", w)])
    base = import_onnx(m)
    g = optimize(base, layout=False)
    assert patterns(g) == ["Conv+Relu", "Sigmoid", "Tanh", "Exp"]
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    want, got = run_reference(base, {"x": x}), run_reference(g, {"x": x})
    for name in ("s", "t", "e"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6, err_msg=name)


def test_a_broadcast_that_grows_the_tensor_is_not_fused(rng):
    """x [4, 1] + y [4, 5] has a larger shape than the chain's tensor: it cannot be computed in
    place of the chain's elements."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "y"], ["z"])]
    m = onnx_model(nodes, [tensor("x", (4, 1)), tensor("y", (4, 5))], [tensor("z", (4, 5))])
    g = optimize(import_onnx(m))
    assert patterns(g) == ["Relu", "Add"]
    x, y = rng.standard_normal((4, 1)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x, "y": y})["z"], np.maximum(x, 0) + y, rtol=1e-6)

