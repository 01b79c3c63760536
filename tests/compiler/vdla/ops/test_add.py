"""VdlaAdd (vdla.compiler.vdla.ops.add; its semantics: vdla.driver.host_ops.vdla.add): a residual
Add with its ReLU on the accelerator's ALU, images and token sequences, in both quantization
modes; a broadcast or constant operand stays on the CPU."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


@pytest.mark.parametrize("vta_compat", [False, True])
def test_residual_add_relu(rng, vta_compat):
    """A ResNet block's tail: the Add runs in the epilogue of the conv that makes its later
    operand (the other scaled to the output's grid), with the ReLU; in VTA mode (no int8
    residual loads) as the ALU's Add."""
    nodes = [node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"], name="relu1"),
             node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             node("Add", ["c2", "r1"], ["a"], name="residual"), node("Relu", ["a"], ["y"], name="relu2")]
    m = model(nodes, (1, 16, 8, 8), (1, 16, 8, 8),
              [const("w1", weights(rng, (16, 16, 3, 3))), const("w2", weights(rng, (16, 16, 3, 3), 0.1))])
    if vta_compat:
        check_offloaded(m, OPS["VdlaAdd"].name, ["residual"], rng, vta_compat=True)
        return
    place = check_offloaded(m, OPS["VdlaConv"].name, ["conv1", "conv2"], rng)
    assert place["residual"]["fused_into"] == "conv2" and place["relu2"]["fused_into"] == "residual"


def test_an_add_runs_apart_where_its_conv_output_is_read_again(rng):
    """conv2's output feeds two Adds: no epilogue can take the first, and the second's later
    operand is the first Add's, not a conv's; both run on the ALU."""
    nodes = [node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"], name="relu1"),
             node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             node("Add", ["c2", "r1"], ["a"], name="residual"), node("Add", ["a", "c2"], ["y"], name="again")]
    m = model(nodes, (1, 16, 8, 8), (1, 16, 8, 8),
              [const("w1", weights(rng, (16, 16, 3, 3))), const("w2", weights(rng, (16, 16, 3, 3), 0.1))])
    place = check_offloaded(m, OPS["VdlaAdd"].name, ["residual", "again"], rng)
    assert not place["residual"].get("fused_into") and not place["again"].get("fused_into")


def test_a_constant_or_broadcast_operand_stays_on_the_cpu(rng):
    nodes = [node("Add", ["x", "k"], ["a"], name="add_constant"), node("Relu", ["x"], ["r"], name="relu"),
             node("ReduceMax", ["r"], ["m"], name="rowmax", axes=[1], keepdims=1),
             node("Add", ["a", "m"], ["y"], name="add_broadcast")]
    m = model(nodes, (1, 16, 8, 8), (1, 16, 8, 8), [const("k", weights(rng, (16, 1, 1)))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    place = place_nodes(g, load_config("pynq"))
    assert place["add_constant"]["reason"].startswith("Add of a constant: the ALU adds two tensors computed at run")
    assert place["add_broadcast"]["reason"].startswith("Add with broadcasting ([1, 16, 8, 8] + [1, 1, 8, 8])")


@pytest.mark.parametrize("vta_compat", [False, True])
def test_a_residual_add_of_token_sequences(rng, vta_compat):
    """Linear layers over a token sequence and the sum of two of them: the Add takes the tensors
    as the matrix rows the linear layers leave; one of a tensor the CPU made stays there."""
    nodes = [node("MatMul", ["x", "w1"], ["h"], name="fc1"), node("MatMul", ["h", "w2"], ["p"], name="fc2"),
             node("MatMul", ["x", "w3"], ["s"], name="skip"), node("Add", ["p", "s"], ["r"], name="residual"),
             node("Add", ["r", "x"], ["y"], name="to_input")]
    m = model(nodes, (2, 12, 32), (2, 12, 32), [const("w1", weights(rng, (32, 48))), const("w2", weights(rng, (48, 32))),
                                                const("w3", weights(rng, (32, 32)))])
    place = check_offloaded(m, OPS["VdlaAdd"].name, ["residual"], rng, min_sqnr_db=20.0, vta_compat=vta_compat)
    assert place["to_input"]["device"] == "cpu" and "a tensor the CPU computed" in place["to_input"]["reason"]
