"""VdlaAdd (vdla.compiler.vdla.ops.add, with its semantics vdla.driver.host_ops.vdla.add): a residual Add with its ReLU on the accelerator's
ALU, in both quantization modes; a broadcast or constant operand stays on the CPU."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


@pytest.mark.parametrize("vta_compat", [False, True])
def test_residual_add_relu(rng, vta_compat):
    nodes = [node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"], name="relu1"),
             node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             node("Add", ["c2", "r1"], ["a"], name="residual"), node("Relu", ["a"], ["y"], name="relu2")]
    m = model(nodes, (1, 16, 8, 8), (1, 16, 8, 8),
              [const("w1", weights(rng, (16, 16, 3, 3))), const("w2", weights(rng, (16, 16, 3, 3), 0.1))])
    check_offloaded(m, OPS["VdlaAdd"].name, ["residual"], rng, vta_compat=vta_compat)


def test_a_broadcast_operand_stays_on_the_cpu(rng):
    m = model([node("Add", ["x", "k"], ["y"], name="add")], (1, 16, 8, 8), (1, 16, 8, 8),
              [const("k", weights(rng, (16, 1, 1)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    assert place_nodes(g, load_config("pynq"))["add"]["reason"].startswith("Add with broadcasting or a constant")
