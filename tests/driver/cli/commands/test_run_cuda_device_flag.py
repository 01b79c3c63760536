"""`vdla run --device` for artifacts compiled with --target cuda: their GPU steps run on the CUDA
GPU --device names (cuda = cuda:0, the default); an accelerator device (sim, rtl, pynq) for them,
or cuda for an artifact without GPU steps, is refused with the reason instead of being ignored."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from emulated_gpu import EmulatedGpu, record_gpu_kernels
from vdla.compiler.compile_model import compile_model
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError, RunError


def _model():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sigmoid", ["r"], ["y"])],
                              "relu_sigmoid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 50])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 50])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.fixture
def cuda_artifact(tmp_path, monkeypatch):
    with record_gpu_kernels(monkeypatch) as kernels:
        compile_model(_model(), target="cuda").save(str(tmp_path / "m.vdla"))
    return tmp_path / "m.vdla", kernels


@pytest.mark.parametrize("device", ["sim", "rtl", "pynq"])
def test_an_accelerator_device_for_gpu_steps_is_refused(device, cuda_artifact, capsys):
    path, _ = cuda_artifact
    assert main(["run", str(path), "--device", device]) == EXIT_CODES[ConfigError]
    err = capsys.readouterr().err
    assert f"--device {device} runs accelerator steps, and this artifact's 1 steps run on a GPU" in err
    assert "--device cuda or cuda:N" in err


def test_cuda_for_an_artifact_without_gpu_steps_is_refused(tmp_path, capsys):
    compile_model(_model(), target="cpu").save(str(tmp_path / "cpu.vdla"))
    assert main(["run", str(tmp_path / "cpu.vdla"), "--device", "cuda:1"]) == EXIT_CODES[ConfigError]
    assert "--device cuda:1 runs the GPU steps of an artifact compiled with --target cuda, and this artifact " \
           "has none" in capsys.readouterr().err


def test_a_malformed_device_name_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(tmp_path / "m.vdla"), "--device", "cuda:first"])
    assert exit_.value.code == 2
    assert "invalid device 'cuda:first': choose sim, rtl, pynq, cuda or cuda:N" in capsys.readouterr().err


@pytest.mark.parametrize("flag, ordinal", [([], 0), (["--device", "cuda"], 0), (["--device", "cuda:3"], 3)])
def test_the_named_gpu_runs_the_gpu_steps(flag, ordinal, cuda_artifact, monkeypatch, tmp_path, capsys):
    path, kernels = cuda_artifact
    opened = []

    def open_gpu(n=0):
        opened.append(n)
        return EmulatedGpu(kernels)
    monkeypatch.setattr("vdla.driver.devices.cuda.CudaDevice", open_gpu)
    x = np.linspace(-3, 3, 100, dtype=np.float32).reshape(2, 50)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "--output", str(tmp_path / "out")]
                + flag) == 0, capsys.readouterr().err
    assert opened == [ordinal]
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)


def test_without_a_gpu_the_run_says_so(cuda_artifact, capsys):
    from vdla.driver.device import DeviceError
    from vdla.driver.devices.cuda import CudaDevice
    try:
        CudaDevice().close()
        pytest.skip("a CUDA device is here")
    except DeviceError:
        pass
    path, _ = cuda_artifact
    assert main(["run", str(path), "--device", "cuda"]) == EXIT_CODES[RunError]     # a DeviceError
    err = capsys.readouterr().err
    assert err.startswith("vdla run: error: ") and ("no CUDA device" in err or "needs cuda-bindings" in err)
