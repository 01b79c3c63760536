"""lower_graph compiles a graph's kernels in this process or, jobs > 1, on spawned workers:
the artifact is the same either way, and a kernel that fails to build leaves every node it
would have served a host step that says why."""
import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor


def _cnn(rng):
    """Conv+Relu, a 1x1 Conv, two equal Adds, pooling, Gemm: seven kernels with the layout
    changes, one of them (the Add's) serving two nodes."""
    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.2, name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]),
             helper.make_node("Add", ["c2", "c2"], ["a1"]),
             helper.make_node("Add", ["a1", "a1"], ["a2"]),
             helper.make_node("GlobalAveragePool", ["a2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w3"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[init("w1", 8, 8, 3, 3), init("b1", 8), init("w2", 16, 8, 1, 1),
                                           init("w3", 10, 16)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_kernels_compiled_on_workers_are_the_ones_compiled_here(rng):
    import onnxruntime
    model = _cnn(rng)
    here, spawned = compile_model(model, jobs=1), compile_model(model, jobs=2)
    assert len(here.objects) == 7
    assert here.objects == spawned.objects                     # the same object code, byte for byte
    assert here.header["compile"]["host_reasons"] == spawned.header["compile"]["host_reasons"] == {}
    assert [s.to_dict() for s in here.plan.steps] == [s.to_dict() for s in spawned.plan.steps]
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(Executor(spawned).run({"x": x})["y"], ort.run(None, {"x": x})[0], rtol=1e-4,
                               atol=1e-5)


def test_a_kernel_that_fails_to_build_leaves_each_node_it_serves_a_host_step(rng, monkeypatch):
    model = _cnn(rng)
    lower_graph = importlib.import_module("vdla.compiler.lower_graph")
    compile_job = lower_graph.compile_job

    def failing_adds(job):
        return "BUILD FAILED: RuntimeError: no adds today" if job.name.endswith("_add") else compile_job(job)
    monkeypatch.setattr(lower_graph, "compile_job", failing_adds)
    art = compile_model(model, jobs=1)
    reasons = art.header["compile"]["host_reasons"]
    assert reasons == {"Add_3": "BUILD FAILED: RuntimeError: no adds today",
                       "Add_4": "BUILD FAILED: RuntimeError: no adds today"}
    assert [s.kind for s in art.plan.steps if s.name.startswith("Add")] == ["host", "host"]
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    monkeypatch.undo()
    want = Executor(compile_model(model)).run({"x": x})["y"]
    np.testing.assert_allclose(Executor(art).run({"x": x})["y"], want, rtol=1e-5, atol=1e-6)


def test_jobs_below_one_is_refused_before_any_work(rng):
    with pytest.raises(ValueError, match="jobs=0: at least one process compiles the kernels"):
        compile_model(_cnn(rng), jobs=0)


def test_progress_shows_the_kernels_compiled(rng, capsys):
    compile_model(_cnn(rng), progress=True)
    err = capsys.readouterr().err
    assert "CPU kernels: 100%" in err and "7/7" in err, err
