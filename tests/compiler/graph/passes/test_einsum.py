"""einsum_as_matmul (vdla.compiler.graph.passes.einsum): a two-operand Einsum that is a batched
matrix product runs as Transpose, Reshape and MatMul kernels, equal to onnxruntime's Einsum for
attention's forms (MaxViT's, with spaces), plain and transposed products, several row and
contracted letters and a transposed output; what is not a product stays the op."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run
from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import onnx_model, ops, tensor


def _model(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    return onnx_model([node], [tensor(n, s) for n, s in zip(names, shapes)], [tensor("y", None)])


CASES = {
    "B G H I D, B G H J D -> B G H I J": [(1, 2, 3, 5, 8), (1, 2, 3, 7, 8)],
    "BGHIJ,BGHJD->BGHID": [(1, 2, 3, 5, 7), (1, 2, 3, 7, 8)],
    "ij,jk->ik": [(4, 6), (6, 5)],
    "ik,jk->ij": [(4, 6), (5, 6)],
    "bij,bjk->bki": [(2, 3, 4), (2, 4, 5)],
    "abc,cd->abd": [(2, 3, 4), (4, 5)],
    "bkl,blkn->bn": [(2, 3, 4), (2, 4, 3, 6)],
    "i,j->ij": [(4,), (5,)],
    "ij,ij->ij": [(3, 4), (3, 4)],
}


@pytest.mark.parametrize("equation", sorted(CASES))
def test_a_batched_product_runs_as_matmul_kernels(rng, equation):
    model = _model(equation, CASES[equation])
    assert "Einsum" not in ops(optimize(import_onnx(model))), equation
    art = compile_model(model)
    assert {s.kind for s in art.plan.steps} <= {"kernel", "alias"}, art.header["compile"]["host_reasons"]
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(CASES[equation])}
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation, shapes", [("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
                                              ("ij,jk", [(3, 4), (4, 5)]), ("ii,ij->j", [(3, 3), (3, 4)]),
                                              ("ij,jk->i", [(3, 4), (4, 5)]), ("i,i->", [(4,), (4,)]),
                                              ("ij->ji", [(3, 4)])])
def test_what_is_not_a_product_stays_the_op(rng, equation, shapes):
    model = _model(equation, shapes)
    assert "Einsum" in ops(optimize(import_onnx(model)))
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
