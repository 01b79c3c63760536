"""Sweep files (vdla.compiler.dse.sweep): grid order, listed points, duplicates, per-point
validation by vdla.hw, and errors that name the key; the ResNet-18 sweep of benchmarks/dse.py."""
import json
from pathlib import Path

import pytest

from vdla.compiler.dse import SweepError, load_sweep
from vdla.compiler.dse.sweep import parse_sweep
from vdla.hw import load_config

BENCH_SWEEP = Path(__file__).resolve().parents[3] / "benchmarks" / "dse_resnet18.json"


def test_grid_then_points_last_key_fastest_duplicates_dropped():
    sweep = load_sweep({"base": "pynq", "grid": {"LOG_BLOCK": [4, 5], "clock_mhz": [100, 200]},
                        "points": [{"LOG_BLOCK": 5, "clock_mhz": 100}, {"bus_width_bits": 128}]})
    got = [(p.doc["LOG_BLOCK"], p.doc["clock_mhz"], p.doc["bus_width_bits"]) for p in sweep.points]
    assert got == [(4, 100, 64), (4, 200, 64), (5, 100, 64), (5, 200, 64), (4, 100, 128)]
    assert sweep.dropped_duplicates == 1
    assert [p.id for p in sweep.points] == ["p00", "p01", "p02", "p03", "p04"]
    assert sweep.points[4].config == load_config("ultra96").__class__.from_dict(
        {**load_config("pynq").to_dict(), "bus_width_bits": 128})


def test_no_grid_no_points_is_the_base_and_timing_merges():
    assert [p.doc for p in load_sweep({"base": "zcu104"}).points] == [load_config("zcu104").to_dict()]
    [point] = load_sweep({"points": [{"timing": {"dram_read_latency": 64}}]}).points
    assert point.config.timing.dram_read_latency == 64
    assert point.config.timing.dram_write_latency == load_config("pynq").timing.dram_write_latency


def test_an_impossible_combination_is_an_invalid_point_with_vdla_hw_reason():
    sweep = load_sweep({"grid": {"LOG_BLOCK": [3, 4, 7]}})
    block8, block16, block128 = sweep.points
    assert block16.invalid is None and block16.config.block == 16
    assert "GEMM fields need 136 bits" in block8.invalid and block8.config is None
    assert "'LOG_BLOCK'" in block128.invalid and "out of range 2..6" in block128.invalid


@pytest.mark.parametrize("doc, message", [
    ([1, 2], "must be a JSON object"),
    ({"grids": {}}, "unknown key 'grids'; a sweep has base, grid, points, name"),
    ({"grid": {"BLOCK": [16]}}, "unknown config key 'BLOCK'; a sweep may set LOG_INP_WIDTH"),
    ({"grid": {"LOG_BLOCK": []}}, "'LOG_BLOCK': expected a non-empty list"),
    ({"grid": {"LOG_BLOCK": 4}}, "'LOG_BLOCK': expected a non-empty list"),
    ({"points": {"LOG_BLOCK": 4}}, "'points' must be a list"),
    ({"points": [{"timing": 3}]}, "'timing' must be an object"),
    ({"points": [{"TARGET": "x"}]}, "unknown config key 'TARGET'"),
    ({"base": "pynq2"}, "'base': unknown hardware config 'pynq2'"),
    ({"part": "xczu5ev"}, "'part': unknown FPGA part 'xczu5ev'; known parts: xc7z010"),
    ({"part": 7}, "'part': unknown FPGA part 7"),
])
def test_malformed_sweeps_name_the_key(doc, message):
    with pytest.raises(SweepError, match=message.replace("(", r"\(")):
        load_sweep(doc)


def test_sweep_files_unreadable_or_not_json(tmp_path):
    with pytest.raises(SweepError, match="cannot read the sweep file"):
        load_sweep(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SweepError, match="is not valid JSON"):
        load_sweep(tmp_path / "bad.json")
    (tmp_path / "nested.json").write_text("[" * 100_000)     # past the JSON reader's recursion
    with pytest.raises(SweepError, match="nested.json' is not valid JSON: maximum recursion depth"):
        load_sweep(tmp_path / "nested.json")
    (tmp_path / "ok.json").write_text(json.dumps({"grid": {"clock_mhz": [100, 250]}}))
    assert [p.config.clock_mhz for p in load_sweep(tmp_path / "ok.json").points] == [100, 250]


