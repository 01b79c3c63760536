"""pack_conv_layout (vdla.compiler.graph.passes.layout): convolution chains in NCHWc, packed once
and unpacked once; constants keep numpy broadcasting; wide 3x3 stride-1 convolutions run as
Winograd; grouped convolutions whose groups are whole blocks run packed. Results agree with the
unpacked graph."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference

from ..onnx_graphs import const, onnx_model, ops, patterns, tensor


def test_layout_packs_whole_conv_chains(resnet):
    g = optimize(resnet)
    found = ops(g)
    assert "Conv" not in found and found.count("ConvNCHWc") == 0  # all fused
    # packed once at the stem, where the 3 input channels go in one-channel blocks: [N, C, H, W, 1]
    # is a view of NCHW (a Reshape the memory plan aliases), not a copy; pooling runs packed;
    # unpacked once, for the flatten of the head
    assert found.count("LayoutPack") == 0 and found.count("LayoutUnpack") == 1
    stem = next(n for n in g.nodes if n.name == "pack:" + g.inputs[0])
    assert stem.op == "Reshape" and g.types[stem.outputs[0]].shape[-1] == 1
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
    with 64 channels, 28x28 with 128); at 14x14 with 256 channels F(2x2), whose 4.2 MB of filter
    (against 2.4 MB direct) its multiplies pay for where F(4x4)'s 9.4 MB they do not; the direct
    kernel where a Winograd filter would stream from memory for few multiplies (7x7 with 512:
    16.8 MB of F(2x2) filter against 9.4). The same 512 channels at 56x56 have multiplies enough
    to pay for F(4x4)'s filter."""
    from vdla.compiler.graph.passes.layout import winograd_tile
    assert [winograd_tile(1, c, c, s, s) for c, s in ((64, 56), (128, 28), (256, 14), (512, 7))] == \
        [4, 4, 2, None]
    assert winograd_tile(1, 512, 512, 56, 56) == 4
    # 18x18 with 32 channels: F(4x4) would compute 20x20 of it (23% more) and read 4x the direct
    # filter; F(2x2) wastes nothing and still saves multiplies
    assert winograd_tile(1, 32, 32, 18, 18) == 2
    # a 6x6 output: every filter costs more than the multiplies, the direct one least
    assert winograd_tile(1, 32, 32, 6, 6) is None


