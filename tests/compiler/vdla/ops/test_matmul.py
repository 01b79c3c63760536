"""VdlaMatMul (vdla.compiler.vdla.ops.matmul; its semantics: vdla.driver.host_ops.vdla.matmul):
MatMuls of two activations on the accelerator, as attention writes them (per head Q·Kᵀ, a
Softmax on the CPU, P·V), batched by head, over a prime token count (rows padded per product),
and with a 2-d second operand over a token sequence's rows."""
import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.topi import vdla as V
from vdla.compiler.vdla import OPS
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const

MATMUL = OPS["VdlaMatMul"].name


def _attention(rng, heads: int, tokens: int, hd: int):
    """x [1, tokens, heads*hd] -> per-head softmax(q kᵀ) v with q, k, v linear layers."""
    d = heads * hd
    nodes, inits = [], []
    for name in ("q", "k", "v"):
        nodes += [node("MatMul", ["x", f"w{name}"], [f"{name}_flat"], name=f"proj_{name}"),
                  node("Reshape", [f"{name}_flat", "heads_shape"], [f"{name}_split"], name=f"split_{name}")]
        inits.append(const(f"w{name}", weights(rng, (d, d), 1 / np.sqrt(d))))
    nodes += [node("Transpose", ["q_split"], ["qh"], perm=[0, 2, 1, 3], name="qh"),
              node("Transpose", ["k_split"], ["kt"], perm=[0, 2, 3, 1], name="kt"),
              node("Transpose", ["v_split"], ["vh"], perm=[0, 2, 1, 3], name="vh"),
              node("MatMul", ["qh", "kt"], ["scores"], name="qk"),
              node("Softmax", ["scores"], ["p"], axis=-1, name="softmax"),
              node("MatMul", ["p", "vh"], ["attn"], name="pv"),
              node("Transpose", ["attn"], ["attn_t"], perm=[0, 2, 1, 3], name="merge"),
              node("Reshape", ["attn_t", "flat_shape"], ["y"], name="flat")]
    inits += [const("heads_shape", np.array([1, tokens, heads, hd], np.int64)),
              const("flat_shape", np.array([1, tokens, d], np.int64))]
    return model(nodes, (1, tokens, d), (1, tokens, d), inits)


@pytest.mark.parametrize("heads, tokens, hd", [(1, 24, 32), (3, 37, 32)])
def test_attention_products_run_on_the_accelerator(rng, heads, tokens, hd):
    place = check_offloaded(_attention(rng, heads, tokens, hd), MATMUL, ["qk", "pv"], rng, min_sqnr_db=20.0)
    assert place["qk"]["macs"] == heads * tokens * tokens * hd
    assert place["softmax"]["device"] == "cpu"


def test_a_prime_row_count_tiles_with_an_overhanging_last_tile():
    """197 tokens (ViT's, a prime): the dense kernel's row tiles need not divide them (the last
    one overhangs), so a product's default tile is neither one row nor all of them, and its
    estimated cycles are those of 198 rows, which divide."""
    config = load_config("pynq")
    ep = V.Epilogue(bias=True, scale=True, shift=8)

    def cost(m, k, n):
        layer = V.DenseLayer(m, k, n)
        knobs = V.default_dense_knobs(config, layer, ep)
        return V.dense_cost(config, layer, knobs, ep), knobs.tile_m
    for k, n in ((4, 13), (12, 12)):
        (c197, tile), (c198, _) = cost(197, k, n), cost(198, k, n)
        assert 1 < tile < 197 and c197 <= c198


def test_attention_over_a_prime_token_count(rng):
    check_offloaded(_attention(rng, 1, 197, 16), MATMUL, ["qk", "pv"], rng, min_sqnr_db=20.0, samples=1)


def test_a_2d_second_operand_multiplies_every_row(rng):
    """[2, 8, 32] x [32, 8], both computed at run time: one product over all 16 rows."""
    nodes = [node("ReduceMean", ["x"], ["s"], axes=[0], keepdims=0, name="mean"),
             node("Transpose", ["s"], ["b"], perm=[1, 0], name="t"),
             node("MatMul", ["x", "b"], ["y"], name="prod")]
    m = model(nodes, (2, 8, 32), (2, 8, 8), [])
    place = check_offloaded(m, MATMUL, ["prod"], rng, min_sqnr_db=20.0)
    assert place["prod"]["macs"] == 2 * 8 * 8 * 32


def test_a_product_that_wastes_the_gemm_core_is_cheaper_on_the_cpu(rng):
    """[64, 1] x [1, 8], both at run time: each micro-op would multiply one useful lane of 16 by
    one of 16, 64 of them for 512 MACs; the board CPU is faster, and the reason says by how much."""
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph import optimize
    from vdla.compiler.vdla import place_nodes
    nodes = [node("Transpose", ["x"], ["xt"], perm=[1, 0], name="t"),
             node("Slice", ["xt", "starts", "ends", "axes"], ["row"], name="row"),
             node("MatMul", ["x", "row"], ["y"], name="outer")]
    m = model(nodes, (64, 1), (64, 8), [const("starts", np.array([0], np.int64)), const("ends", np.array([8], np.int64)),
                                        const("axes", np.array([1], np.int64))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))["outer"]
    assert place["device"] == "cpu" and place["macs"] == 64 * 8
    assert place["reason"].startswith("MatMul of 1-long products into 8 columns: cheaper on the CPU")
