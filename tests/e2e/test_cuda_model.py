"""vdla compile --target cuda on whole models: every group the GPU path takes is a GPU step with
its program's PTX (ptxas accepts it), and the executor runs the artifact -- activations resident
in device memory, host steps between -- here on a device whose launches run the kernels' CPU
emulation, against onnxruntime; with VDLA_TESTS_ON_GPU=1, on the CUDA GPU (gpu_for_tests)."""
import numpy as np
import onnxruntime as ort
import pytest

from emulated_gpu import EmulatedGpu, gpu_for_tests, record_gpu_kernels
from model_builders import mobilenetv2, small_cnn
from vdla.compiler.compile_cuda import host_gpu_arch
from vdla.compiler.compile_model import compile_model
from vdla.compiler.codegen.nvptx import ptxas
from vdla.driver import artifact as art
from vdla.driver import gpu_limits as limits
from vdla.driver.artifact_errors import ArtifactError
from vdla.driver.executor import Executor


def compile_cuda(monkeypatch, model):
    with record_gpu_kernels(monkeypatch) as kernels:
        artifact = art.from_bytes(compile_model(model, target="cuda").to_bytes())   # through the file format
    return artifact, kernels


def run_against_onnxruntime(artifact, kernels, model, x, rtol):
    device = gpu_for_tests(kernels)
    got = Executor(artifact, device=device).run({"input": x})
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    (out,) = got.values()
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * np.abs(want).max())
    return device


def test_small_cnn(monkeypatch):
    model = small_cnn(batch=2, image=32)
    artifact, kernels = compile_cuda(monkeypatch, model)
    steps = artifact.plan.steps
    kinds = [s.kind for s in steps]
    assert kinds.count("gpu") >= 8 and "kernel" not in kinds
    assert artifact.header["target"] == {"kind": "cuda", "arch": host_gpu_arch() or limits.DEFAULT_ARCH}
    host = {s.name for s in steps if s.kind == "host"}
    assert set(artifact.header["compile"]["host_reasons"]) == host   # each with its reason (reflect padding)
    x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
    device = run_against_onnxruntime(artifact, kernels, model, x, 1e-4)
    # the input goes in once, the softmax comes out once, plus what the host steps exchange
    host_steps = kinds.count("host")
    if isinstance(device, EmulatedGpu):
        assert device.reads <= 1 + 2 * host_steps and len(device.launched) >= kinds.count("gpu")


@pytest.mark.slow
def test_mobilenetv2_depthwise_and_pointwise(monkeypatch):
    model = mobilenetv2(batch=1, image=32, classes=10)
    artifact, kernels = compile_cuda(monkeypatch, model)
    assert all(s.kind in ("gpu", "alias") for s in artifact.plan.steps), artifact.header["compile"]["host_reasons"]
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    run_against_onnxruntime(artifact, kernels, model, x, 1e-3)


def test_gpu_programs_assemble(monkeypatch):
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas (the dev extra installs nvidia-cuda-nvcc-cu12)")
    artifact, _ = compile_cuda(monkeypatch, small_cnn(batch=1, image=16))
    for doc in artifact.header["gpu_programs"]:
        for arch in sorted({doc["arch"], limits.ARCHS[-1]}):  # its own and the newest
            ptxas.assemble(doc["ptx"], arch, what=doc["name"])


def test_a_step_passing_a_wrong_buffer_is_refused(monkeypatch):
    artifact, _ = compile_cuda(monkeypatch, small_cnn(batch=1, image=16))
    plan = artifact.header["plan"]      # the header's JSON form: what a file would hold
    step = next(s for s in plan["steps"] if s["kind"] == "gpu")
    step["args"][0] = plan["outputs"][0]["name"]
    with pytest.raises(ArtifactError, match=rf"step {step['name']!r} passes .* as GPU program g0_"):
        Executor(artifact, device=EmulatedGpu({}))


def test_a_launch_edited_over_the_limits_is_refused(monkeypatch):
    artifact, _ = compile_cuda(monkeypatch, small_cnn(batch=1, image=16))
    artifact.header["gpu_programs"][0]["kernels"][0]["block"] = [1024, 2, 1]
    with pytest.raises(ArtifactError, match=r"artifact header: gpu_programs\[0\]: GPU program g0_\w+: kernel "
                                            r"g0_\w+: 2048 threads per block, over 1024"):
        Executor(artifact, device=EmulatedGpu({}))