def test_layout_packs_grouped_convs_whose_groups_are_whole_blocks(rng):
    """RegNet-style groups of 16 channels (and of 8) run as ConvNCHWc with their group count;
    groups of 4 channels (ResNeXt's first stage) narrower than NARROW_BLOCK stay NCHW Conv.
    Results agree with the unoptimized graph, here and through the compiled kernels
    (onnxruntime as the oracle)."""
    from vdla.compiler.graph.passes.layout import NARROW_BLOCK
    assert NARROW_BLOCK == 8            # the 8-channel groups below are the narrowest packed

    def conv(name, x, y, oc, ic, group, **attrs):
        w = (rng.standard_normal((oc, ic // group, 3, 3)) * 0.2).astype(np.float32)
        inits.append(const(name, w))
        return helper.make_node("Conv", [x, name], [y], name=name, group=group, pads=[1, 1, 1, 1], **attrs)
    inits = []
    nodes = [conv("g16", "x", "a", 64, 64, 4),
             helper.make_node("Relu", ["a"], ["b"]),
             conv("g8", "b", "c", 32, 64, 4, strides=[2, 2]),
             conv("g4", "c", "y", 32, 32, 8)]
    m = onnx_model(nodes, [tensor("x", (1, 64, 12, 10))], [tensor("y", None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    convs = {n.name: (n.op, n.attrs.get("groups")) for n in g.nodes if n.op.startswith("Conv")}
    assert convs == {"g16": ("ConvNCHWc", 4), "g8": ("ConvNCHWc", 4), "g4": ("Conv", None)}
    x = rng.standard_normal((1, 64, 12, 10)).astype(np.float32)
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vdla_run(m, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


def test_layout_concatenates_packed_channels_packed(rng):
    """A Concat along the channels of conv outputs runs on the packed tensors (no unpack before
    it, no pack after it for the next conv); one whose inputs do not fill whole blocks (an
    8-channel input against 16-channel blocks) stays NCHW. Results agree with onnxruntime."""
    def conv(name, x, y, oc, ic):
        inits.append(const(name, (rng.standard_normal((oc, ic, 1, 1)) * 0.3).astype(np.float32)))
        return helper.make_node("Conv", [x, name], [y], name=name)
    inits = []
    nodes = [conv("c0", "x", "a", 32, 16), conv("c1", "a", "b", 16, 32),
             helper.make_node("Concat", ["a", "b"], ["ab"], name="packed", axis=1),
             conv("c2", "ab", "c", 16, 48),
             helper.make_node("Concat", ["c", "x8"], ["y"], name="nchw", axis=-3)]
    m = onnx_model(nodes, [tensor("x", (1, 16, 5, 4)), tensor("x8", (1, 8, 5, 4))], [tensor("y", None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    shapes = {n.name: len(g.types[n.outputs[0]].shape) for n in g.nodes if n.op == "Concat"}
    assert shapes == {"packed": 5, "nchw": 4}
    assert ops(g).count("LayoutPack") == 1 and ops(g).count("LayoutUnpack") == 1   # x in, c out
    feeds = {"x": rng.standard_normal((1, 16, 5, 4)).astype(np.float32),
             "x8": rng.standard_normal((1, 8, 5, 4)).astype(np.float32)}
    want = ort_run(m, feeds)[0]
    np.testing.assert_allclose(run_reference(g, feeds)["y"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vdla_run(m, feeds)[0], want, rtol=1e-4, atol=1e-4)


def test_layout_leaves_convs_of_narrow_output_blocks_in_nchw(rng):
    """58 output channels would pack in blocks of 1 and 12 in blocks of 4 (ShuffleNetV2's
    branches): those convs run NCHW; 4 output channels (fewer than NARROW_BLOCK, one whole
    block) and the stem's 3 input channels (in one-channel blocks) still pack. Results agree with
    onnxruntime."""
    def conv(name, x, y, oc, ic):
        inits.append(const(name, (rng.standard_normal((oc, ic, 3, 3)) * 0.2).astype(np.float32)))
        return helper.make_node("Conv", [x, name], [y], name=name, pads=[1, 1, 1, 1])
    inits = []
    nodes = [conv("stem", "x", "a", 16, 3), conv("odd", "a", "b", 58, 16), conv("twelve", "b", "c", 12, 58),
             conv("head", "c", "y", 4, 12)]
    m = onnx_model(nodes, [tensor("x", (1, 3, 9, 8))], [tensor("y", None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    convs = {n.name: n.op for n in g.nodes if n.op.startswith("Conv")}
    assert convs == {"stem": "ConvNCHWc", "odd": "Conv", "twelve": "Conv", "head": "ConvNCHWc"}
    x = rng.standard_normal((1, 3, 9, 8)).astype(np.float32)
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vdla_run(m, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


def test_layout_multiplies_by_a_packed_gate_over_the_image(rng):
    """A squeeze-and-excitation gate [N, C, 1, 1] times the activation [N, C, H, W]: both packed,
    the gate broadcast over the image in the blocked layout, so the activation is not unpacked
    for the product (EfficientNet, MobileNetV3). Results agree with onnxruntime."""
    def conv(name, x, y, oc, ic, k):
        inits.append(const(name, (rng.standard_normal((oc, ic, k, k)) * 0.3).astype(np.float32)))
        return helper.make_node("Conv", [x, name], [y], name=name, pads=[k // 2] * 4)
    inits = []
    nodes = [conv("c0", "x", "a", 32, 16, 3), helper.make_node("GlobalAveragePool", ["a"], ["p"]),
             conv("squeeze", "p", "q", 16, 32, 1), helper.make_node("Relu", ["q"], ["r"]),
             conv("excite", "r", "e", 32, 16, 1), helper.make_node("Sigmoid", ["e"], ["gate"]),
             helper.make_node("Mul", ["a", "gate"], ["m"], name="scale"), conv("c1", "m", "y", 16, 32, 1)]
    m = onnx_model(nodes, [tensor("x", (1, 16, 6, 5))], [tensor("y", None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    scale = next(n for n in g.nodes if n.name == "scale")
    assert [g.types[i].shape for i in scale.inputs] == [(1, 2, 6, 5, 16), (1, 2, 1, 1, 16)]
    assert ops(g).count("LayoutPack") == 1 and ops(g).count("LayoutUnpack") == 1    # x in, y out
    x = rng.standard_normal((1, 16, 6, 5)).astype(np.float32)
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vdla_run(m, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act, attrs", [("Mish", {}), ("Selu", {}), ("Celu", {"alpha": 0.5}), ("Softsign", {})])
def test_layout_runs_a_convs_activation_packed_in_its_epilogue(rng, act, attrs):
    """YOLOv4's Mish and the other activations after a conv: one packed kernel."""
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32)
    m = onnx_model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node(act, ["c"], ["y"], **attrs)],
                   [tensor("x", (1, 16, 6, 5))], [tensor("y", None)], [const("w", w)], opset=18)
    assert f"ConvNCHWc+{act}" in patterns(optimize(import_onnx(m)))
    x = rng.standard_normal((1, 16, 6, 5)).astype(np.float32)
    # atol: the conv's 144-term sums round differently in another summation order (AVX2's 8-lane
    # vectors against onnxruntime's): 1.5e-6 off on an output near 0.005
    np.testing.assert_allclose(vdla_run(m, {"x": x})[0], ort_run(m, {"x": x})[0], rtol=1e-5, atol=1e-5)
