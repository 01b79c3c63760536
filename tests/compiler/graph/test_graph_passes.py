"""Graph passes: each checked for its effect and for preserving the computation."""
import importlib.util
import pathlib

import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import PIPELINE, optimize, run_reference, verify
from vdla.compiler.graph.passes.memory_plan import ALIAS_OPS

_spec = importlib.util.spec_from_file_location(
    "model_builders", pathlib.Path(__file__).parents[2] / "e2e" / "model_builders.py")
builders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(builders)


@pytest.fixture(scope="module")
def resnet():
    return import_onnx(builders.resnet18(image=64, classes=10))


def _ops(graph):
    return [n.op for n in graph.nodes]


def test_every_pass_keeps_invariants_and_results(resnet, rng):
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    want = run_reference(resnet, {"input": x})[resnet.outputs[0]]
    for name, _ in PIPELINE:
        g = optimize(resnet, stop_after=name)
        verify(g)
        got = run_reference(g, {"input": x})[g.outputs[0]]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"after {name}")


def test_shape_arithmetic_folds_into_a_constant_reshape(resnet):
    assert {"Shape", "Gather", "Unsqueeze", "Concat"} <= set(_ops(resnet))
    g = optimize(resnet, stop_after="absorb_constant_operands")
    assert not {"Shape", "Gather", "Unsqueeze", "Concat"} & set(_ops(g))
    reshape = next(n for n in g.nodes if n.op == "Reshape")
    assert reshape.attrs["shape"] == [1, -1] and reshape.inputs == [reshape.inputs[0]]


def test_batch_norm_folds_into_convolutions(resnet):
    assert _ops(resnet).count("BatchNormalization") == 20
    g = optimize(resnet, stop_after="fold_batch_norm")
    assert "BatchNormalization" not in _ops(g)
    assert _ops(g).count("Conv") == 20 and all(len(n.inputs) == 3 for n in g.nodes if n.op == "Conv")


def test_batch_norm_without_a_conv_becomes_mul_add():
    g = optimize(import_onnx(builders.small_cnn()), stop_after="fold_batch_norm")
    assert "BatchNormalization" not in _ops(g)
    assert any(n.name.endswith(".mul") for n in g.nodes)


def test_dead_code_and_unused_constants_are_removed():
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["unused"]),
             helper.make_node("Identity", ["y"], ["z"]), helper.make_node("Add", ["z", "c"], ["out"])]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4])],
                              initializer=[numpy_helper.from_array(np.ones(4, np.float32), "c"),
                                           numpy_helper.from_array(np.ones(4, np.float32), "dead")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    g = optimize(import_onnx(m), fuse=False)
    assert _ops(g) == ["Relu", "Add"] and set(g.constants) == {"c"}


def test_resnet_fuses_conv_bias_residual_and_relu(resnet):
    g = optimize(resnet, layout=False)
    patterns = [n.attrs.get("pattern", n.op) for n in g.nodes]
    assert patterns.count("Conv+Add+Relu") == 8  # one per basic block: residual add fused
    assert patterns[0] == "Conv+Relu"
    assert "Gemm" in patterns
    packed = [n.attrs.get("pattern", n.op) for n in optimize(resnet).nodes]
    # in NCHWc the bias is an explicit Add: conv, bias, residual and relu are one kernel; the
    # residual branch ends in a 3x3 stride-1 conv, which runs as Winograd F(2x2, 3x3)
    assert packed.count("ConvWinogradNCHWc+Add+Add+Relu") == 8


def test_layout_packs_whole_conv_chains(resnet):
    g = optimize(resnet)
    ops = _ops(g)
    assert "Conv" not in ops and ops.count("ConvNCHWc") == 0  # all fused
    # packed once at the stem; pooling runs packed; unpacked once, for the flatten of the head
    assert ops.count("LayoutPack") == 1 and ops.count("LayoutUnpack") == 1
    assert "MaxPoolNCHWc" in ops and "GlobalAveragePoolNCHWc" in ops
    for node in g.nodes:
        for inner in node.body or [node]:
            if inner.op in ("ConvNCHWc", "ConvWinogradNCHWc"):
                assert len(g.types[inner.inputs[0]].shape) == 5


def _lifetimes(graph):
    plan = graph.meta["memory_plan"]
    root = plan["storage_of"]
    first, last = {}, {}
    for s in set(root.values()):
        first[s] = -1 if s in graph.inputs else None
        last[s] = first[s]
    for step, node in enumerate(graph.nodes):
        for n in node.inputs:
            if n in root:
                last[root[n]] = step
        for o in node.outputs:
            if o in root:
                first[root[o]] = step if first[root[o]] is None else first[root[o]]
                last[root[o]] = max(last[root[o]] if last[root[o]] is not None else step, step)
    for o in graph.outputs:
        if o in root:
            last[root[o]] = len(graph.nodes)
    return first, last


@pytest.mark.parametrize("build", [builders.small_cnn, lambda: builders.mobilenetv2(image=64)])
def test_memory_plan_never_overlaps_live_tensors_and_beats_one_buffer_each(build, resnet):
    for g in (optimize(import_onnx(build())), optimize(resnet)):
        plan = g.meta["memory_plan"]
        first, last = _lifetimes(g)
        spans = {s: (plan["offsets"][s], plan["offsets"][s] + g.types[s].nbytes) for s in first}
        storages = sorted(spans)
        for i, a in enumerate(storages):
            for b in storages[i + 1:]:
                live_together = not (last[a] < first[b] or last[b] < first[a])
                disjoint = spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0]
                assert disjoint or not live_together, (a, b)
        assert plan["arena_bytes"] < plan["naive_bytes"]
        assert max(stop for _, stop in spans.values()) <= plan["arena_bytes"]


