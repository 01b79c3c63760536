"""remove_identities and eliminate_dead_code (vdla.compiler.graph.passes.dead_code): identities
forward their input, nodes and constants no output needs are removed, and an identity that
copies a graph input to a graph output stays; a Pad of zeros is an identity too."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference, verify
from vdla.compiler.graph.passes import eliminate_dead_code

from ..onnx_graphs import const, onnx_model, ops, tensor


def test_dead_code_and_unused_constants_are_removed():
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["unused"]),
             helper.make_node("Identity", ["y"], ["z"]), helper.make_node("Add", ["z", "c"], ["out"])]
    m = onnx_model(nodes, [tensor("x", (4,))], [tensor("out", (4,))],
                   [const("c", np.ones(4, np.float32)), const("dead", np.ones(4, np.float32))])
    g = optimize(import_onnx(m), fuse=False)
    assert ops(g) == ["Relu", "Add"] and set(g.constants) == {"c"}


def test_an_identity_from_input_to_output_is_a_copy_and_stays(rng):
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Dropout", ["x"], ["d"]),
             helper.make_node("Relu", ["d"], ["z"])]
    m = onnx_model(nodes, [tensor("x", (3,))], [tensor("y", (3,)), tensor("z", (3,))])
    g = optimize(import_onnx(m), stop_after="remove_identities")
    verify(g)
    assert ops(g) == ["Identity", "Relu"] and g.nodes[1].inputs == ["x"]
    x = rng.standard_normal(3).astype(np.float32)
    out = run_reference(g, {"x": x})
    np.testing.assert_array_equal(out["y"], x)
    np.testing.assert_array_equal(out["z"], np.maximum(x, 0))


def test_dead_code_keeps_what_a_fused_body_reads(rng):
    """A fused group's external inputs are its node's inputs; a constant only a body member reads
    must survive."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "k"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 3))], [tensor("y", (2, 3))], [const("k", np.float32(3))])
    g = eliminate_dead_code(optimize(import_onnx(m)))
    assert ops(g) == ["Fused"] and "k" in g.constants
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], np.maximum(x, 0) * 3)


def test_a_pad_of_zeros_is_an_identity_and_a_graph_outputs_stays_a_copy(rng):
    """Swin pads its windows by what the map lacks, zero for most maps; compiled, a zero Pad that
    makes a graph output is a kernel that writes it (topi hands the argument back unchanged)."""
    from ort_oracle import ort_run, vdla_run
    nodes = [helper.make_node("Pad", ["x", "p"], ["padded"]), helper.make_node("Relu", ["padded"], ["y"]),
             helper.make_node("Pad", ["x", "p"], ["copy"])]
    m = onnx_model(nodes, [tensor("x", (1, 5, 4, 3))], [tensor("y", None), tensor("copy", None)],
                   [const("p", np.zeros(8, np.int64))])
    g = optimize(import_onnx(m), stop_after="remove_identities")
    assert ops(g) == ["Relu", "Pad"] and g.nodes[0].inputs == ["x"]
    x = rng.standard_normal((1, 5, 4, 3)).astype(np.float32)
    for got, want in zip(vdla_run(m, {"x": x}), ort_run(m, {"x": x})):
        np.testing.assert_array_equal(got, want)
