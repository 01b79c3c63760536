"""steps_as_operands (vdla.compiler.vdla.edge_steps) and what it is for: the conversions at the
accelerator's edge compile to CPU kernels (vdla.compiler.topi.vdla_edge) that conversions of
one shape share, and a model's run through them equals, bit for bit, its run through their
numpy semantics (the host ops, which the same model compiled without those kernels runs)."""
import numpy as np
import pytest

from vdla.compiler import lower_ops
from vdla.compiler.compile_model import compile_model
from vdla.compiler.graph.ir import Graph, Node, TensorType
from vdla.compiler.vdla.edge_steps import steps_as_operands
from vdla.driver.executor import Executor

from ..graph.onnx_graphs import const
from .ops.op_oracle import model, node, weights
from .ops.test_matmul import _attention

EDGES = ("VdlaQuantize", "VdlaDequantize", "VdlaQuantizeWeights")


def _graph(scale, shape=(1, 20, 4, 4)):
    g = Graph("g", ["x"], ["y"], [Node("VdlaQuantize", "q", ["x"], ["y"],
                                       {"scale": scale, "batch": 1, "block": 16, "matrix": False})],
              {"x": TensorType(shape, "float32"), "y": TensorType((1, 2, 4, 4, 1, 16), "int8")}, {}, 17, {})
    return steps_as_operands(g)


def test_one_step_for_channels_that_share_it_else_one_per_channel():
    g = _graph([0.5] * 20 + [1.0] * 12)          # the padding's steps do not count
    (node,) = g.nodes
    assert node.inputs == ["x", "q.steps"] and "scale" not in node.attrs
    np.testing.assert_array_equal(g.constants["q.steps"], np.array([0.5], np.float32))
    steps = [0.5] * 19 + [0.25] + [0.0] * 12
    np.testing.assert_array_equal(_graph(steps).constants["q.steps"], np.array(steps, np.float32))


def _compiled(m, rng, shape):
    calib = rng.standard_normal((4, *shape)).astype(np.float32)
    return compile_model(m, target="vdla", hw_config="pynq", calibration={"x": calib})


def _cnn():
    """A 3-channel stem (its input quantized as im2col columns), a conv, the output NCHW."""
    rng = np.random.default_rng(1)
    nodes = [node("Conv", ["x", "w1"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], name="stem"),
             node("Relu", ["a"], ["r"], name="relu"),
             node("Conv", ["r", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv")]
    return model(nodes, (1, 3, 19, 17), (1, 24, 10, 9), [const("w1", weights(rng, (20, 3, 3, 3))),
                                                         const("w2", weights(rng, (24, 20, 3, 3)))])


@pytest.mark.parametrize("build,shape", [(lambda rng: _attention(rng, 3, 37, 32), (1, 37, 96)),
                                         (lambda rng: _cnn(), (1, 3, 19, 17))], ids=["attention", "cnn"])
def test_the_edge_kernels_compute_their_numpy_semantics_in_a_model(build, shape, rng, monkeypatch):
    """attention: rows in padded groups, weights made at run time, kernels shared; cnn: the
    stem's im2col columns, an NCHW output."""
    m = build(rng)
    art = _compiled(m, np.random.default_rng(0), shape)
    edges = [s for s in art.plan.steps if s.op in EDGES]
    assert edges and all(s.kind == "kernel" for s in edges), [(s.name, s.kind) for s in edges]
    if len(edges) > 2:                                             # shapes repeat: their kernels are shared
        assert len({s.kernel for s in edges}) < len(edges)
    for op in EDGES:                                               # the same model, its edges host steps
        monkeypatch.delitem(lower_ops.RULES, op)
    host = _compiled(m, np.random.default_rng(0), shape)
    assert all(s.kind == "host" for s in host.plan.steps if s.op in EDGES)
    ours, theirs = Executor(art, device="numpy"), Executor(host, device="numpy")
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32) * 2
        np.testing.assert_array_equal(ours.run({"x": x})["y"], theirs.run({"x": x})["y"])


def test_weights_made_from_a_non_finite_tensor_are_refused_before_their_kernel(rng):
    """MatMul(x, 1 / (8 - mean(x))ᵀ): calibration never meets the pole, a run at it makes the
    second operand inf, and its run-time weights' kernel step refuses it, naming itself."""
    from vdla.driver.executor import StepError
    nodes = [node("ReduceMean", ["x"], ["s"], axes=[0], keepdims=0, name="mean"),
             node("Sub", ["eight", "s"], ["d"], name="gap"),
             node("Div", ["one", "d"], ["r"], name="pole"),
             node("Transpose", ["r"], ["b"], perm=[1, 0], name="t"),
             node("MatMul", ["x", "b"], ["y"], name="prod")]
    m = model(nodes, (2, 8, 32), (2, 8, 8), [const("eight", np.float32(8.0)), const("one", np.float32(1.0))])
    art = _compiled(m, rng, (2, 8, 32))
    (step,) = [s for s in art.plan.steps if s.op == "VdlaQuantizeWeights"]
    assert step.kind == "kernel"
    x = rng.standard_normal((2, 8, 32)).astype(np.float32)
    run = Executor(art)
    assert np.isfinite(run.run({"x": x})["y"]).all()
    x[:, 3, 5] = 8.0                                   # mean 8: 1 / 0
    with pytest.raises(StepError, match=rf"step '{step.name}' \(VdlaQuantizeWeights, a CPU kernel\) refused its "
                                        r"input: .* holds 1 inf value"):
        run.run({"x": x})
