"""pack_conv_layout (vdla.compiler.graph.passes.layout): convolution chains in NCHWc, packed once
and unpacked once; constants keep numpy broadcasting; wide 3x3 stride-1 convolutions run as
Winograd. Results agree with the unpacked graph."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference

from ..onnx_graphs import const, onnx_model, ops, tensor


def test_layout_packs_whole_conv_chains(resnet):
    g = optimize(resnet)
    found = ops(g)
    assert "Conv" not in found and found.count("ConvNCHWc") == 0  # all fused
    # packed once at the stem; pooling runs packed; unpacked once, for the flatten of the head
    assert found.count("LayoutPack") == 1 and found.count("LayoutUnpack") == 1
    assert "MaxPoolNCHWc" in found and "GlobalAveragePoolNCHWc" in found
    for node in g.nodes:
        for inner in node.body or [node]:
            if inner.op in ("ConvNCHWc", "ConvWinogradNCHWc"):
                assert len(g.types[inner.inputs[0]].shape) == 5


def test_layout_keeps_numpy_broadcasting_of_constants(rng):
    """A (C,1,1,1) constant broadcasts along N, not C: it must not be packed as per-channel;
    a packed tensor as the second operand stays packed."""
    w = rng.standard_normal((16, 16, 1, 1)).astype(np.float32)
    inits = [const("w", w), const("per_c", rng.standard_normal((16, 1, 1)).astype(np.float32)),
             const("per_n", rng.standard_normal((2, 1, 1, 1)).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Sub", ["per_c", "c"], ["d"]),
             helper.make_node("Mul", ["d", "per_n"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 16, 5, 5))], [tensor("y", (2, 16, 5, 5))], inits)
    g = optimize(import_onnx(m), fuse=False)
    sub = next(n for n in g.nodes if n.op == "Sub")
    assert len(g.types[sub.inputs[1]].shape) == 5  # packed operand in second position
    x = rng.standard_normal((2, 16, 5, 5)).astype(np.float32)
    want = run_reference(import_onnx(m), {"x": x})["y"]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def test_layout_runs_wide_3x3_stride_1_convs_as_winograd(rng):
    """Only 3x3, stride-1, undilated, dense convolutions of at least 32 channels become
    ConvWinogradNCHWc; the rest stay ConvNCHWc. Results agree with the unoptimized graph."""
    def conv(name, x, y, oc, ic, k, **attrs):
        w = (rng.standard_normal((oc, ic // attrs.get("group", 1), k, k)) * 0.2).astype(np.float32)
        inits.append(const(name, w))
        return helper.make_node("Conv", [x, name], [y], name=name, **attrs)
    inits = []
    nodes = [conv("wide", "x", "a", 32, 32, 3, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             conv("dilated", "b", "c", 32, 32, 3, pads=[2, 2, 2, 2], dilations=[2, 2]),
             conv("depthwise", "c", "d", 32, 32, 3, pads=[1, 1, 1, 1], group=32),
             conv("strided", "d", "e", 32, 32, 3, pads=[1, 1, 1, 1], strides=[2, 2]),
             conv("pointwise", "e", "f", 16, 32, 1),
             conv("narrow", "f", "y", 16, 16, 3, pads=[0, 1, 2, 1])]
    m = onnx_model(nodes, [tensor("x", (1, 32, 20, 18))], [tensor("y", None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    kinds = {n.name: n.op for n in g.nodes if n.op.startswith("Conv")}
    assert kinds == {"wide": "ConvWinogradNCHWc", "dilated": "ConvNCHWc", "depthwise": "ConvNCHWc",
                     "strided": "ConvNCHWc", "pointwise": "ConvNCHWc", "narrow": "ConvNCHWc"}
    x = rng.standard_normal((1, 32, 20, 18)).astype(np.float32)
    want = run_reference(import_onnx(m), {"x": x})["y"]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)


def test_winograd_tile_by_multiplies_against_filter_bytes():
    """ResNet-18's 3x3 layers: F(4x4) where it saves multiplies and its filter is small (56x56
    with 64 channels, 28x28 with 128), F(2x2) where F(4x4)'s 2.25x larger filter would stream
    from memory (14x14 with 256 channels, 7x7 with 512: 38 MB)."""
    from vdla.compiler.graph.passes.layout import winograd_tile
    assert [winograd_tile(1, c, c, s, s) for c, s in ((64, 56), (128, 28), (256, 14), (512, 7))] == [4, 4, 2, 2]
    # a 6x6 output: F(4x4) computes 8x8 of it (1.8x the outputs), F(2x2) none wasted
    assert winograd_tile(1, 32, 32, 6, 6) == 2
