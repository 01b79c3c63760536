"""vdla tune on whole models: records keyed by layer signature and hardware are reused
across two models that share a layer, applied by compile (bit-identical outputs to the
default build, the recorded cycles on the simulator), and ignored for other hardware."""
import json
from dataclasses import replace

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.tune import TuningLog, load_tuning, tune_model
from vdla.driver.executor import Executor
from vdla.driver.runtime import KernelProgram
from vdla.hw import load_config

from tune_models import IMAGE

CFG = load_config("pynq")
TRIALS = 10


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, model_a, model_b, calibration):
    """Model A tuned into a fresh log, then model B tuned into the same log."""
    path = tmp_path_factory.mktemp("tune") / "tuning.json"
    first = tune_model(model_a, CFG, trials=TRIALS, jobs=1, output=path, calibration=calibration, progress=False)
    second = tune_model(model_b, CFG, trials=TRIALS, jobs=1, output=path, calibration=calibration, progress=False)
    return path, first, second


def test_a_layer_shared_by_two_models_is_tuned_once_and_reused(tuned):
    path, first, second = tuned
    assert [r.reused for r in first.results] == [False, False]
    assert [r.reused for r in second.results] == [True, False]    # conv1 came from model A's records
    shared = second.results[0]
    assert shared.kernel.nodes == ["conv1"] and shared.record == first.results[0].record
    # only model B's own conv was searched (its budget, and the fastest's one-thread twin if unmeasured)
    assert second.trials == second.results[1].record.trials in (TRIALS, TRIALS + 1)
    log = load_tuning(path)
    assert len(log) == 3 and json.loads(path.read_text())["format"] == "vdla-tuning-log"


def test_tuned_is_never_worse_than_the_default(tuned):
    _, first, second = tuned
    for r in first.results + second.results:
        assert r.record.cycles <= r.record.default_cycles
        assert r.failed == 0 and r.mismatched == []


def _launch_cycles(art, x):
    ex = Executor(art)
    y = ex.run({"x": x}, profile=True)["y"]
    return y, {name: r.cycles for name, r in ex.last_launches.items()}


def test_compile_with_the_log_gives_the_default_outputs_and_the_recorded_cycles(tuned, model_b, calibration):
    path, _, second = tuned
    log = load_tuning(path)
    default = compile_model(model_b, target="vdla", hw_config=CFG, calibration=calibration)
    tuned_art = compile_model(model_b, target="vdla", hw_config=CFG, calibration=calibration, tuning=log)
    assert tuned_art.header["compile"]["tuning"] == {"tuned": 2, "default": 0, "tunable": 2}
    x = np.random.default_rng(3).standard_normal((1, 3, IMAGE, IMAGE)).astype(np.float32)
    y0, cycles0 = _launch_cycles(default, x)
    y1, cycles1 = _launch_cycles(tuned_art, x)
    np.testing.assert_array_equal(y0, y1)
    recorded = {r.kernel.nodes[0]: r.record for r in second.results}
    assert any(r.knobs != r.default_knobs for r in recorded.values())     # the test compares two schedules
    for node, rec in recorded.items():
        assert cycles1[node] == rec.cycles, node
        assert cycles0[node] == rec.default_cycles, node
    programs = [KernelProgram.from_dict(d) for d in tuned_art.header["vdla_programs"]]
    assert {json.dumps(p.meta["knobs"], sort_keys=True) for p in programs} == \
        {json.dumps(r.to_dict()["knobs"], sort_keys=True) for r in recorded.values()}


def test_records_of_another_hardware_config_are_not_applied(tuned, model_b, calibration):
    path, _, _ = tuned
    log = load_tuning(path)
    # the same ISA with a slower DRAM: other cycle counts, so other best schedules
    slower = load_config(dict(CFG.to_dict(), timing=dict(CFG.timing.to_dict(), dram_read_latency=64)))
    assert slower.hash == CFG.hash
    art = compile_model(model_b, target="vdla", hw_config=slower, calibration=calibration, tuning=log)
    assert art.header["compile"]["tuning"] == {"tuned": 0, "default": 2, "tunable": 2}
    assert log.other_hardware(slower) == 3 and log.other_hardware(CFG) == 0
    # the clock does not change cycle counts: the records apply
    faster_clock = load_config(dict(CFG.to_dict(), clock_mhz=200))
    art = compile_model(model_b, target="vdla", hw_config=faster_clock, calibration=calibration, tuning=log)
    assert art.header["compile"]["tuning"]["tuned"] == 2


