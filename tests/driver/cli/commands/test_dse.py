"""`vdla dse` as users call it: files written, the summary and --json line, and errors that
name the flag or the sweep key before any work starts."""
import json
import sys

import onnx
import pytest

from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_dse")
    onnx.save(small_residual_cnn(), d / "m.onnx")
    return d / "m.onnx"


def test_dse_writes_table_and_plot_and_a_json_line(model_file, tmp_path, capsys):
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"grid": {"clock_mhz": [100, 250]}, "points": [{"LOG_BLOCK": 3}]}))
    out = tmp_path / "out"
    assert main(["dse", "--model", str(model_file), "--sweep", str(sweep), "-o", str(out), "--no-synth",
                 "--workers", "1", "--json"]) == 0
    text = capsys.readouterr().out
    assert "3 point(s), 2 evaluated now, 0 synthesized" in text and "Pareto front: p01" in text
    assert "p02: GEMM fields need 136 bits" in text
    doc = json.loads(text.strip().splitlines()[-1])
    assert [p["status"] for p in doc["points"]] == ["ok", "ok", "invalid"] and doc["pareto"] == ["p01"]
    assert doc["points"][1]["config"]["clock_mhz"] == 250 and "timing" not in doc["points"][1]["config"]
    for name in ("dse.csv", "dse.json", "pareto.png"):
        assert (out / name).stat().st_size > 0
    assert main(["dse", "--model", str(model_file), "--sweep", str(sweep), "-o", str(out), "--no-synth"]) == 0
    assert "0 evaluated now" in capsys.readouterr().out


@pytest.mark.parametrize("sweep, extra, message", [
    ({"grid": {"BLOCK": [8]}}, [], "unknown config key 'BLOCK'"),
    ({}, ["--workers", "0"], "--workers 0: expected at least 1"),
    ({}, ["--ray", "local", "--workers", "2"], "--workers sizes the local pool"),
])
def test_errors_name_the_flag_or_key(model_file, tmp_path, capsys, sweep, extra, message):
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    assert main(["dse", "--model", str(model_file), "--sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o"),
                 *extra]) == EXIT_CODES[ConfigError]
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_ray_missing_says_how_to_install_it(model_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)     # as if Ray were not installed
    (tmp_path / "s.json").write_text("{}")
    assert main(["dse", "--model", str(model_file), "--sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o"),
                 "--ray", "local"]) == 1
    assert "pip install 'vdla[ray]'" in capsys.readouterr().err


def test_a_model_that_compiles_for_no_point_exits_1(model_file, tmp_path, capsys, monkeypatch):
    # small SRAMs no longer fail a compile (their layers run on the CPU): a stand-in compiler
    # refuses instead (--workers 1 evaluates in this process)
    import vdla.compiler.compile_model as compile_module

    def refuse(*args, **kwargs):
        raise ValueError("the stand-in compiler refuses")
    monkeypatch.setattr(compile_module, "compile_model", refuse)
    (tmp_path / "s.json").write_text(json.dumps({"points": [{"LOG_WGT_BUFF_SIZE": 9}]}))
    assert main(["dse", "--model", str(model_file), "--sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o"),
                 "--no-synth", "--workers", "1"]) == 1
    out = capsys.readouterr().out
    assert "compile_failed" in out and "the stand-in compiler refuses" in out
