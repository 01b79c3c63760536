"""An If whose condition is a compile-time constant (vdla.compiler.graph.passes.inline_if) becomes
the branch it takes: no If and no host step is left, the branch's names are prefixed with the If's,
nested control flow inside the branch keeps reading the right values, and the result is
onnxruntime's."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor


def _branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [tensor(out, (2, 3))])


def _model(condition: bool, runtime: bool = False):
    """y = If(cond) then relu(x) * k (k a branch constant) else (If(inner) then x - 1 else x + 1)."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "k"], ["t"])],
                               "then", [], [tensor("t", (2, 3))], initializer=[const("k", np.float32(3))])
    inner_then = _branch("it", [helper.make_node("Sub", ["x", "one"], ["a"])], "a")
    inner_else = _branch("ie", [helper.make_node("Add", ["x", "one"], ["b"])], "b")
    else_g = _branch("else", [helper.make_node("If", ["inner"], ["e"], then_branch=inner_then,
                                               else_branch=inner_else)], "e")
    nodes = [helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)]
    inits = [const("one", np.float32(1)), const("inner", np.array(False))]
    inputs = [tensor("x", (2, 3))]
    if runtime:
        inputs.append(tensor("cond", (), TensorProto.BOOL))
    else:
        inits.append(const("cond", np.array(condition)))
    return onnx_model(nodes, inputs, [tensor("y", (2, 3))], inits)


@pytest.mark.parametrize("condition", [True, False])
def test_a_constant_condition_leaves_the_branch_it_takes(rng, condition):
    g = optimize(import_onnx(_model(condition)))
    assert not any(n.op == "If" or n.host_only for n in g.nodes)
    assert all(n.name.startswith("choose/") for n in g.nodes)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    (want,) = onnxruntime_outputs(_model(condition), {"x": x})
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], want, rtol=1e-6)


def test_the_inlined_branch_compiles_to_kernels():
    kinds = {s.kind for s in compile_model(_model(True)).plan.steps}
    assert "kernel" in kinds and "host" not in kinds      # (the Identity naming the output is an alias)


def test_a_run_time_condition_stays_one_host_step():
    g = optimize(import_onnx(_model(True, runtime=True)))
    (node,) = g.nodes
    assert node.host_only and node.body[0].op == "If"
