"""Whole models: compile, run through the executor, compare with onnxruntime (fp32, 1e-4)."""
import numpy as np
import onnxruntime as ort
import pytest

import model_builders as builders
from vdla.compiler.compile_model import compile_model
from vdla.driver.artifact import from_bytes
from vdla.driver.executor import Executor

MODELS = {
    "small_cnn": lambda: builders.small_cnn(),
    "resnet18": lambda: builders.resnet18(image=96, classes=100),
    "mobilenetv2": lambda: builders.mobilenetv2(image=96, classes=100),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_onnxruntime(name, use_kernels, rng):
    model = MODELS[name]()
    artifact = compile_model(model, kernels=use_kernels)
    executor = Executor(from_bytes(artifact.to_bytes()))
    spec = artifact.plan["inputs"][0]
    x = rng.standard_normal(spec["shape"]).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {spec["name"]: x})[0]
    got = executor.run({spec["name"]: x})[artifact.plan["outputs"][0]["name"]]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert artifact.plan["arena_bytes"] < artifact.plan["naive_bytes"]
    if use_kernels:
        kinds = [s["kind"] for s in artifact.plan["steps"]]
        assert kinds.count("kernel") > kinds.count("host"), artifact.header["compile"]["host_reasons"]