def test_a_record_whose_schedule_does_not_fit_the_layer_names_the_node(tuned, model_b, calibration):
    path, _, second = tuned
    rec = second.results[1].record
    bad = replace(rec, knobs=replace(rec.knobs, tile_oc=3))     # 3 does not divide 1 channel block
    with pytest.raises(ValueError, match=r"conv2_pointwise: the tuning record's schedule .* does not compile"):
        compile_model(model_b, target="vdla", hw_config=CFG, calibration=calibration, tuning=TuningLog([bad]))


def test_accelerator_records_schedule_no_cpu_kernel(tuned, model_b):
    """A CPU compile takes a log's CPU records only (test_cpu_tuned_compile.py); its accelerator
    records are for target vdla. A compile without kernels has no schedule to take."""
    path, _, _ = tuned
    artifact = compile_model(model_b, target="cpu", tuning=load_tuning(path))
    assert artifact.header["compile"]["cpu_tuning"] == {"tuned": 0, "tunable": 2, "default": 2, "other_hosts": {}}
    with pytest.raises(ValueError, match="a compile without kernels has none to choose"):
        compile_model(model_b, target="cpu", kernels=False, tuning=TuningLog())


def test_vta_mode_kernels_have_their_own_records(tuned, model_a, calibration):
    """Records carry the mode: the default mode's do not schedule VTA-mode kernels; VTA-mode
    records compile to streams that still pass the VTA check and compute the same outputs."""
    from vdla.driver.runtime.vta_check import check_program_vta
    path, _, _ = tuned
    default_mode_log = load_tuning(path)
    art = compile_model(model_a, target="vdla", hw_config=CFG, calibration=calibration, vta_compat=True,
                        tuning=default_mode_log)
    assert art.header["compile"]["tuning"]["tuned"] == 0
    vta = tune_model(model_a, CFG, trials=TRIALS, jobs=1, calibration=calibration, vta_compat=True, progress=False)
    tuned_art = compile_model(model_a, target="vdla", hw_config=CFG, calibration=calibration, vta_compat=True,
                              tuning=vta.log)
    assert tuned_art.header["compile"]["tuning"] == {"tuned": 2, "default": 0, "tunable": 2}
    for doc in tuned_art.header["vdla_programs"]:
        assert check_program_vta(KernelProgram.from_dict(doc), CFG) == []
    x = np.random.default_rng(4).standard_normal((1, 3, IMAGE, IMAGE)).astype(np.float32)
    np.testing.assert_array_equal(_launch_cycles(art, x)[0], _launch_cycles(tuned_art, x)[0])


def test_an_interrupted_tune_keeps_the_finished_kernels_and_a_rerun_tunes_only_the_rest(
        tmp_path, model_a, calibration, monkeypatch):
    """Ctrl-C during the second kernel's search: the first kernel's record is in the log, and a
    rerun searches the second kernel only."""
    import vdla.compiler.tune.search as search_mod
    measure, calls = search_mod.measure, []

    def interrupted(trial):
        calls.append(trial.search)
        if calls[-1] != calls[0] and calls.count(calls[-1]) == 2:    # two trials into the second kernel
            raise KeyboardInterrupt
        return measure(trial)
    monkeypatch.setattr(search_mod, "measure", interrupted)
    path = tmp_path / "tuning.json"
    with pytest.raises(KeyboardInterrupt):
        tune_model(model_a, CFG, trials=TRIALS, jobs=1, output=path, calibration=calibration, progress=False)
    saved = load_tuning(path)
    # (a kernel's trials: its budget, and its fastest schedule's one-thread twin if unmeasured)
    assert len(saved) == 1 and list(saved.records.values())[0].trials in (TRIALS, TRIALS + 1)
    monkeypatch.setattr(search_mod, "measure", measure)
    rerun = tune_model(model_a, CFG, trials=TRIALS, jobs=1, output=path, calibration=calibration, progress=False)
    assert [r.reused for r in rerun.results] == [True, False] and rerun.trials in (TRIALS, TRIALS + 1)
    assert len(load_tuning(path)) == 2
