"""Linear layers written as MatMul (vdla.compiler.vdla.linear): the rewrite into Gemm computes
what onnxruntime computes, and on the accelerator a MatMul by a constant weight is offloaded
like a Gemm, 2-d or over a token sequence, its bias Add fused; a MatMul of two activations is
left as it is for the matmul op (ops/matmul.py), and one into a single accumulator element stays
on the CPU with its reason and its MACs."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference
from vdla.compiler.vdla import OPS, place_nodes
from vdla.compiler.vdla.linear import linear_layers_as_gemm
from vdla.hw import load_config

from ..graph.onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor
from .ops.op_oracle import check_offloaded, node, weights


def _typed(m):
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)


def _linear_model(rng, x_shape, bias_first=False):
    k = x_shape[-1]
    add = ["b", "m1"] if bias_first else ["m1", "b"]
    nodes = [node("MatMul", ["x", "w1"], ["m1"], name="fc1"), node("Add", add, ["a1"], name="bias1"),
             node("Relu", ["a1"], ["r1"], name="relu"), node("MatMul", ["r1", "w2"], ["y"], name="fc2")]
    return onnx_model(nodes, [tensor("x", x_shape)], [tensor("y", (*x_shape[:-1], 32))],
                      [const("w1", weights(rng, (k, 48))), const("b", weights(rng, (48,))),
                       const("w2", weights(rng, (48, 32)))])


@pytest.mark.parametrize("x_shape, bias_first", [((8, 64), False), ((2, 12, 64), True), ((2, 3, 4, 64), False)])
def test_the_rewrite_computes_what_onnxruntime_computes(rng, x_shape, bias_first):
    m = _linear_model(rng, x_shape, bias_first)
    g = linear_layers_as_gemm(_typed(m))
    assert "MatMul" not in {n.op for n in g.nodes} and "bias1" not in {n.name for n in g.nodes}
    x = rng.standard_normal(x_shape).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})[0], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("x_shape", [(8, 64), (2, 12, 64)])
def test_a_linear_layer_written_as_matmul_runs_on_the_accelerator(rng, x_shape):
    check_offloaded(_linear_model(rng, x_shape), OPS["VdlaDense"].name, ["fc1", "fc2"], rng, min_sqnr_db=20.0)


def test_a_matmul_of_two_activations_is_left_to_the_matmul_op(rng):
    m = onnx_model([node("Transpose", ["x"], ["t"], name="kt", perm=[0, 2, 1]),
                    node("MatMul", ["x", "t"], ["y"], name="scores")],
                   [tensor("x", (1, 16, 64))], [tensor("y", (1, 16, 16))])
    g = linear_layers_as_gemm(_typed(m))
    assert [n.op for n in g.nodes] == ["Transpose", "MatMul"]
    place = place_nodes(g, load_config("pynq"))["scores"]
    assert place["device"] == "vdla" and place["macs"] == 16 * 16 * 64


def test_a_matmul_into_one_accumulator_element_stays_on_the_cpu_with_its_macs(rng):
    m = onnx_model([node("Transpose", ["x"], ["t"], name="kt", perm=[1, 0]),
                    node("MatMul", ["x", "t"], ["y"], name="scores")],
                   [tensor("x", (1, 64))], [tensor("y", (1, 1))])
    place = place_nodes(linear_layers_as_gemm(_typed(m)), load_config("pynq"))["scores"]
    assert place["device"] == "cpu" and "single accumulator element" in place["reason"]
    assert place["macs"] == 64
