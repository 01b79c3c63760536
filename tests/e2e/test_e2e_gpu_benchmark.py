"""benchmarks/e2e_gpu.py without a GPU: its arguments, the models it builds, the correctness check
before timing and the JSON line's keys, run on a device whose launches are the kernels' CPU
emulation (tiny images), with onnxruntime on the CPU standing in for a GPU peer; the real peers
absent here give null figures with the reason; with no device at all it says why and exits 2.
On a GPU machine benchmarks/gpu_device_check.sh runs the real thing."""
import importlib.util
import json
import pathlib
import sys

import numpy as np
import pytest

from emulated_gpu import EmulatedGpu, record_gpu_kernels
from vdla.driver.device import DeviceError

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
TINY = ["--image", "32", "--classes", "10", "--repeat", "1", "--warmup", "0", "--cpu-threads", "1"]


@pytest.fixture
def e2e_gpu(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("e2e_gpu", BENCH / "e2e_gpu.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "e2e_gpu", module)     # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class _NamedEmulatedGpu(EmulatedGpu):
    name = "emulated GPU (CPU)"



@pytest.fixture
def emulated(monkeypatch):
    """open_device for the benchmark: a GPU emulated with the kernels it compiles."""
    with record_gpu_kernels(monkeypatch) as kernels:
        yield lambda ordinal: _NamedEmulatedGpu(kernels)


def _json_line(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_json_line_on_an_emulated_gpu(e2e_gpu, emulated, monkeypatch, capsys):
    from vdla.compiler.topi.gpu import winograd
    monkeypatch.setattr(winograd, "WINOGRAD_FLOPS_PER_LAUNCH", 0.0)   # Winograd where it may run, at 32x32
    def ort_cpu(model, ordinal):     # a stand-in peer: the ratio keys get real numbers
        session = e2e_gpu.ort_session(model, 1)
        return lambda feeds: session.run(None, feeds)
    peers = (e2e_gpu.Peer("ort", "onnxruntime CPU (stand-in)", ort_cpu), e2e_gpu.PEERS[1])
    monkeypatch.setattr("torch_peer._import_torch", lambda device: (_ for _ in ()).throw(
        e2e_gpu.PeerUnavailable("PyTorch is not installed (test)")))
    code = e2e_gpu.main(TINY + ["--batches", "1,2", "--json"], open_device=emulated, peers=peers)
    out = _json_line(capsys)
    assert code == 0 and out["errors"] == []
    for model in ("resnet18", "mobilenetv2"):
        for case in (model, f"{model}_b2"):
            assert out[f"{case}_ratio_vs_ort"] > 0 and out[f"{case}_ms"] > 0 and out[f"{case}_ort_ms"] > 0
            assert out[f"{case}_ratio_vs_torch"] is None and out[f"{case}_torch_ms"] is None
            assert out[f"{case}_max_abs_err"] <= 1e-3 and out[f"{case}_gpu_steps"] > 0
            assert out[f"{case}_host_steps"] == 0
        winograd = out[f"{model}_b2_winograd_convs"]
        assert (winograd > 0) == (model == "resnet18")         # MobileNetV2's 3x3 convs are depthwise
        assert (out[f"{model}_b2_direct_ms"] is not None) == (model == "resnet18")
    assert out["resnet18_winograd_speedup"] > 0
    assert out["peer_missing"] == {"torch": "PyTorch is not installed (test)"}
    assert out["device"] == "emulated GPU (CPU)" and out["batches"] == [1, 2]


def test_the_real_peers_missing_here_leave_nulls_with_the_reason(e2e_gpu, emulated, capsys):
    import onnxruntime
    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("onnxruntime has its CUDA provider here")
    code = e2e_gpu.main(TINY + ["--batches", "1", "--models", "resnet18", "--json"],
                        open_device=emulated)
    out = _json_line(capsys)
    assert code == 0
    assert out["resnet18_ratio_vs_ort"] is None and out["resnet18_ms"] > 0
    assert "has no CUDAExecutionProvider" in out["peer_missing"]["ort"]


def test_a_wrong_answer_is_not_timed(e2e_gpu, emulated, monkeypatch, capsys):
    from vdla.driver import executor
    real_run = executor.Executor.run
    monkeypatch.setattr(executor.Executor, "run", lambda self, feeds, **kw: {
        k: v + 1.0 for k, v in real_run(self, feeds, **kw).items()})
    code = e2e_gpu.main(TINY + ["--batches", "1", "--models", "resnet18", "--json"],
                        open_device=emulated, peers=())
    out = _json_line(capsys)
    assert code == 1 and out["resnet18_ms"] is None
    assert out["errors"][0].startswith("resnet18: vdla's output differs from onnxruntime CPU's by 1 (allowed")


def test_without_a_gpu_it_says_why_and_exits_2(e2e_gpu, capsys):
    def no_gpu(ordinal):
        raise DeviceError("no CUDA device: CUDA_ERROR_NO_DEVICE (test)")
    assert e2e_gpu.main(["--json"], open_device=no_gpu) == 2
    assert capsys.readouterr().err.strip() == "e2e_gpu: no CUDA device: CUDA_ERROR_NO_DEVICE (test)"


def test_arguments(e2e_gpu, capsys):
    args = e2e_gpu.parse_args(["--batches", "1,16"])
    assert args.batches == [1, 16] and args.models == ["resnet18", "mobilenetv2"] and args.image == 224
    for bad in (["--batches", "1,x"], ["--models", "vgg16"], ["--batches", "0"]):
        with pytest.raises(SystemExit):
            e2e_gpu.parse_args(bad)
    assert e2e_gpu.case_name("resnet18", 1) == "resnet18" and e2e_gpu.case_name("resnet18", 16) == "resnet18_b16"


def test_the_torch_peer_matches_onnxruntime_on_the_cpu(e2e_gpu):
    pytest.importorskip("torch")
    builders = e2e_gpu.model_builders()
    for build in (builders.resnet18, builders.mobilenetv2):
        model = build(batch=2, image=32, classes=10)
        x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
        got = e2e_gpu.TorchEager(model, "cpu")({"input": x})[0]
        want = e2e_gpu.ort_session(model, 1).run(None, {"input": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