@pytest.mark.parametrize("board, part", [("kv260", "xck26"), ("aup_zu3", "xczu3eg")])
def test_board_sweeps_vary_their_board_preset_at_the_reference_clock(board, part):
    """benchmarks/dse.py --board BOARD: the sweep's base is the board's preset, its part the one
    the board's manifest names, and no point's latency rests on an assumed clock."""
    from vdla.driver.board import load_manifest
    from vdla.hw.parts import clock_basis, part_of
    path = BENCH_SWEEP.parent / f"dse_{board}.json"
    sweep = load_sweep(path)
    assert json.loads(path.read_text())["base"] == board and sweep.base == load_config(board)
    assert sweep.part == part == part_of(load_manifest(board).part)
    assert all(p.invalid is None for p in sweep.points) and len(sweep.points) >= 3
    assert {clock_basis(p.config.clock_mhz) for p in sweep.points} == {"reference"}


def test_the_pynq_sweep_names_the_pynq_part():
    from vdla.driver.board import load_manifest
    from vdla.hw.parts import part_of
    assert load_sweep(BENCH_SWEEP).part == part_of(load_manifest("pynq").part) == "xc7z020"


def test_a_sweep_without_part_has_none():
    assert load_sweep({"base": "pynq"}).part is None


def test_benchmark_sweep_has_eight_valid_resnet18_configs_with_blocks_8_16_32():
    sweep = load_sweep(BENCH_SWEEP)
    valid = [p for p in sweep.points if p.invalid is None]
    assert len(valid) == len(sweep.points) >= 8
    assert {p.config.block for p in valid} >= {8, 16, 32}


def test_a_sweep_of_a_billion_points_is_refused_before_any_is_built():
    keys = ["LOG_BATCH", "LOG_BLOCK", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
            "LOG_ACC_BUFF_SIZE", "bus_width_bits", "clock_mhz", "LOG_OUT_BUFF_SIZE"]
    grid = {k: list(range(10)) for k in keys if k in load_config("pynq").to_dict()}
    with pytest.raises(SweepError, match=r"has \d+ points \(a grid of 10 x 10 .*the limit is 10000"):
        parse_sweep({"base": "pynq", "grid": grid})


def test_a_grid_over_timing_takes_timing_objects():
    sweep = parse_sweep({"base": "pynq", "grid": {"timing": [{"dram_read_latency": 8}, {"dram_read_latency": 64}],
                                                  "clock_mhz": [100, 200]}})
    assert [(p.config.timing.dram_read_latency, p.config.clock_mhz) for p in sweep.points] == \
        [(8, 100), (8, 200), (64, 100), (64, 200)]
    with pytest.raises(SweepError, match=r"'timing' must be an object of timing parameters \(in a grid, a list of them\), got 8"):
        parse_sweep({"base": "pynq", "grid": {"timing": [8]}})


def test_a_value_of_the_wrong_type_is_an_invalid_point_not_a_crash():
    sweep = parse_sweep({"base": "pynq", "points": [{"LOG_BLOCK": "4"}, {"LOG_BLOCK": 4}]})
    bad, good = sweep.points
    assert "'LOG_BLOCK' (log2 of GEMM input/output channels) must be an integer, got '4'" in bad.invalid
    assert bad.config is None and "x'4'" in bad.label
    assert good.invalid is None and good.label.startswith("1x16")


def test_random_and_mutated_sweep_files_are_read_or_refused_with_the_file_named(tmp_path):
    import json_fuzz
    valid = {"base": "pynq", "grid": {"LOG_BLOCK": [3, 4], "clock_mhz": [100, 200]},
             "points": [{"LOG_INP_BUFF_SIZE": 14, "timing": {"dram_read_latency": 8}}], "part": "xc7z020",
             "name": "fuzz"}
    json_fuzz.check_reader(lambda p: load_sweep(str(p)), tmp_path / "sweep.json", valid, SweepError, seed=2)


@pytest.mark.parametrize("base", [[1], 4, True])
def test_a_base_that_is_no_preset_file_or_object_is_named(base):
    with pytest.raises(SweepError, match=f"'base': expected a preset name, a config file or a config object, got "
                                         f"{type(base).__name__}"):
        parse_sweep({"base": base})
