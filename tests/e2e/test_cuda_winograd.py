"""The GPU path's choice of Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions: which ones it
takes (topi.gpu.winograd.winograd_pays: FLOPs saved against two extra launches), the weights'
transforms replacing the weights in the artifact, whole models run on the emulated GPU (the CUDA
GPU with VDLA_TESTS_ON_GPU=1) against onnxruntime, and the direct form when the Winograd build
fails."""
import numpy as np
import onnxruntime as ort
import pytest

from emulated_gpu import gpu_for_tests, record_gpu_kernels
from model_builders import resnet18, small_cnn
from vdla.compiler.compile_cuda import compile_for_cuda
from vdla.compiler.topi import gpu as topi_gpu
from vdla.compiler.topi import tags
from vdla.compiler.topi.gpu import winograd as gpu_winograd
from vdla.driver.executor import Executor


def _winograd_steps(artifact):
    return [s for s in artifact.plan.steps if s.kind == "gpu" and any("@winograd_gpu" in a for a in s.args)]


def test_resnet18s_3x3_stride_1_convs_pay_at_224():
    logs = []
    artifact = compile_for_cuda(resnet18(batch=1, image=224), log=logs.append)
    assert len(_winograd_steps(artifact)) == 13     # 4 in the first stage, 3 in each of the others
    assert not [k for k in artifact.params if k.endswith("@winograd_gpu") and k[:-len("@winograd_gpu")]
                in artifact.params]                 # the weights themselves are gone
    for name, u in artifact.params.items():
        if name.endswith("@winograd_gpu"):
            assert u.shape[:2] == (4, 4) and u.shape[4:] == (1, 1)
    assert not _winograd_steps(compile_for_cuda(resnet18(batch=1, image=224), winograd=False))


def test_winograd_pays_for_wide_images_not_for_small_ones():
    direct, winograd = gpu_winograd.conv_flops(1, 64, 64, 56, 56)
    assert direct == 2 * 64 * 64 * 9 * 56 * 56 and winograd < direct / 2
    assert gpu_winograd.winograd_pays(1, 64, 64, 56, 56)
    assert gpu_winograd.winograd_pays(1, 512, 512, 7, 7)
    assert not gpu_winograd.winograd_pays(1, 16, 16, 8, 8)


def _run(artifact, kernels, model, x, rtol):
    got = Executor(artifact, device=gpu_for_tests(kernels)).run({"input": x})
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    (out,) = got.values()
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("build, shape", [(small_cnn, (2, 3, 32, 32)), (resnet18, (1, 3, 32, 32))])
def test_models_with_every_eligible_conv_by_winograd_match_onnxruntime(build, shape, monkeypatch):
    monkeypatch.setattr(gpu_winograd, "WINOGRAD_FLOPS_PER_LAUNCH", 0.0)    # take every eligible conv
    model = build(batch=shape[0], image=shape[2], classes=10)
    with record_gpu_kernels(monkeypatch) as kernels:
        artifact = compile_for_cuda(model)
    assert _winograd_steps(artifact)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    _run(artifact, kernels, model, x, 1e-4)


def test_a_failing_winograd_build_compiles_the_conv_direct(monkeypatch):
    monkeypatch.setattr(gpu_winograd, "WINOGRAD_FLOPS_PER_LAUNCH", 0.0)

    def broken(s, gemm, out):
        raise RuntimeError("no Winograd today")
    monkeypatch.setitem(topi_gpu.ANCHORS, tags.WINOGRAD_GEMM, broken)
    model = small_cnn(batch=1, image=16, classes=10)
    logs = []
    with record_gpu_kernels(monkeypatch) as kernels:
        artifact = compile_for_cuda(model, log=logs.append)
    assert not _winograd_steps(artifact) and not any(k.endswith("@winograd_gpu") for k in artifact.params)
    assert any("Winograd failed (RuntimeError: no Winograd today); compiling it direct" in line for line in logs)
    assert not [r for r in artifact.header["compile"]["host_reasons"].values() if "FAILED" in r]
    _run(artifact, kernels, model, np.random.default_rng(6).standard_normal((1, 3, 16, 16)).astype(np.float32), 1e-4)
