"""vdla tune and vdla compile --tuning as users call them: the table and the log, the count of
kernels scheduled from the log, and one clear line for every bad input."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError

from cpu_models import IMAGE as CPU_IMAGE
from cpu_models import cpu_knob_model
from tune_models import IMAGE, conv_model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune_cli")
    onnx.save(conv_model("stride2"), d / "a.onnx")
    onnx.save(conv_model("pointwise"), d / "b.onnx")
    rng = np.random.default_rng(0)
    np.savez(d / "calib.npz", x=rng.standard_normal((4, 1, 3, IMAGE, IMAGE)).astype(np.float32))
    return d


def test_tune_then_compile_with_the_log(files, capsys):
    d = files
    assert main(["tune", str(d / "a.onnx"), "--target", "vdla", "--trials", "4", "--jobs", "1", "--no-progress",
                 "-o", str(d / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "2 distinct conv/dense kernels, 0 already in the log" in out
    assert "conv 16->32 3x3/2 32x32" in out and "wrote" in out and "(2 records)" in out
    assert len(json.loads((d / "t.json").read_text())["records"]) == 2
    # model B shares conv1: compiled with A's log, one of its two kernels is scheduled from it
    assert main(["compile", str(d / "b.onnx"), "--target", "vdla", "--calibrate", str(d / "calib.npz"),
                 "--tuning", str(d / "t.json"), "-o", str(d / "b.vdla")]) == 0
    out = capsys.readouterr().out
    assert "tuning: 1 of 2 conv/dense kernels scheduled from" in out and "1 on default schedules" in out
    assert main(["compile", str(d / "b.onnx"), "--target", "vdla", "--calibrate", str(d / "calib.npz"),
                 "--hw-config", "ultra96", "--tuning", str(d / "t.json"), "-o", str(d / "u.vdla")]) == 0
    assert "2 record(s) for other hardware ignored" in capsys.readouterr().out


def test_bad_inputs_give_one_clear_line(files, capsys):
    d = files
    (d / "bad.json").write_text(json.dumps({"format": "vdla-tuning-log", "version": 1, "records": [{"op": 1}]}))
    assert main(["compile", str(d / "b.onnx"), "--target", "vdla", "--calibrate", str(d / "calib.npz"),
                 "--tuning", str(d / "bad.json"), "-o", str(d / "x.vdla")]) == EXIT_CODES[ConfigError]
    assert "record 0: missing field(s)" in capsys.readouterr().err
    assert main(["compile", str(d / "b.onnx"), "--tuning", str(d / "bad.json"), "-o", str(d / "x.vdla")]) == \
        EXIT_CODES[ConfigError]
    assert "record 0: missing field(s)" in capsys.readouterr().err
    assert main(["tune", str(d / "b.onnx"), "--target", "aarch64-linux-gnu", "-o", str(d / "x.json")]) == \
        EXIT_CODES[ConfigError]
    assert "CPU schedules are measured on the machine they run on" in capsys.readouterr().err
    assert main(["tune", str(d / "b.onnx"), "--target", "cpu", "--hw-config", "pynq", "-o", str(d / "x.json")]) == \
        EXIT_CODES[ConfigError]
    assert "--hw-config: for --target vdla" in capsys.readouterr().err
    assert main(["tune", str(d / "b.onnx"), "--trials", "0", "-o", str(d / "x.json")]) == EXIT_CODES[ConfigError]
    assert "--trials 0" in capsys.readouterr().err
    assert main(["tune", str(d / "b.onnx"), "--jobs", "0", "-o", str(d / "x.json")]) == EXIT_CODES[ConfigError]
    assert "--jobs 0" in capsys.readouterr().err
    # a log that cannot be read is not overwritten by a tune into it
    assert main(["tune", str(d / "b.onnx"), "--no-progress", "-o", str(d / "bad.json")]) == EXIT_CODES[ConfigError]
    assert "tuning log" in capsys.readouterr().err and '"op": 1' in (d / "bad.json").read_text()


def test_tune_cpu_kernels_then_compile_with_the_log(files, capsys):
    d = files
    assert main(["tune", str(d / "a.onnx"), "--target", "cpu", "--trials", "2", "--jobs", "1", "--no-progress",
                 "-o", str(d / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "2 distinct CPU kernels with schedule knobs, 0 already in the log" in out
    assert "conv2d_nchwc [1,1,32,32,16]*[2,1,3,3,16,16] -> [1,2,16,16,16] +relu" in out and "(2 records)" in out
    records = json.loads((d / "c.json").read_text())["records"]
    assert [r["target"] for r in records] == ["cpu", "cpu"] and all(r["trials"] == 2 for r in records)
    # a second tune into the log reuses its records
    assert main(["tune", str(d / "a.onnx"), "--target", "host", "--trials", "2", "--jobs", "1", "--no-progress",
                 "-o", str(d / "c.json")]) == 0
    assert "2 already in the log, 0 to tune" in capsys.readouterr().out
    # model B shares conv1: one of its two CPU kernels is scheduled from A's log
    assert main(["compile", str(d / "b.onnx"), "--target", "cpu", "--tuning", str(d / "c.json"),
                 "-o", str(d / "b.vdla")]) == 0
    out = capsys.readouterr().out
    assert "tuning: 1 of 2 CPU kernels scheduled from" in out and "1 on default schedules" in out
    x = np.random.default_rng(3).standard_normal((1, 3, IMAGE, IMAGE)).astype(np.float32)
    np.save(d / "x.npy", x)
    assert main(["run", str(d / "b.vdla"), "--input", f"x={d / 'x.npy'}", "--output", str(d / "out")]) == 0
    want = ort.InferenceSession(str(d / "b.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(d / "out" / "y.npy"), want, rtol=1e-4, atol=1e-4)


def test_tune_vdla_with_its_cpu_fallback_kernels(files, capsys):
    d = files
    onnx.save(cpu_knob_model(dilated_grouped=True), d / "k.onnx")    # (a grouped conv on the CPU)
    calib = np.random.default_rng(2).standard_normal((4, 1, 32, CPU_IMAGE, CPU_IMAGE)).astype(np.float32)
    np.savez(d / "k_calib.npz", x=calib)
    assert main(["tune", str(d / "k.onnx"), "--target", "vdla", "--cpu-kernels", "--trials", "2", "--jobs", "1",
                 "--no-progress", "-o", str(d / "k.json")]) == 0
    out = capsys.readouterr().out
    half = CPU_IMAGE // 2       # (after the strided conv)
    assert "2 distinct CPU kernels with schedule knobs" in out
    assert f"conv2d_nchw [1,32,{half},{half}]*[32,16,3,3]" in out
    records = json.loads((d / "k.json").read_text())["records"]
    assert sum(r.get("target") == "cpu" for r in records) == 2
    assert main(["compile", str(d / "k.onnx"), "--target", "vdla", "--calibrate", str(d / "k_calib.npz"),
                 "--tuning", str(d / "k.json"), "-o", str(d / "k.vdla")]) == 0
    out = capsys.readouterr().out
    assert "tuning: 2 of 2 CPU kernels scheduled from" in out