def test_reshapes_alias_their_input(resnet):
    g = optimize(resnet)
    plan = g.meta["memory_plan"]
    for node in g.nodes:
        if node.op in ALIAS_OPS:
            assert plan["storage_of"][node.outputs[0]] == plan["storage_of"][node.inputs[0]]


def test_nchwc_host_ops_round_trip_and_convolve_like_nchw(rng):
    from vdla.driver.host_ops import layout, nn
    x = rng.standard_normal((1, 32, 9, 7)).astype(np.float32)
    np.testing.assert_array_equal(layout.unpack(layout.pack(x, 8)), x)
    assert layout.pack(x, 8)[0, 1, 2, 3, 4] == x[0, 1 * 8 + 4, 2, 3]
    w = rng.standard_normal((48, 32, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(layout.unpack_weight(layout.pack_weight(w, 8, 16, False)), w)
    attrs = {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2]}
    want = nn.conv(x, w, None, attrs)
    (got,) = layout.OPS["ConvNCHWc"]([layout.pack(x, 8), layout.pack_weight(w, 8, 16, False)], attrs)
    np.testing.assert_allclose(layout.unpack(got), want, rtol=1e-5, atol=1e-5)


def test_canonicalize_gemm_folds_transpose_alpha_beta(rng):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    b = rng.standard_normal((6, 5)).astype(np.float32)  # [K, N]: transB=0
    c = rng.standard_normal((1, 5)).astype(np.float32)
    node = helper.make_node("Gemm", ["x", "b", "c"], ["y"], alpha=0.5, beta=2.0)
    graph = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])],
                              initializer=[numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    g = optimize(import_onnx(m), stop_after="canonicalize_gemm")
    gemm = g.nodes[0]
    assert gemm.attrs == {"transA": 0, "transB": 1}
    assert g.types[gemm.inputs[1]].shape == (5, 6) and g.types[gemm.inputs[2]].shape == (5,)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def _single(nodes, inputs, outputs, inits=()):
    from onnx import helper
    graph = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_runtime_shape_operand_is_a_clear_error():
    from onnx import TensorProto, helper
    from vdla.compiler.graph import GraphError
    m = _single([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                 helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    with pytest.raises(GraphError, match=r"'reshape0' \(Reshape\): input 1 \(shape\) = 's' must be a compile-time constant"):
        optimize(import_onnx(m))


def test_elementwise_chain_without_an_anchor_fuses(rng):
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Sigmoid", ["x"], ["a"]), helper.make_node("Mul", ["a", "x"], ["b"]),
             helper.make_node("Add", ["b", "c"], ["y"]), helper.make_node("Transpose", ["y"], ["z"])]
    m = _single(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
                [helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 4])],
                [numpy_helper.from_array(np.float32(1.5), "c")])
    g = optimize(import_onnx(m))
    assert [n.attrs.get("pattern", n.op) for n in g.nodes] == ["Sigmoid+Mul+Add", "Transpose"]
    x = rng.standard_normal((4, 5)).astype(np.float32)
    want = (x / (1 + np.exp(-x)) + np.float32(1.5)).T
    np.testing.assert_allclose(run_reference(g, {"x": x})["z"], want, rtol=1e-6, atol=1e-6)


