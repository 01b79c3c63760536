"""The CUDA pipeline's architecture: `--target cuda:sm_NN` (and `--gpu-arch`) for every architecture
vdla emits, PTX that says so and that ptxas assembles for it, and by default this machine's GPU,
else limits.DEFAULT_ARCH. The artifacts run (emulated GPU here, the real one with
VDLA_TESTS_ON_GPU=1) against numpy."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from emulated_gpu import gpu_for_tests, record_gpu_kernels
from vdla.compiler import compile_cuda
from vdla.compiler.codegen.nvptx import ptxas
from vdla.compiler.compile_model import compile_model
from vdla.compiler.target import TargetError, check_target, cuda_arch
from vdla.driver import gpu_limits as limits
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.driver.executor import Executor
from vdla.hw.errors import ConfigError


def _softmax_model():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Softmax", ["r"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 40])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _numpy_softmax(x):
    e = np.exp(np.maximum(x, 0) - np.maximum(x, 0).max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("arch", limits.ARCHS)
def test_every_architecture_compiles_assembles_and_runs(arch, monkeypatch):
    with record_gpu_kernels(monkeypatch) as kernels:
        artifact = compile_model(_softmax_model(), target=f"cuda:{arch}")
    assert artifact.header["target"] == {"kind": "cuda", "arch": arch}
    for doc in artifact.header["gpu_programs"]:
        assert doc["arch"] == arch and f".target {arch}" in doc["ptx"]
        if ptxas.find_ptxas() is not None:
            try:
                ptxas.assemble(doc["ptx"], arch, what=doc["name"])
            except ptxas.PtxasError as exc:    # CUDA 13's ptxas dropped sm_70 (its driver still runs the PTX)
                if "is not defined for option 'gpu-name'" not in str(exc):
                    raise
                pytest.skip(f"this ptxas does not assemble {arch}: {exc}")
    x = np.random.default_rng(0).standard_normal((4, 40)).astype(np.float32)
    got = Executor(artifact, device=gpu_for_tests(kernels)).run({"x": x})["y"]
    np.testing.assert_allclose(got, _numpy_softmax(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", ["cuda:sm_61", "cuda:sm_100", "cuda:", "cuda:80", "cudax"])
def test_an_architecture_vdla_does_not_emit_is_named(target):
    with pytest.raises(TargetError, match=", ".join(limits.ARCHS) if target != "cudax" else "known targets"):
        check_target(target)


def test_plain_cuda_is_this_machines_gpu_else_the_default(monkeypatch):
    assert cuda_arch("cuda") is None and cuda_arch("cuda:sm_86") == "sm_86"
    monkeypatch.setattr(compile_cuda, "host_gpu_arch", lambda: None)
    assert compile_model(_softmax_model(), target="cuda").header["target"]["arch"] == limits.DEFAULT_ARCH
    monkeypatch.setattr(compile_cuda, "host_gpu_arch", lambda: "sm_89")
    assert compile_model(_softmax_model(), target="cuda").header["target"]["arch"] == "sm_89"


class _FakeDevice:
    def __init__(self, arch):
        self.arch = arch

    def close(self):
        pass


@pytest.mark.parametrize("device_arch, want", [("sm_90", "sm_90"), ("sm_87", "sm_86"), ("sm_120", "sm_90"),
                                               ("sm_75", "sm_75")])
def test_the_hosts_gpu_gets_the_newest_architecture_it_runs(device_arch, want, monkeypatch):
    import vdla.driver.devices.cuda as cuda
    monkeypatch.setattr(cuda, "CudaDevice", lambda: _FakeDevice(device_arch))
    assert compile_cuda.host_gpu_arch() == want


def test_a_gpu_older_than_every_architecture_is_an_error_not_a_wrong_default(monkeypatch):
    import vdla.driver.devices.cuda as cuda
    monkeypatch.setattr(cuda, "CudaDevice", lambda: _FakeDevice("sm_61"))
    with pytest.raises(TargetError, match=r"this machine.s GPU is sm_61; .* \(--target cuda:sm_NN\)"):
        compile_cuda.host_gpu_arch()


def test_cli_gpu_arch(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    onnx.save(_softmax_model(), str(model))
    out = tmp_path / "m.vdla"
    assert main(["compile", str(model), "-o", str(out), "--target", "cuda", "--gpu-arch", "sm_75"]) == 0
    from vdla.driver import artifact as art
    assert art.load(str(out)).header["target"]["arch"] == "sm_75"
    assert main(["compile", str(model), "-o", str(out), "--target", "cpu", "--gpu-arch", "sm_75"]) == \
        EXIT_CODES[ConfigError]     # an OptionError
    assert "--gpu-arch sm_75 names a GPU: use it with --target cuda" in capsys.readouterr().err
    assert main(["compile", str(model), "-o", str(out), "--target", "cuda:sm_80", "--gpu-arch", "sm_75"]) == \
        EXIT_CODES[ConfigError]
    assert main(["compile", str(model), "-o", str(out), "--target", "cuda", "--gpu-arch", "sm_52"]) == \
        EXIT_CODES[ConfigError]     # a TargetError
    assert "sm_52" in capsys.readouterr().err
