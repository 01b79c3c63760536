"""fold_constants and absorb_constant_operands (vdla.compiler.graph.passes.constants): exporters'
shape arithmetic becomes a constant Reshape, constant subgraphs are evaluated at compile time,
constant operands become attributes, and a node whose operand is known only at run time becomes a
host step that says so."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import GraphError, optimize, run_reference
from vdla.compiler.graph.passes import absorb_constant_operands, fold_constants

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, ops, tensor


def test_shape_arithmetic_folds_into_a_constant_reshape(resnet):
    assert {"Shape", "Gather", "Unsqueeze", "Concat"} <= set(ops(resnet))
    g = optimize(resnet, stop_after="absorb_constant_operands")
    assert not {"Shape", "Gather", "Unsqueeze", "Concat"} & set(ops(g))
    reshape = next(n for n in g.nodes if n.op == "Reshape")
    assert reshape.attrs["shape"] == [1, -1] and reshape.inputs == [reshape.inputs[0]]


def test_a_constant_subgraph_is_evaluated_once_at_compile_time(rng):
    """(c * 2 + c) computed from constants only: folded, and the result equals onnxruntime's."""
    c = rng.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["c", "two"], ["c2"]), helper.make_node("Add", ["c2", "c"], ["c3"]),
             helper.make_node("Add", ["x", "c3"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (3, 4))], [tensor("y", (3, 4))],
                   [const("c", c), const("two", np.float32(2))])
    g = fold_constants(import_onnx(m))
    assert ops(g) == ["Add"]
    np.testing.assert_allclose(g.constants["c3"], c * 3, rtol=1e-6)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})[0], rtol=1e-6)


def test_a_large_constant_result_is_left_to_run_time():
    """Folding Expand-like growth would store an activation-sized constant for nothing."""
    big = np.ones((1 << 12, 1 << 9), np.float32)           # 8 MiB result, above the fold limit
    nodes = [helper.make_node("Add", ["a", "b"], ["ab"]), helper.make_node("Add", ["x", "ab"], ["y"])]
    m = onnx_model(nodes, [tensor("x", big.shape)], [tensor("y", big.shape)], [const("a", big), const("b", big)])
    g = fold_constants(import_onnx(m))
    assert ops(g) == ["Add", "Add"] and "ab" not in g.constants


def test_constant_operands_become_attributes():
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
             helper.make_node("Reshape", ["c", "shape"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 6))], [tensor("y", (3, 4))],
                   [const("lo", np.float32(-1)), const("hi", np.float32(2)), const("shape", np.array([3, 4]))])
    g = absorb_constant_operands(fold_constants(import_onnx(m)))
    clip, reshape = g.nodes
    assert clip.inputs == ["x"] and clip.attrs["min"] == -1.0 and clip.attrs["max"] == 2.0
    assert reshape.inputs == ["c"] and reshape.attrs["shape"] == [3, 4]


def test_a_missing_optional_operand_keeps_its_place():
    """Clip(x, "", hi): the absent min stays absent, the trailing max moves into attrs."""
    m = onnx_model([helper.make_node("Clip", ["x", "", "hi"], ["y"])], [tensor("x", (4,))], [tensor("y", (4,))],
                   [const("hi", np.float32(0.5))])
    (clip,) = absorb_constant_operands(fold_constants(import_onnx(m))).nodes
    assert clip.inputs == ["x"] and clip.attrs["max"] == 0.5 and "min" not in clip.attrs


def test_an_operand_known_only_at_run_time_makes_the_node_a_host_step():
    """(the host step itself: test_runtime_shaped.py)"""
    m = onnx_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")],
                   [tensor("x", (2, 3)), tensor("s", (2,), TensorProto.INT64)], [tensor("y", (3, 2))])
    (node,) = fold_constants(import_onnx(m)).nodes
    assert node.op == "Fused" and node.body[0].op == "Reshape"
    assert "input 1 (shape) = 's' is known only at run time" in node.host_only
