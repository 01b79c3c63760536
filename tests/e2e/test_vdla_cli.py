"""The VDLA path through the CLI, exactly as users call it: compile with calibration, run on
the simulator with a profile (table, chart) and a trace, info with placements, and the
errors for what does not fit together."""
import json

import numpy as np
import pytest

from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError

from model_builders import write_vdla_cnn_files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = write_vdla_cnn_files(tmp_path_factory.mktemp("vdla_cli"))
    assert main(["compile", str(d / "m.onnx"), "-o", str(d / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(d / "calib.npz")]) == 0
    return d


def test_run_profile_chart_and_trace(files, capsys):
    d = files
    capsys.readouterr()
    assert main(["run", str(d / "m.vdla"), "--input", f"input={d / 'x.npy'}", "--output", str(d / "out"),
                 "--device", "sim", "--profile", "--trace", str(d / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "Conv_3" in out and "VdlaConv" in out and "every kernel on one virtual thread" in out
    assert (d / "out" / "profile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = [e for e in json.loads((d / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert events and all(e["args"]["node"] for e in events)
    assert {e["args"]["node"] for e in events} >= {"Conv_3", "MaxPool_13"}     # (Add_46: in a conv's epilogue)
    y = np.load(d / "out" / "softmax_57.npy")
    assert y.shape == (1, 10) and abs(float(y.sum()) - 1.0) < 1e-5


def test_run_on_the_simulator_says_which_time_is_whose(files, capsys):
    """The host's wall time simulating is not the accelerator's: that one is its cycles (the
    profile's per-layer sum) at the config's clock."""
    from vdla.driver.artifact import load
    from vdla.driver.executor import Executor
    capsys.readouterr()
    assert main(["run", str(files / "m.vdla"), "--input", f"input={files / 'x.npy'}", "--device", "sim"]) == 0
    out = capsys.readouterr().out
    assert "simulating the accelerator (sim) on this machine" in out and "latency:" not in out
    ex = Executor(load(files / "m.vdla"))
    ex.run({"input": np.load(files / "x.npy")})
    cycles = sum(launch.cycles for launch in ex.last_launches.values())
    assert f"accelerator time: {cycles:,} cycles = {cycles / 1e5:.3f} ms at 100 MHz (simulated" in out


def test_info_prints_long_node_names_whole(tmp_path, capsys, rng):
    """An exported model's node names run past any fixed column; cut, they are useless to
    --kernel and to grep."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    name = "/features/features.2/features.2.1/block/block.0/block.0.0/Conv"
    w = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name=name, pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", x=rng.standard_normal((2, 1, 16, 8, 8)).astype(np.float32))
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(tmp_path / "calib.npz")]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "m.vdla")]) == 0
    assert any(line.split()[:2] == [name, "vdla"] for line in capsys.readouterr().out.splitlines())


def test_info_lists_placement_reason_macs_and_error(files, capsys):
    capsys.readouterr()
    assert main(["info", str(files / "m.vdla")]) == 0
    text = capsys.readouterr().out
    assert "Softmax: no ALU equivalent" in text and "fused into Conv_3" in text
    assert main(["info", str(files / "m.vdla"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    conv = next(n for n in doc["nodes"] if n["name"] == "Conv_3")
    assert conv["placement"] == "vdla" and conv["macs"] == 16 * 3 * 9 * 32 * 32 and conv["sqnr_db"] > 20


def test_flag_errors_name_the_flag(files, capsys):
    d = files
    assert main(["compile", str(d / "m.onnx"), "-o", str(d / "x.vdla"), "--target", "vdla"]) == EXIT_CODES[ConfigError]
    assert "--calibrate" in capsys.readouterr().err
    assert main(["compile", str(d / "m.onnx"), "-o", str(d / "x.vdla"), "--calibrate", str(d / "calib.npz")]) == \
        EXIT_CODES[ConfigError]
    assert "--target vdla" in capsys.readouterr().err


def test_compile_lists_the_host_steps_and_why(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="where_nonzero"), helper.make_node("Relu", ["x"], ["r"])]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("nz", TensorProto.INT64, None),
                                                helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "host steps: 1: where_nonzero (NonZero): the output shape depends on the values of NonZero's input X" in out


def test_compile_refuses_to_write_over_its_own_model_or_a_device(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    before = model.read_bytes()
    link = tmp_path / "alias.onnx"
    link.symlink_to(model)
    for out in (model, link):
        assert main(["compile", str(model), "-o", str(out), "--target", "cpu"]) == EXIT_CODES[ConfigError]
        assert "is the model being compiled" in capsys.readouterr().err
    assert model.read_bytes() == before
    assert main(["compile", str(model), "-o", "/dev/null", "--target", "cpu"]) == 1
    assert "/dev/null is a character device, not a regular file" in capsys.readouterr().err


def test_compile_warns_in_one_line_when_calibration_data_is_constant(files, tmp_path, capsys):
    np.savez(tmp_path / "zeros.npz", input=np.zeros((2, 1, 3, 32, 32), np.float32))
    assert main(["compile", str(files / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(tmp_path / "zeros.npz")]) == 0
    err = capsys.readouterr().err
    assert "vdla compile: warning: calibration input 'input' holds one value (0.0) in every sample" in err