def test_layout_keeps_numpy_broadcasting_of_constants(rng):
    """A (C,1,1,1) constant broadcasts along N, not C: it must not be packed as per-channel;
    a packed tensor as the second operand stays packed."""
    from onnx import TensorProto, helper, numpy_helper
    w = rng.standard_normal((16, 16, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(
        rng.standard_normal((16, 1, 1)).astype(np.float32), "per_c"),
        numpy_helper.from_array(rng.standard_normal((2, 1, 1, 1)).astype(np.float32), "per_n")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Sub", ["per_c", "c"], ["d"]),
             helper.make_node("Mul", ["d", "per_n"], ["y"])]
    m = _single(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 5, 5])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 5, 5])], inits)
    g = optimize(import_onnx(m), fuse=False)
    sub = next(n for n in g.nodes if n.op == "Sub")
    assert len(g.types[sub.inputs[1]].shape) == 5  # packed operand in second position
    x = rng.standard_normal((2, 16, 5, 5)).astype(np.float32)
    want = run_reference(import_onnx(m), {"x": x})["y"]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def test_layout_runs_wide_3x3_stride_1_convs_as_winograd(rng):
    """Only 3x3, stride-1, undilated, dense convolutions of at least 32 channels become
    ConvWinogradNCHWc; the rest stay ConvNCHWc. Results agree with the unoptimized graph."""
    from onnx import TensorProto, helper, numpy_helper

    def conv(name, x, y, oc, ic, k, **attrs):
        w = (rng.standard_normal((oc, ic // attrs.get("group", 1), k, k)) * 0.2).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name))
        return helper.make_node("Conv", [x, name], [y], name=name, **attrs)
    inits = []
    nodes = [conv("wide", "x", "a", 32, 32, 3, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             conv("dilated", "b", "c", 32, 32, 3, pads=[2, 2, 2, 2], dilations=[2, 2]),
             conv("depthwise", "c", "d", 32, 32, 3, pads=[1, 1, 1, 1], group=32),
             conv("strided", "d", "e", 32, 32, 3, pads=[1, 1, 1, 1], strides=[2, 2]),
             conv("pointwise", "e", "f", 16, 32, 1),
             conv("narrow", "f", "y", 16, 16, 3, pads=[0, 1, 2, 1])]
    m = _single(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 20, 18])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    g = optimize(import_onnx(m), fuse=False)
    kinds = {n.name: n.op for n in g.nodes if n.op.startswith("Conv")}
    assert kinds == {"wide": "ConvWinogradNCHWc", "dilated": "ConvNCHWc", "depthwise": "ConvNCHWc",
                     "strided": "ConvNCHWc", "pointwise": "ConvNCHWc", "narrow": "ConvNCHWc"}
    x = rng.standard_normal((1, 32, 20, 18)).astype(np.float32)
    want = run_reference(import_onnx(m), {"x": x})["y"]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)


def test_board_cpu_rate_reads_any_spelling_of_the_board_triple():
    """A board's llvmlite reports aarch64-unknown-linux-gnu; placement must still weigh the
    aarch64 CPU, not fall back to the slowest board's."""
    from vdla.compiler.graph.passes.quantize_vdla import CPU_MACS_PER_S, DEFAULT_BOARD_CPU, board_cpu_rate
    assert board_cpu_rate("aarch64-unknown-linux-gnu") == CPU_MACS_PER_S["aarch64-linux-gnu"]
    assert board_cpu_rate("armv7a-unknown-linux-gnueabihf") == CPU_MACS_PER_S["armv7a-linux-gnueabihf"]
    assert CPU_MACS_PER_S["aarch64-linux-gnu"] != CPU_MACS_PER_S[DEFAULT_BOARD_CPU]
    assert board_cpu_rate("riscv64-unknown-linux-gnu") == CPU_MACS_PER_S[DEFAULT_BOARD_CPU]
