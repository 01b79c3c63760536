"""VdlaDense (vdla.compiler.vdla.ops.dense; its semantics: vdla.driver.host_ops.vdla.dense): a
fully connected layer with its ReLU on the accelerator; a transposed or run-time operand stays
on the CPU."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


@pytest.mark.parametrize("vta_compat", [False, True])
def test_dense_relu_dense(rng, vta_compat):
    nodes = [node("Gemm", ["x", "w1", "b1"], ["d1"], name="fc1", transB=1), node("Relu", ["d1"], ["r1"], name="relu"),
             node("Gemm", ["r1", "w2"], ["y"], name="fc2", transB=1)]
    m = model(nodes, (4, 64), (4, 32), [const("w1", weights(rng, (48, 64))), const("b1", weights(rng, (48,))),
                                        const("w2", weights(rng, (32, 48)))])
    check_offloaded(m, OPS["VdlaDense"].name, ["fc1", "fc2"], rng, min_sqnr_db=20.0, vta_compat=vta_compat)


def test_a_transposed_operand_stays_on_the_cpu(rng):
    m = model([node("Gemm", ["x", "w"], ["y"], name="fc", transA=1, transB=1)], (64, 4), (4, 32),
              [const("w", weights(rng, (32, 64)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    assert place_nodes(g, load_config("pynq"))["fc"]["reason"] == "Gemm with a transposed or run-time operand"
