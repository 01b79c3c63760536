"""The executor always compares the artifact's hardware config with the device it runs on: the
simulator it opens and a device it is given. A board, whose config is its bitstream's (not the
artifact's), is checked through the real pynq package in tests/pynq_board."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.driver.artifact import ArtifactError, from_bytes
from vdla.driver.artifact_trust import ENV_VAR
from vdla.driver.devices import SimulatorDevice
from vdla.driver.executor import Executor
from vdla.hw import load_config

WIDE = {**load_config("pynq").to_dict(), "LOG_BLOCK": 5}   # a 1x32 instance: not the default


@pytest.fixture(autouse=True)
def no_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def wide_artifact():
    """One 32-channel conv on the accelerator, compiled for WIDE."""
    from vdla.compiler.compile_model import compile_model
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    calibration = {"x": rng.standard_normal((4, 1, 32, 8, 8)).astype(np.float32)}
    a = compile_model(model, target="vdla", hw_config=WIDE, calibration=calibration)
    assert "vdla" in [s.kind for s in a.plan.steps]
    return a.to_bytes()


def test_the_simulator_is_opened_for_the_artifacts_config(wide_artifact):
    ex = Executor(from_bytes(wide_artifact))
    assert ex.device.config.hash == load_config(WIDE).hash
    ex.run({"x": np.zeros((1, 32, 8, 8), np.float32)})


def test_a_given_device_is_compared_even_with_hw_config(wide_artifact):
    """--hw-config used to replace the device's config in the check: a default-config device
    then ran a program built for another instance."""
    device = SimulatorDevice(load_config("pynq"))
    with pytest.raises(ArtifactError, match=r"hardware config mismatch: .* 1x32_i8w8a32.*the device .* 1x16_i8w8a32"):
        Executor(from_bytes(wide_artifact), hw_config=load_config(WIDE), device=device)
    with pytest.raises(ArtifactError, match="hardware config mismatch"):
        Executor(from_bytes(wide_artifact), device=device)
