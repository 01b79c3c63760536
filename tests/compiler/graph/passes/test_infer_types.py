"""infer_types (vdla.compiler.graph.passes.infer_types): after it every tensor has the static type
of the value the reference interpreter computes for it; fused groups keep their types; a node
that declares more outputs than its op gives is named. (The per-op rules: ../test_infer.py.)"""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import Graph, GraphError, Node, TensorType, optimize, verify
from vdla.compiler.graph.passes import infer_types
from vdla.compiler.graph.passes.calibrate import evaluate_all

from e2e.model_builders import mobilenetv2, small_cnn   # tests/ is on sys.path


@pytest.mark.parametrize("build", [small_cnn, lambda: mobilenetv2(image=32, classes=10)],
                         ids=["small_cnn", "mobilenetv2"])
def test_every_tensor_gets_the_type_of_its_value(build, rng):
    imported = import_onnx(build())
    untyped = [o for n in imported.nodes for o in n.outputs if o and o not in imported.types]
    assert untyped, "the importer types only inputs and constants; the pass types the rest"
    g = optimize(imported, stop_after="infer_types")
    verify(g)
    (name,) = [i for i in g.inputs if i not in g.constants]
    x = rng.standard_normal(g.types[name].shape).astype(g.types[name].dtype)
    for tensor, value in evaluate_all(g, {name: x}).items():
        assert g.types[tensor] == TensorType.of(np.asarray(value)), tensor


def test_fused_groups_keep_their_types(rng):
    g = optimize(import_onnx(small_cnn()))
    assert any(n.op == "Fused" for n in g.nodes)
    before = dict(g.types)
    assert infer_types(g).types == before


def test_a_node_declaring_more_outputs_than_its_op_gives_is_named():
    g = Graph("hand", ["x"], ["y"], [Node("Relu", "two_outputs", ["x"], ["y", "z"])],
              {"x": TensorType((2, 3), "float32")})
    with pytest.raises(GraphError, match=r"node 'two_outputs' \(Relu\): has 2 outputs, op gives 1"):
        infer_types(g)
