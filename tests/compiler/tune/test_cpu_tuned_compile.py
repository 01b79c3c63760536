"""vdla compile with CPU records: a model compiled with any knob settings the search may pick
computes what onnxruntime does, records of another CPU are not applied (and counted), a record
whose knobs do not fit fails the compile, and a vdla-target compile applies CPU records to its
CPU fallback kernels."""
import numpy as np
import onnxruntime as ort
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.target import Target
from vdla.compiler.topi.cpu_knobs import DirectConvKnobs, RegisterFile, default_knobs
from vdla.compiler.tune import TuningFileError
from vdla.compiler.tune.cpu_records import CpuTuningRecord
from vdla.compiler.tune.cpu_signature import host_hash, host_name
from vdla.compiler.tune.cpu_space import CpuKnobSpace
from vdla.compiler.tune.cpu_tune_model import cpu_model_kernels, vdla_fallback_kernels
from vdla.compiler.tune.records import TuningLog
from vdla.driver.executor import Executor

from cpu_models import IMAGE, cpu_knob_model


def _log(kernels, target, pick) -> TuningLog:
    """A record per kernel with knobs `pick(space points)` (its timings made up: never worse)."""
    records = []
    for k in kernels:
        default = default_knobs(k.kind, k.dims, RegisterFile.of(target))
        knobs = pick(CpuKnobSpace(k.kind, k.dims, default).points)
        records.append(CpuTuningRecord(k.kind, k.signature, host_hash(target), host_name(target), target.threads,
                                       knobs, 1.0, default, 1.0, 1))
    return TuningLog(records)


@pytest.fixture(scope="module")
def model():
    return cpu_knob_model()


@pytest.fixture(scope="module")
def kernels(model):
    return cpu_model_kernels(model)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(5).standard_normal((1, 32, IMAGE, IMAGE)).astype(np.float32)


@pytest.fixture(scope="module")
def want(model, x):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("pick", [lambda p: p[1 % len(p)], lambda p: p[len(p) // 2], lambda p: p[-1]],
                         ids=["second", "middle", "last"])
def test_a_model_compiled_with_cpu_records_computes_what_onnxruntime_does(model, kernels, x, want, pick):
    artifact = compile_model(model, "cpu", tuning=_log(kernels, Target.host(), pick))
    assert artifact.header["compile"]["cpu_tuning"] == {"tuned": 6, "tunable": 6, "default": 0, "other_hosts": {}}
    assert not artifact.header["compile"]["host_reasons"]
    got = Executor(artifact).run({"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_records_of_another_cpu_are_not_applied(model, kernels):
    other = Target(Target.host().triple, "skylake-avx512", "+avx2,+avx512f,+fma")
    artifact = compile_model(model, "cpu", tuning=_log(kernels, other, lambda p: p[-1]))
    assert artifact.header["compile"]["cpu_tuning"] == {
        "tuned": 0, "tunable": 6, "default": 6, "other_hosts": {host_name(other): 6}}


def test_a_record_whose_knobs_do_not_fit_fails_the_compile(model, kernels):
    strided = [k for k in kernels if k.nodes == ["strided"]]
    log = _log(strided, Target.host(), lambda p: DirectConvKnobs(5, 4))    # 4 blocks of 2: does not fit
    with pytest.raises(TuningFileError, match=r"tuning record of conv2d_nchwc .*oc_blocks 4 does not divide"):
        compile_model(model, "cpu", tuning=log)


def test_a_vdla_compile_applies_cpu_records_to_its_fallback_kernels(x):
    model = cpu_knob_model(dilated_grouped=True)
    calib = {"x": np.random.default_rng(1).standard_normal((4, 1, 32, IMAGE, IMAGE)).astype(np.float32)}
    fallback = vdla_fallback_kernels(model, "pynq", calib)
    assert sorted(k.kind for k in fallback) == ["conv2d_nchw", "dense"]
    plain = compile_model(model, "vdla", "pynq", calibration=calib)
    tuned = compile_model(model, "vdla", "pynq", calibration=calib,
                          tuning=_log(fallback, Target.host(), lambda p: p[-1]))
    info = tuned.header["compile"]
    assert info["cpu_tuning"]["tuned"] == 2 and info["cpu_tuning"]["default"] == 0
    assert info["tuning"]["tuned"] == 0         # no accelerator records in the log
    np.testing.assert_array_equal(Executor(tuned).run({"x": x})["y"], Executor(plain).run({"x": x})["y"])
