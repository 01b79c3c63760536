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
    g = optimize(resnet)
    patterns = [n.attrs.get("pattern", n.op) for n in g.nodes]
    assert patterns.count("Conv+Add+Relu") == 8  # one per basic block: residual add fused
    assert patterns[0] == "Conv+Relu"
    assert "Gemm" in patterns


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
