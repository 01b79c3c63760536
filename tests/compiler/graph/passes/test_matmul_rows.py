"""flatten_matmul_rows (vdla.compiler.graph.passes.matmul_rows): MatMul of an N-D activation by a
constant 2-D weight runs as one [rows, K] @ [K, N] GEMM with the elementwise chain fusion would
give it, between aliasing Reshapes; Gemm of a constant weight and enough rows becomes MatMul by
the transposed weight plus the bias. Results equal onnxruntime's, through the reference
interpreter and through the compiled kernels."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference
from vdla.driver.executor import Executor

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, patterns, tensor


def _check(m, feeds, rtol=1e-5):
    want = onnxruntime_outputs(m, feeds)
    g = optimize(import_onnx(m))
    for name, value in zip(g.outputs, want):
        np.testing.assert_allclose(run_reference(g, feeds)[name], value, rtol=rtol, atol=rtol)
    artifact = compile_model(m)
    got = Executor(artifact).run(feeds)
    for spec, value in zip(artifact.plan.outputs, want):
        np.testing.assert_allclose(got[spec.name], value, rtol=rtol, atol=rtol)
    return g


def _linear_block(rng, shape, n, bias_shape):
    """MatMul by w, + bias, + the residual r (of the output's shape), Relu: one chain."""
    k = shape[-1]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Add", ["r", "a"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    out = (*shape[:-1], n)
    m = onnx_model(nodes, [tensor("x", shape), tensor("r", out)], [tensor("y", out)],
                   [const("w", rng.standard_normal((k, n)).astype(np.float32)),
                    const("b", rng.standard_normal(bias_shape).astype(np.float32))])
    feeds = {"x": rng.standard_normal(shape).astype(np.float32), "r": rng.standard_normal(out).astype(np.float32)}
    return m, feeds


@pytest.mark.parametrize("shape, bias_shape",
                         [((3, 1, 20), (24,)), ((1, 5, 6, 16), (1, 1, 1, 24)), ((2, 9, 7), (1,))],
                         ids=["tokens", "nhwc", "scalar_bias"])
def test_the_matmul_and_its_chain_run_on_all_rows_at_once(shape, bias_shape, rng):
    m, feeds = _linear_block(rng, shape, 24, bias_shape)
    g = _check(m, feeds)
    rows = int(np.prod(shape[:-1]))
    assert patterns(g) == ["Reshape", "Reshape", "MatMul+Add+Add+Relu", "Reshape"]
    fused = g.nodes[2]
    assert g.types[fused.outputs[0]].shape == (rows, 24)
    assert g.types[fused.inputs[0]].shape == (rows, shape[-1])


def test_a_chain_stops_at_a_tensor_read_twice_and_at_an_operand_defined_after_the_matmul(rng):
    """m + b is also read by Tanh (the chain ends there, like fusion's); q is computed after the
    MatMul, so it cannot be viewed as rows before it: the Add of q stays on the N-D shape."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]), helper.make_node("Sigmoid", ["x2"], ["q"]),
             helper.make_node("Add", ["a", "q"], ["s"]), helper.make_node("Add", ["s", "t"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 3, 8)), tensor("x2", (2, 3, 5))], [tensor("y", (2, 3, 5))],
                   [const("w", rng.standard_normal((8, 5)).astype(np.float32)),
                    const("b", rng.standard_normal(5).astype(np.float32))])
    feeds = {"x": rng.standard_normal((2, 3, 8)).astype(np.float32),
             "x2": rng.standard_normal((2, 3, 5)).astype(np.float32)}
    g = _check(m, feeds)
    assert "MatMul+Add" in patterns(g)
    matmul = next(n for n in g.nodes if n.attrs.get("pattern") == "MatMul+Add")
    assert g.types[matmul.outputs[0]].shape == (6, 5)


def test_batched_and_runtime_weights_keep_their_shape(rng):
    """A batched weight or a runtime one (attention's q k^T) is not a linear layer."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("MatMul", ["m", "v"], ["y"])]
    m = onnx_model(nodes, [tensor("x", (2, 3, 4)), tensor("v", (2, 6, 5))], [tensor("y", (2, 3, 5))],
                   [const("w", rng.standard_normal((2, 4, 6)).astype(np.float32))])
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32),
             "v": rng.standard_normal((2, 6, 5)).astype(np.float32)}
    g = _check(m, feeds)
    assert patterns(g) == ["MatMul", "MatMul"]


@pytest.mark.parametrize("rows, want", [(16, ["MatMul+Add"]), (3, ["Gemm"])])
def test_a_gemm_of_enough_rows_becomes_a_matmul_by_the_transposed_weight(rows, want, rng):
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5)
    m = onnx_model([node], [tensor("x", (rows, 12))], [tensor("y", (rows, 7))],
                   [const("w", rng.standard_normal((7, 12)).astype(np.float32)),
                    const("b", rng.standard_normal(7).astype(np.float32))])
    g = _check(m, {"x": rng.standard_normal((rows, 12)).astype(np.float32)})
    assert patterns(g) == want
    if want == ["MatMul+Add"]:
        assert g.types[g.nodes[0].body[0].inputs[1]].shape == (12, 7)


def test_layout_false_leaves_matmuls_alone(rng):
    m, _ = _linear_block(rng, (3, 1, 20), 24, (24,))
    g = optimize(import_onnx(m), layout=False)
    assert "Reshape" not in patterns(g)


@pytest.mark.parametrize("shape", [(2, 3, 20), (6, 20)], ids=["tokens", "rows"])
def test_a_weight_of_whole_panels_is_read_in_panels(shape, rng):
    """48 columns: the weight becomes [3, K, 16] panels and the MatMul MatMulPanels, whose
    product is the plain [rows, 48]: its chain, the residual (a runtime tensor) included, fuses
    with it as the plain form's does, and no Transpose puts rows back together."""
    m, feeds = _linear_block(rng, shape, 48, (48,))
    g = _check(m, feeds)
    fused = next(n for n in g.nodes if n.attrs.get("pattern") == "MatMulPanels+Add+Add+Relu")
    assert g.types[fused.outputs[0]].shape == (6, 48)
    assert g.types[fused.body[0].inputs[1]].shape == (3, 20, 16)
    assert "Transpose" not in patterns(g)