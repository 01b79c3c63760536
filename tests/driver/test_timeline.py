"""Timelines of a model's run (vdla.driver.timeline, vdla run --timeline) and the Perfetto
trace's lanes, checked against the simulator's own statistics of every launch."""
import json

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.driver.devices import SimulatorDevice
from vdla.driver.executor import Executor
from vdla.driver.profile import write_trace
from vdla.driver.timeline import LANES, TimelineError, draw_timeline, segments_of, write_timeline
from vdla.hw.errors import ConfigError

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    d = tmp_path_factory.mktemp("timeline")
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((2, 1, 3, 32, 32)).astype(np.float32)
    artifact = compile_model(small_residual_cnn(), target="vdla", hw_config="pynq", calibration={"input": calib})
    artifact.save(str(d / "m.vdla"))
    return d, artifact, {"input": calib[0]}


@pytest.fixture(scope="module")
def traced_run(compiled):
    _, artifact, feeds = compiled
    ex = Executor(artifact, device=SimulatorDevice("pynq", dram_bytes=1 << 26, trace=True))
    ex.run(feeds)
    return ex


def test_segments_lie_back_to_back_in_step_order(traced_run):
    segments = segments_of(traced_run)
    launches = traced_run.last_launches
    assert [s.name for s in segments] == [step.name for step, _ in traced_run.steps if step.name in launches]
    offset = 0
    for s in segments:
        assert s.offset == offset and s.cycles == launches[s.name].cycles
        offset += s.cycles


def test_timeline_png_and_lane_figures_equal_the_simulator_statistics(traced_run, tmp_path):
    path = tmp_path / "t.png"
    summary = write_timeline(traced_run, str(path), title="small cnn")
    assert path.read_bytes()[:8] == PNG
    launches = traced_run.last_launches.values()
    total = sum(launch.cycles for launch in launches)
    for lane in LANES:
        busy = sum(launch.stats["busy_cycles"][lane] for launch in launches)
        wait = sum(launch.stats["token_stall_cycles"][lane] for launch in launches)
        assert summary[lane]["busy_cycles"] == busy and summary[lane]["wait_cycles"] == wait
        assert summary[lane]["busy"] == pytest.approx(busy / total)
    assert summary["compute"]["busy_cycles"] > 0 and summary["store"]["wait_cycles"] > 0


def test_one_layer_starts_at_cycle_zero(traced_run, tmp_path):
    name = segments_of(traced_run)[1].name
    [segment] = segments_of(traced_run, layer=name)
    assert segment.name == name and segment.offset == 0
    write_timeline(traced_run, str(tmp_path / "one.png"), layer=name)
    assert (tmp_path / "one.png").read_bytes()[:8] == PNG


def test_errors_name_the_missing_trace_the_unknown_layer_and_a_bad_window(compiled, traced_run, tmp_path):
    _, artifact, feeds = compiled
    untraced = Executor(artifact, device=SimulatorDevice("pynq", dram_bytes=1 << 26))
    untraced.run(feeds)
    with pytest.raises(TimelineError, match="ran without a trace.*trace=True"):
        segments_of(untraced)
    with pytest.raises(TimelineError, match="no accelerator step named 'nope'; the accelerator steps are: conv1, pool1"):
        segments_of(traced_run, layer="nope")
    with pytest.raises(TimelineError, match="window"):
        draw_timeline(segments_of(traced_run), str(tmp_path / "w.png"), window=(50, 10))


def test_perfetto_trace_carries_the_wait_lanes(traced_run, tmp_path):
    write_trace(traced_run, str(tmp_path / "t.json"))
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    waits = [e for e in events if e["cat"] == "token wait"]
    insns = [e for e in events if e["cat"] == "instruction"]
    assert waits and insns and {e["tid"] for e in waits} <= {1, 2, 3}
    clock = traced_run.device.config.clock_mhz
    expected = sum(launch.stats["token_stall_cycles"][lane] for launch in traced_run.last_launches.values()
                   for lane in LANES)
    assert sum(e["dur"] for e in waits) * clock == pytest.approx(expected)
    assert all(e["args"]["node"] for e in waits)


def test_cli_run_timeline(compiled, capsys):
    d, _, _ = compiled
    capsys.readouterr()
    assert main(["run", str(d / "m.vdla"), "--timeline", str(d / "cli.png")]) == 0
    out = capsys.readouterr().out
    assert f"timeline written to {d / 'cli.png'}: load busy" in out and "token wait" in out
    assert (d / "cli.png").read_bytes()[:8] == PNG
    assert main(["run", str(d / "m.vdla"), "--timeline-layer", "conv1"]) == EXIT_CODES[ConfigError]
    assert "--timeline-layer picks the step --timeline draws" in capsys.readouterr().err
    assert main(["run", str(d / "m.vdla"), "--timeline", str(d / "x.png"), "--timeline-layer", "nope"]) == \
        EXIT_CODES[ConfigError]     # a TimelineError
    assert "no accelerator step named 'nope'" in capsys.readouterr().err


def test_cli_timeline_needs_an_accelerator_step(tmp_path, capsys):
    artifact = compile_model(small_residual_cnn(), target="cpu", kernels=False)
    artifact.save(str(tmp_path / "cpu.vdla"))
    assert main(["run", str(tmp_path / "cpu.vdla"), "--timeline", str(tmp_path / "x.png")]) == \
        EXIT_CODES[ConfigError]
    assert "--timeline shows accelerator instructions" in capsys.readouterr().err
