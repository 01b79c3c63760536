"""canonicalize_gemm (vdla.compiler.graph.passes.gemm): Gemm with constant weights in the dense
form kernels take (B as [N, K], alpha and beta folded), checked against onnxruntime; a per-row
bias keeps the general form."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference
from vdla.compiler.graph.passes import canonicalize_gemm

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor


def test_canonicalize_gemm_folds_transpose_alpha_beta(rng):
    b = rng.standard_normal((6, 5)).astype(np.float32)  # [K, N]: transB=0
    c = rng.standard_normal((1, 5)).astype(np.float32)
    node = helper.make_node("Gemm", ["x", "b", "c"], ["y"], alpha=0.5, beta=2.0)
    m = onnx_model([node], [tensor("x", (3, 6))], [tensor("y", (3, 5))], [const("b", b), const("c", c)])
    g = optimize(import_onnx(m), stop_after="canonicalize_gemm")
    gemm = g.nodes[0]
    assert gemm.attrs == {"transA": 0, "transB": 1}
    assert g.types[gemm.inputs[1]].shape == (5, 6) and g.types[gemm.inputs[2]].shape == (5,)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    want = onnxruntime_outputs(m, {"x": x})[0]
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def test_transposed_weights_without_bias(rng):
    b = rng.standard_normal((5, 6)).astype(np.float32)  # [N, K]: transB=1 already
    m = onnx_model([helper.make_node("Gemm", ["x", "b"], ["y"], transB=1, alpha=3.0)],
                   [tensor("x", (2, 6))], [tensor("y", (2, 5))], [const("b", b)])
    g = canonicalize_gemm(import_onnx(m))
    gemm = g.nodes[0]
    assert len(gemm.inputs) == 2 and gemm.attrs == {"transA": 0, "transB": 1}
    x = rng.standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})[0], rtol=1e-5)


def test_a_per_row_bias_keeps_the_general_form(rng):
    c = rng.standard_normal((3, 5)).astype(np.float32)       # one bias row per output row
    m = onnx_model([helper.make_node("Gemm", ["x", "b", "c"], ["y"], beta=0.5)], [tensor("x", (3, 6))],
                   [tensor("y", (3, 5))], [const("b", rng.standard_normal((6, 5)).astype(np.float32)), const("c", c)])
    g = canonicalize_gemm(import_onnx(m))
    assert g.nodes[0].inputs == ["x", "b", "c"] and g.nodes[0].attrs.get("beta") == 0.5
    x = rng.standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})[0], rtol=1e-5)
