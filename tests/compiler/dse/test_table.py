"""The DSE's table (vdla.compiler.dse.table): the CSV has one row per point with the config's
columns, every result column and a fits_<part> column per FPGA part, read back by the csv module
as written; the terminal table lists every point and, below, each failed point's reason."""
import csv
import json

from vdla.compiler.dse.table import CONFIG_COLUMNS, RESULT_COLUMNS, csv_row, format_table, write_csv, write_json
from vdla.hw.parts import PARTS

CONFIG = {"LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18,
          "LOG_ACC_BUFF_SIZE": 17, "bus_width_bits": 64, "clock_mhz": 100}


def _rows():
    ok = {"id": 0, "label": "pynq", "config_name": "pynq", "config": CONFIG, "status": "ok", "cycles": 123456,
          "ms": 1.23456, "gemm_utilization": 0.42, "lut": 20000, "ff": 30000, "dsp": 100, "bram36": 50.5,
          "uram": 7, "smallest_part": "xc7z020", "fits": ["xc7z020", "xczu3eg", "xczu7ev"], "synth_status": "ok",
          "pareto": True}
    failed = {"id": 1, "label": "LOG_BLOCK=5 " + "x" * 40, "config": dict(CONFIG, LOG_BLOCK=5), "status": "failed",
              "error": "compile: the accumulator SRAM is too small"}
    synth = {"id": 2, "label": "wide bus", "config": dict(CONFIG, bus_width_bits=128), "status": "ok",
             "cycles": 99, "synth_status": "failed", "synth_error": "yosys: out of memory"}
    return [ok, failed, synth]


def test_the_csv_has_every_column_and_reads_back(tmp_path):
    path = tmp_path / "dse.csv"
    write_csv(_rows(), str(path))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    header = list(rows[0])
    assert header[:3] == ["id", "label", "config"] and header[-1] == "error"
    assert set(CONFIG_COLUMNS) | set(RESULT_COLUMNS) | {f"fits_{p}" for p in PARTS} <= set(header)
    ok, failed, synth = rows
    assert ok["cycles"] == "123456" and ok["LOG_BLOCK"] == "4" and ok["fits_xc7z010"] == "False"
    assert ok["fits_xc7z020"] == "True" and ok["error"] == ""
    assert failed["cycles"] == "" and failed["fits_xc7z020"] == "" and failed["LOG_BLOCK"] == "5"
    assert synth["error"] == "yosys: out of memory"          # a synthesis error fills an empty error


def test_csv_row_keeps_a_points_own_error_over_its_synthesis_error():
    row = dict(_rows()[2], error="simulation: deadlock")
    assert csv_row(row)["error"] == "simulation: deadlock"


def test_the_json_document_is_sorted_and_ends_with_a_newline(tmp_path):
    path = tmp_path / "dse.json"
    write_json({"points": _rows()[:1], "b": 1, "a": 2}, str(path))
    text = path.read_text()
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"')
    assert json.loads(text)["points"][0]["cycles"] == 123456


def test_the_terminal_table_lists_points_and_failure_reasons():
    lines = format_table(_rows()).splitlines()
    assert lines[0].split()[:3] == ["id", "config", "status"]
    assert lines[0].split()[-5:-3] == ["BRAM", "URAM"]
    ok, failed, synth = lines[1:4]
    assert ok.split()[-4:-2] == ["50.5", "7"]
    assert "123,456" in ok and "1.235" in ok and "42%" in ok and "xc7z020" in ok and ok.endswith("*")
    assert failed.split()[1] == "LOG_BLOCK=5" and len(failed.split()[2]) < 40 and " failed " in failed
    assert "synth failed" in synth
    assert lines[4:] == ["  1: compile: the accumulator SRAM is too small", "  2: yosys: out of memory"]


def test_a_point_at_an_assumed_clock_says_so_in_every_form(tmp_path):
    """Figures at 100 MHz are the reference; a faster clock no timing analysis supports is
    marked in the CSV (clock_basis), on the terminal (ms~ and a note) and by the hardware's own
    statement of which clocks are assumptions (vdla.hw.parts)."""
    from vdla.hw.parts import REFERENCE_CLOCK_MHZ, clock_basis, clock_label
    assert clock_basis(REFERENCE_CLOCK_MHZ) == "reference" and clock_basis(333) == "assumed"
    assert clock_label(100) == "100 MHz" and clock_label(200) == "200 MHz (assumed: no timing analysis)"
    fast = dict(_rows()[0], id=3, config=dict(CONFIG, clock_mhz=200), ms=0.61728, clock_basis="assumed")
    rows = [dict(_rows()[0], clock_basis="reference"), fast]
    write_csv(rows, str(tmp_path / "dse.csv"))
    with open(tmp_path / "dse.csv", newline="") as f:
        assert [r["clock_basis"] for r in csv.DictReader(f)] == ["reference", "assumed"]
    lines = format_table(rows).splitlines()
    assert "1.235 " in lines[1] and "0.617~" in lines[2]
    assert lines[-1].startswith("  ~ ms at a clock no timing analysis supports")
