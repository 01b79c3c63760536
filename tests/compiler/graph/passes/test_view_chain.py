"""view_chain (vdla.compiler.graph.passes.view_chain): the op fusion would chain after a tensor
is its only reader, elementwise and of the same shape; a graph output, a second reader, a
non-elementwise reader or a broadcast that grows the shape ends the chain. (The rewrites built on
it, matmul_rows and conv_rows, are checked against onnxruntime in their own tests.)"""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph.passes import infer_types
from vdla.compiler.graph.passes.view_chain import next_elementwise

from ..onnx_graphs import const, onnx_model, tensor


def _graph(nodes, outputs=("y",), inits=()):
    model = onnx_model(nodes, [tensor("x", (2, 3))], [tensor(o, None) for o in outputs], inits)
    return infer_types(import_onnx(model))


def _next(g, name):
    found = next_elementwise(g, g.consumers(), name)
    return found.op if found else None


def test_the_only_elementwise_reader_of_the_same_shape_continues_the_chain():
    g = _graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"])])
    assert _next(g, "a") == "Sigmoid" and _next(g, "y") is None      # y is the graph's output


def test_a_second_reader_a_reduction_or_a_growing_broadcast_ends_it():
    two = _graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"]),
                  helper.make_node("Tanh", ["a"], ["z"])], outputs=("y", "z"))
    assert _next(two, "a") is None
    reduce = _graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Softmax", ["a"], ["y"])])
    assert _next(reduce, "a") is None
    grow = _graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "c"], ["y"])],
                  inits=[const("c", np.zeros((4, 2, 3), np.float32))])
    assert _next(grow, "a") is None
