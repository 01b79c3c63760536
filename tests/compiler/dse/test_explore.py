"""The DSE end to end on a small model and a few configs, with a stand-in synthesizer (the
table, the Pareto front, the cache and the failure paths are what is tested here; real Yosys
runs in test_dse_yosys.py): every point compiled and simulated for real, its cycles equal
to a direct compile-and-run of the same config."""
import csv
import json

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.dse import LocalPool, explore, pareto_front
from vdla.compiler.dse.point import sample_inputs
from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.driver.devices import SimulatorDevice
from vdla.driver.executor import Executor

from dse_stubs import calls, failing_synthesize, fake_synthesize

SWEEP = {"base": "pynq", "grid": {"LOG_BLOCK": [3, 4], "clock_mhz": [100, 200]},
         "points": [{"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 16},
                    {"LOG_WGT_BUFF_SIZE": 9}]}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def model():
    return small_residual_cnn()


@pytest.fixture
def synth_log(tmp_path, monkeypatch):
    folder = tmp_path / "synth_calls"
    folder.mkdir()
    monkeypatch.setenv("VDLA_TEST_SYNTH_LOG", str(folder))
    return folder


@pytest.fixture(scope="module")
def first_run(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("dse")
    folder = out / "synth_calls"
    folder.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VDLA_TEST_SYNTH_LOG", str(folder))
        result = explore(model, SWEEP, out / "run", synthesizer=fake_synthesize, log=None)
    return out, result, calls(folder)


def test_every_point_has_a_status_and_the_invalid_say_why(first_run):
    _, result, _ = first_run
    status = {r["id"]: r["status"] for r in result.rows}
    assert status == {"p00": "invalid", "p01": "invalid", "p02": "ok", "p03": "ok", "p04": "ok", "p05": "ok"}
    assert "GEMM fields need 136 bits" in result.row("p00")["error"]
    assert result.row("p00")["synth_status"] == "skipped"


def test_a_config_too_small_for_some_layers_runs_them_on_the_cpu(first_run):
    """A 512-byte weight SRAM holds two 16x16 blocks, too few for any tile of the 3x3 convs:
    the point used to fail to compile; now those layers run on the CPU, each with its reason."""
    _, result, _ = first_run
    small, pynq = result.row("p05"), result.row("p02")
    assert small["macs"] == pynq["macs"] and small["macs_on_cpu"] > pynq["macs_on_cpu"]
    assert small["macs_offloaded"] + small["macs_on_cpu"] == small["macs"]
    assert small["macs_on_cpu"] - pynq["macs_on_cpu"] == small["macs_untiled"] > 0 == pynq["macs_untiled"]
    moved = set(small["cpu_reasons"]) - set(pynq["cpu_reasons"])
    assert moved and all("no VDLA tiling fits" in small["cpu_reasons"][n] and "weight SRAM" in small["cpu_reasons"][n]
                         for n in moved)
    doc = json.loads(open(result.files["json"]).read())
    assert set(small["untiled"]) == moved and pynq["untiled"] == []
    assert [note.split(":")[0] for note in doc["notes"] if "untiled" in note] == ["p05"]


def test_a_compile_failure_is_a_row_with_the_compilers_reason(model, tmp_path, monkeypatch):
    import vdla.compiler.compile_model as compile_module

    def refuse(*args, **kwargs):
        raise ValueError("the stand-in compiler refuses")
    monkeypatch.setattr(compile_module, "compile_model", refuse)
    result = explore(model, {"points": [{}]}, tmp_path, synthesizer=fake_synthesize, log=None)
    row = result.rows[0]
    assert row["status"] == "compile_failed" and row["error"] == "ValueError: the stand-in compiler refuses"
    assert row["synth_status"] == "skipped" and result.pareto == []


def test_cycles_equal_a_direct_compile_and_run_and_ms_follow_the_clock(first_run, model):
    _, result, _ = first_run
    calib, inputs = sample_inputs(model, None)
    for point_id in ("p02", "p04"):
        row = result.row(point_id)
        artifact = compile_model(model, target="vdla", hw_config=row["config"], calibration=calib)
        ex = Executor(artifact, device=SimulatorDevice(row["config"], dram_bytes=1 << 26))
        ex.run(inputs)
        assert row["cycles"] == sum(launch.cycles for launch in ex.last_launches.values())
    p02, p03 = result.row("p02"), result.row("p03")
    assert p02["cycles"] == p03["cycles"] and p03["ms"] == pytest.approx(p02["ms"] / 2)
    assert p02["ms"] == pytest.approx(p02["cycles"] / 100e3)


def test_points_sharing_an_rtl_share_one_synthesis(first_run):
    _, result, synth_calls = first_run
    # p02 and p03 differ in the clock only (one RTL); p04 and p05 are their own; the invalid do not synthesize
    assert sorted((c["LOG_BLOCK"], c["LOG_WGT_BUFF_SIZE"]) for c in synth_calls) == [(3, 16), (4, 9), (4, 18)]
    for key in ("lut", "ff", "dsp", "bram36", "fits"):
        assert result.row("p02")[key] == result.row("p03")[key] is not None
    assert result.row("p04")["fits"][0] == result.row("p04")["smallest_part"]


def test_pareto_front_is_the_front_of_the_ok_rows(first_run):
    _, result, _ = first_run
    ok = [r if r["status"] == "ok" else {} for r in result.rows]
    expected = [result.rows[k]["id"] for k in pareto_front(ok, ("ms", "macs_on_cpu", "lut", "ff", "dsp", "bram36"))]
    assert result.pareto == expected == [r["id"] for r in result.rows if r["pareto"]]
    assert "p02" not in result.pareto      # p03 is the same hardware at twice the clock


def test_table_files_csv_json_png(first_run):
    _, result, _ = first_run
    with open(result.files["csv"]) as f:
        table = list(csv.DictReader(f))
    assert [r["id"] for r in table] == [r["id"] for r in result.rows]
    by_id = {r["id"]: r for r in table}
    assert int(by_id["p04"]["cycles"]) == result.row("p04")["cycles"]
    assert by_id["p04"]["fits_xc7z020"] in ("True", "False") and by_id["p00"]["fits_xc7z020"] == ""
    assert "GEMM fields" in by_id["p00"]["error"]
    doc = json.loads(open(result.files["json"]).read())
    assert doc["pareto"] == result.pareto and len(doc["points"]) == 6
    assert doc["parts"]["xc7z020"]["lut"] == 53200
    assert open(result.files["png"], "rb").read(8) == PNG


def test_second_run_does_no_work_and_gives_the_same_table(first_run, model, synth_log):
    out, result, _ = first_run

    class NoPool:
        where = "nowhere"

        def map(self, fn, items, common=None):
            items = list(items)
            assert not items, f"the cached run evaluated {len(items)} point(s)"
            return iter(())
    again = explore(model, SWEEP, out / "run", pool=NoPool(), synthesizer=fake_synthesize, log=None)
    assert again.evaluated == 0 and again.synthesized == 0 and calls(synth_log) == []
    strip = ("cached",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in again.rows] == \
        [{k: v for k, v in r.items() if k not in strip} for r in result.rows]
    assert all(r["cached"] for r in again.rows if r["status"] in ("ok", "compile_failed"))


def test_synthesis_results_are_reused_for_a_new_point_with_a_known_rtl(first_run, model, synth_log):
    out, _, _ = first_run
    # 300 MHz is a new point, but its RTL is p02's: compiled and simulated, not synthesized again
    again = explore(model, {"grid": {"clock_mhz": [300]}}, out / "run", synthesizer=fake_synthesize, log=None)
    assert again.evaluated == 1 and again.synthesized == 0 and calls(synth_log) == []
    assert again.rows[0]["lut"] is not None


def test_a_damaged_cache_file_is_recomputed(model, tmp_path, synth_log):
    sweep = {"points": [{}]}
    first = explore(model, sweep, tmp_path, synthesizer=fake_synthesize, log=None)
    (tmp_path / "cache" / f"{first.rows[0]['key']}.json").write_text("{not json")
    again = explore(model, sweep, tmp_path, synthesizer=fake_synthesize, log=None)
    assert again.evaluated == 1 and again.rows[0]["cycles"] == first.rows[0]["cycles"]
    assert len(calls(synth_log)) == 1    # the synthesis cache was intact


def test_a_failing_synthesis_keeps_the_cycles_and_is_not_cached(model, tmp_path):
    result = explore(model, {"points": [{}]}, tmp_path, synthesizer=failing_synthesize, log=None)
    row = result.rows[0]
    assert row["status"] == "ok" and row["cycles"] > 0
    assert row["synth_status"] == "failed" and "RuntimeError: the stub refuses" in row["synth_error"]
    assert row["lut"] is None and not row["pareto"]
    again = explore(model, {"points": [{}]}, tmp_path, synthesizer=failing_synthesize, log=None)
    assert again.evaluated == 1


def test_without_synthesis_the_front_is_the_fastest(model, tmp_path):
    result = explore(model, {"grid": {"clock_mhz": [100, 200]}}, tmp_path, synthesizer=None, log=None)
    assert [r["synth_status"] for r in result.rows] == ["skipped", "skipped"]
    assert result.pareto == ["p01"]


def test_local_process_pool_gives_the_same_table(first_run, model, tmp_path, synth_log):
    _, result, _ = first_run
    sweep = {"points": [{}, {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16,
                             "LOG_ACC_BUFF_SIZE": 16}]}
    pooled = explore(model, sweep, tmp_path, pool=LocalPool(2), synthesizer=fake_synthesize, log=None)
    assert len(calls(synth_log)) == 2          # the workers ran the stub: the environment reached them
    for row, ref in zip(pooled.rows, (result.row("p02"), result.row("p04"))):
        for key in ("cycles", "ms", "gemm_utilization", "lut", "ff", "dsp", "bram36", "fits"):
            assert row[key] == ref[key], key


def test_sample_inputs_take_calibration_shaped_as_vdla_compile_takes_it(model):
    """[samples, 1, 3, 32, 32] (whole inputs) and [samples, 3, 32, 32] (batch rows) alike, as
    `vdla compile --calibrate` does; anything else is refused with both shapes named."""
    rows = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    calib, inputs = sample_inputs(model, {"input": rows})
    whole, _ = sample_inputs(model, {"input": rows[:, None]})
    np.testing.assert_array_equal(calib["input"], whole["input"])
    assert calib["input"].shape == (2, 1, 3, 32, 32) and inputs["input"].shape == (1, 3, 32, 32)
    bad = {"input": np.zeros((2, 4, 32, 32), np.float32)}
    with pytest.raises(ValueError, match=r"calibration input 'input' has shape \[2, 4, 32, 32\]; expected "
                                         r"\[samples, 1, 3, 32, 32\] or \[samples, 3, 32, 32\]"):
        sample_inputs(model, bad)


def test_a_point_that_leaves_layers_to_the_cpu_does_not_win_by_it(model, tmp_path):
    """The cycles count the accelerator only: the small weight SRAM's point has fewer of them
    because its convs run on the CPU, which must not push the whole-model point off the front."""
    result = explore(model, {"points": [{}, {"LOG_WGT_BUFF_SIZE": 9}]}, tmp_path, synthesizer=None, log=None)
    whole, partial = result.rows
    assert partial["ms"] < whole["ms"] and partial["macs_on_cpu"] > whole["macs_on_cpu"]
    assert result.pareto == ["p00", "p01"]


def test_the_summary_names_the_notes_counts_front_and_files():
    from vdla.compiler.dse.explore import DseResult
    result = DseResult([{"id": "p00"}, {"id": "p01"}], ["p01"], {"csv": "o/dse.csv", "json": "o/dse.json",
                                                                  "png": "o/pareto.png"},
                       evaluated=1, synthesized=0, seconds=2.5, notes=["1 duplicate point(s) of the sweep dropped"])
    assert result.summary_lines() == ["note: 1 duplicate point(s) of the sweep dropped",
                                      "2 point(s), 1 evaluated now, 0 synthesized, 2.5 s; Pareto front: p01",
                                      "wrote o/dse.csv, o/dse.json, o/pareto.png"]
    assert "Pareto front: none" in DseResult([], [], result.files).summary_lines()[0]


def test_an_interrupted_run_keeps_its_finished_points_and_a_rerun_evaluates_the_rest(model, tmp_path, monkeypatch):
    """Ctrl-C while the second point runs: the first is cached already, and a rerun evaluates
    the second only, giving the table of an uninterrupted run."""
    import importlib
    explore_mod = importlib.import_module("vdla.compiler.dse.explore")   # the package's `explore` is the function
    evaluate, calls = explore_mod.evaluate_point, []

    def interrupted(item, common):
        calls.append(item["id"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return evaluate(item, common)
    monkeypatch.setattr(explore_mod, "evaluate_point", interrupted)
    sweep = {"grid": {"clock_mhz": [100, 200]}}
    with pytest.raises(KeyboardInterrupt):
        explore(model, sweep, tmp_path, synthesizer=None, log=None)
    calls.clear()
    again = explore(model, sweep, tmp_path, synthesizer=None, log=None)
    assert again.evaluated == 1 and len(calls) == 1
    assert [r["cached"] for r in again.rows].count(True) == 1
    assert again.row("p01")["cycles"] == again.row("p00")["cycles"] > 0      # the clock changes ms only


def test_a_second_run_on_the_folder_is_refused_naming_the_lock_and_its_pid(model, tmp_path):
    import os

    from vdla.compiler.file_lock import LockedError, exclusive
    pytest.importorskip("fcntl")
    with exclusive(tmp_path / "dse.lock"):      # as a run in another process would hold it
        with pytest.raises(LockedError, match=f"DSE folder {tmp_path} is in use by another run: "
                                              f"{tmp_path / 'dse.lock'} is locked by pid {os.getpid()}"):
            explore(model, {"points": [{}]}, tmp_path, synthesizer=None, log=None)
    assert not (tmp_path / "dse.csv").exists()


def test_a_point_done_before_the_point_synthesizing_its_rtl_is_cached_with_that_synthesis(model, tmp_path,
                                                                                          synth_log):
    class ReversedPool:         # results arrive in the reverse order: the RTL's owner last
        where = "reversed"

        def map(self, fn, items, common=None):
            yield from reversed([(k, fn(item, common)) for k, item in enumerate(items)])
    sweep = {"grid": {"clock_mhz": [100, 200]}}
    first = explore(model, sweep, tmp_path, pool=ReversedPool(), synthesizer=fake_synthesize, log=None)
    assert len(calls(synth_log)) == 1 and first.row("p01")["lut"] == first.row("p00")["lut"] is not None
    again = explore(model, sweep, tmp_path, pool=ReversedPool(), synthesizer=fake_synthesize, log=None)
    assert again.evaluated == 0 and again.row("p01")["lut"] == first.row("p00")["lut"]


SMALL_8 = {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 16}


def uram_for_block_16(config, timeout=None):
    """The stub's figures, and one URAM288 for the BLOCK 16 RTL: it cannot fit a part without UltraRAM."""
    return {**fake_synthesize(config, timeout), "uram": int(config.block == 16)}


@pytest.mark.parametrize("part, fastest", [("xck26", "p01"), ("xczu3eg", "p00")])
def test_a_board_sweep_answers_with_its_fastest_point_that_fits_its_part(model, tmp_path, part, fastest):
    """1x8 (p00) is slower than 1x16 (p01); the 1x16 RTL takes one URAM288, which the xck26 has and
    the xczu3eg has not, so each part gets its own answer."""
    sweep = {"base": "pynq", "part": part, "points": [SMALL_8, {}]}
    result = explore(model, sweep, tmp_path, synthesizer=uram_for_block_16, log=None)
    assert result.row("p01")["ms"] < result.row("p00")["ms"]
    assert [r["fits_part"] for r in result.rows] == [True, part == "xck26"]
    assert result.part == part and result.fastest == fastest
    assert result.fastest_line().startswith(f"fastest fitting the {part} (")
    assert result.fastest_line() in result.summary_lines()
    doc = json.loads(open(result.files["json"]).read())
    assert (doc["part"], doc["fastest_fitting"]) == (part, fastest)
    assert [p["uram"] for p in doc["points"]] == [0, 1]
    assert open(result.files["png"], "rb").read(8) == PNG


def test_a_board_sweep_is_synthesized_with_its_parts_flow():
    from functools import partial

    from vdla.compiler.dse.cache import synthesizer_name
    from vdla.compiler.dse.explore import part_synthesizer
    from vdla.hw.synth import synthesize
    assert part_synthesizer("xc7z020") is synthesize          # the 7-series flow: the same cache keys as before
    bound = part_synthesizer("xck26")
    assert isinstance(bound, partial) and bound.func is synthesize and bound.keywords == {"part": "xck26"}
    assert synthesizer_name(bound) == "vdla.hw.synth.synthesize(part='xck26')"
    assert synthesizer_name(part_synthesizer("xczu3eg")) != synthesizer_name(bound) != synthesizer_name(synthesize)


def block_ram_150(config, timeout=None):
    """The stub's figures with 150 RAMB36 and no URAM288: over the xck26's 144 as Yosys mapped it."""
    return {**fake_synthesize(config, timeout), "bram36": 150.0, "uram": 0}


def test_a_point_fits_its_board_with_srams_moved_to_ultraram(model, tmp_path):
    """pynq's micro-op SRAM is two 4096 x 32 banks behind its 64-bit bus: 4 RAMB36 or 1 URAM288
    each, the most block RAM freed per URAM288 of its SRAMs; moving both leaves 150 - 8 = 142
    RAMB36 <= 144 (vdla.hw.uram_split)."""
    result = explore(model, {"base": "pynq", "part": "xck26"}, tmp_path, synthesizer=block_ram_150, log=None)
    [row] = result.rows
    assert row["fits_part"] is True and "xck26" in row["fits"] and row["bram36"] == 150
    assert row["part_memory"] == {"bram36": 142.0, "uram": 2, "moved": ["uop0", "uop1"]}
    assert result.fastest == "p00" and result.fastest_line().endswith("142 BRAM36 2 URAM with uop0, uop1 moved to "
                                                                      "UltraRAM")
