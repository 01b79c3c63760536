"""benchmarks/gpu_constants.py without a GPU: every case compiles both variants it compares (Winograd
and direct; cross-thread and per-thread), and the timing runs them on a device whose launches are
the kernels' CPU emulation, with a row per case in the JSON's form. On a GPU machine
benchmarks/gpu_device_check.sh runs the real thing."""
import importlib.util
import json
import pathlib
import sys

import pytest

from emulated_gpu import EmulatedGpu, record_gpu_kernels

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def gpu_constants(monkeypatch):
    spec = importlib.util.spec_from_file_location("gpu_constants", BENCH / "gpu_constants.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_constants", module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "CONVS", [(1, 8, 8)])
    monkeypatch.setattr(module, "REDUCTIONS", [("Softmax", (2, 40)), ("Gemm", (1, 64, 10))])
    return module


class _NamedEmulatedGpu(EmulatedGpu):
    name, arch = "emulated GPU (CPU)", "sm_80"


def test_both_variants_compile_and_time(gpu_constants, monkeypatch, tmp_path, capsys):
    with record_gpu_kernels(monkeypatch) as kernels:
        assert gpu_constants.main(["--prepare", str(tmp_path), "--arch", "sm_80"]) == 0
    prepared = json.loads((tmp_path / "programs.json").read_text())
    (conv,) = prepared["winograd"]
    assert conv["chosen_now"] == "direct"           # 8 channels: far below the break-even
    assert [sum(len(p["kernels"]) for p in conv["variants"][k]) for k in ("direct", "winograd")] == [1, 3]
    for row in prepared["cross_thread"]:
        launches = {k: [tuple(x["block"]) for p in v for x in p["kernels"]] for k, v in row["variants"].items()}
        assert launches["per_thread"] != launches["cross_thread"], row["case"]
    result = gpu_constants.measure(_NamedEmulatedGpu(kernels), prepared, repeat=1, batch=1)
    assert result["device"] == "emulated GPU (CPU)" and len(result["cross_thread"]) == 2
    assert result["winograd"][0]["direct_us"] > 0 and result["winograd"][0]["faster"] in ("direct", "winograd")
    assert {r["faster"] for r in result["cross_thread"]} <= {"per_thread", "cross_thread"}
    assert "variants" not in result["winograd"][0]
