"""`vdla run ... | head`: a reader that closes stdout early ends the command quietly, with the
status of a tool killed by SIGPIPE, instead of a broken-pipe message or traceback; a broken
pipe that is not stdout's is still an error with its message."""
import subprocess
import sys

import onnx
from onnx import TensorProto, helper

from vdla.compiler.compile_model import compile_model
from vdla.driver import cli

# the `vdla` console script: sys.exit(main())
_VDLA = "import sys; from vdla.driver.cli import main; sys.exit(main(sys.argv[1:]))"
OUTPUTS = 2000          # ~140 KB of `name: summary` lines, past any pipe buffer, so writes must fail


def _many_outputs_artifact(path):
    names = [f"output_number_{k:05d}" for k in range(OUTPUTS)]
    graph = helper.make_graph([helper.make_node("Relu", ["x"], [n], name=f"relu{k}") for k, n in enumerate(names)],
                              "fan_out", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    compile_model(model, kernels=False).save(str(path))


def test_a_reader_closing_after_one_line_ends_the_run_quietly(tmp_path):
    _many_outputs_artifact(tmp_path / "fan.vdla")
    proc = subprocess.Popen([sys.executable, "-c", _VDLA, "run", str(tmp_path / "fan.vdla")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()              # as `head -1` does
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == cli.CLOSED_STDOUT_EXIT == 141
    assert first.startswith(b"output_number_00000: float32[1, 4]")
    assert err == ""                 # no "Broken pipe", no "Exception ignored", no traceback


def test_a_broken_pipe_that_is_not_stdouts_is_an_error(monkeypatch, capsys):
    from vdla.driver.cli.commands import info

    def run(args):
        raise BrokenPipeError(32, "Broken pipe (the board's connection)")
    monkeypatch.setattr(info, "run", run)
    assert cli.main(["info", "whatever.vdla"]) == 1
    assert "vdla info: error: [Errno 32] Broken pipe (the board's connection)" in capsys.readouterr().err
