"""The graph executor (vdla.driver.executor): an artifact's steps (compiled CPU kernels, host
steps, aliases, accelerator steps) run in plan order and give onnxruntime's outputs; inputs that
do not fit the plan are named with what it expects; every run starts from its own inputs and
returns arrays the caller owns; accelerator steps give the same bytes on the simulator as their
host-op interpretation."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor


def _model(rng):
    """conv -> relu -> flatten (an alias step) -> gemm -> softmax."""
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array((rng.standard_normal((5, 8 * 6 * 6)) * 0.05).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("Gemm", ["f", "fc"], ["g"], transB=1),
             helper.make_node("Softmax", ["g"], ["y"])]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.fixture(scope="module")
def model():
    return _model(np.random.default_rng(5))


@pytest.fixture(scope="module")
def compiled(model):
    return compile_model(model)


@pytest.mark.parametrize("kernels", [True, False], ids=["cpu_kernels", "host_steps"])
def test_outputs_equal_onnxruntime_in_plan_order(model, rng, kernels):
    artifact = compile_model(model, kernels=kernels)
    kinds = {s.kind for s in artifact.plan.steps}
    assert ("kernel" in kinds) == kernels and "alias" in kinds
    ex = Executor(artifact)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    out = ex.run({"x": x}, profile=True)
    np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-6)
    assert [t.name for t in ex.last_timings] == [s.name for s in artifact.plan.steps]


def test_each_run_starts_from_its_inputs_and_returns_arrays_the_caller_owns(compiled, model, rng):
    ex = Executor(compiled)
    session = ort.InferenceSession(model.SerializeToString())
    xs = [rng.standard_normal((2, 3, 6, 6)).astype(np.float32) for _ in range(3)]
    first = ex.run({"x": xs[0]})["y"]
    kept = first.copy()
    first[:] = -1                                  # the caller's array: the executor must not see this
    for x in xs[1:] + xs[:1]:
        np.testing.assert_allclose(ex.run({"x": x})["y"], session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ex.run({"x": xs[0]})["y"], kept)


@pytest.mark.parametrize("inputs, match", [
    ({}, r"missing input 'x' \(float32\[2, 3, 6, 6\]\)"),
    ({"x": np.zeros((1, 3, 6, 6), np.float32)}, r"input 'x': expected float32\[2, 3, 6, 6\], got float32\[1, 3, 6, 6\]"),
    ({"x": np.zeros((2, 3, 6, 6), np.float64)}, r"input 'x': expected float32\[2, 3, 6, 6\], got float64\[2, 3, 6, 6\]"),
    ({"x": np.zeros((2, 3, 6, 6), np.float32), "z": np.zeros(1)}, r"unknown inputs \['z'\]; the model's inputs are \['x'\]"),
])
def test_inputs_that_do_not_fit_the_plan_are_named(compiled, inputs, match):
    with pytest.raises(ValueError, match=match):
        Executor(compiled).run(inputs)


def test_accelerator_steps_give_the_bytes_of_their_host_ops(rng):
    """A conv the accelerator takes: the simulator device and the host ops ("numpy") agree bit
    for bit, and stay close to the float model."""
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
                              initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    calib = {"x": rng.standard_normal((4, 1, 16, 8, 8)).astype(np.float32)}
    artifact = compile_model(model, target="vdla", hw_config="pynq", calibration=calib)
    assert "vdla" in {s.kind for s in artifact.plan.steps}
    x = calib["x"][0]
    on_sim = Executor(artifact).run({"x": x})["y"]
    on_host = Executor(artifact, device="numpy").run({"x": x})["y"]
    np.testing.assert_array_equal(on_sim, on_host)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    sqnr = 10 * np.log10(np.sum(want.astype(np.float64) ** 2) / np.sum((on_sim - want) ** 2))
    assert sqnr > 30, sqnr
