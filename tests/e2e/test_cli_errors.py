"""The CLI on bad input: one clear line on stderr and an exit status other than 0 (never a
traceback, never a silent success), its error category's (vdla.hw.errors) or 1: unknown
targets, invalid or empty models, input files that are not one .npy array. A zero-size output is summarized, not crashed on."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.target import TargetError
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError, ModelError


def _model(nodes, x_shape=(1, 3, 8, 8), inits=(), outputs=("y",)):
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.fixture
def relu_onnx(tmp_path):
    path = tmp_path / "relu.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"])]), str(path))
    return path


def _one_line_error(capsys, command: str) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"vdla {command}: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize("target", ["foo-bar-baz", "nonsense", "riscv64-unknown-linux-gnu", "arm64-apple-darwin"])
def test_an_unknown_target_is_an_error_listing_the_known_ones(target, relu_onnx, tmp_path, capsys):
    out = tmp_path / "m.vdla"
    assert main(["compile", str(relu_onnx), "-o", str(out), "--target", target, "--no-kernels"]) == \
        EXIT_CODES[ConfigError]     # a TargetError
    line = _one_line_error(capsys, "compile")
    assert repr(target) in line and "known targets: cpu" in line and "armv7a-linux-gnueabihf" in line
    assert not out.exists()
    with pytest.raises(TargetError):
        compile_model(str(relu_onnx), target=target, kernels=False)


def test_an_unknown_host_triple_is_an_error(relu_onnx, tmp_path, capsys):
    assert main(["compile", str(relu_onnx), "-o", str(tmp_path / "m.vdla"), "--target", "vdla",
                 "--host-triple", "mips-linux-gnu"]) == EXIT_CODES[ConfigError]
    assert "host triple 'mips-linux-gnu': vdla's runtime loads no mips kernels" in _one_line_error(capsys, "compile")


def test_known_triples_still_compile(relu_onnx):
    for triple in ("aarch64-linux-gnu", "armv7a-linux-gnueabihf", "x86_64-unknown-linux-gnu"):
        assert compile_model(str(relu_onnx), target=triple, kernels=False).plan.steps


def test_an_invalid_model_is_one_line_naming_the_node(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    path = tmp_path / "bad.onnx"
    onnx.save(_model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", strides=[0, 1])], inits=[w]),
              str(path))
    assert main(["compile", str(path), "-o", str(tmp_path / "m.vdla")]) == EXIT_CODES[ModelError]
    line = _one_line_error(capsys, "compile")
    assert "node 'conv1' (op Conv, opset 17): strides [0, 1] must contain only positive values" in line


def test_an_empty_model_file_is_named_as_empty(tmp_path, capsys):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert main(["compile", str(path), "-o", str(tmp_path / "m.vdla")]) == EXIT_CODES[ModelError]
    assert "empty.onnx is empty (0 bytes), not an ONNX model" in _one_line_error(capsys, "compile")


@pytest.fixture
def relu_artifact(relu_onnx, tmp_path):
    path = tmp_path / "relu.vdla"
    compile_model(str(relu_onnx), kernels=False).save(str(path))
    return path


def test_run_input_files_that_are_not_one_npy_array_are_named(relu_artifact, tmp_path, capsys):
    x = np.ones((1, 3, 8, 8), np.float32)
    npz = tmp_path / "x.npz"
    np.savez(npz, x=x, other=x)
    assert main(["run", str(relu_artifact), "--input", f"x={npz}"]) == EXIT_CODES[ModelError]
    line = _one_line_error(capsys, "run")
    assert f"--input x={npz}: the file is an .npz archive (arrays: x, other)" in line
    pickled = tmp_path / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["run", str(relu_artifact), "--input", f"x={pickled}"]) == EXIT_CODES[ModelError]
    assert "holds Python objects (a pickle)" in _one_line_error(capsys, "run")
    text = tmp_path / "x.txt"
    text.write_text("1 2 3\n")
    assert main(["run", str(relu_artifact), "--input", f"x={text}"]) == EXIT_CODES[ModelError]
    assert f"--input x={text}: the file is not a .npy array" in _one_line_error(capsys, "run")
    assert main(["run", str(relu_artifact), "--input", f"x={tmp_path / 'missing.npy'}"]) == EXIT_CODES[ModelError]
    assert "missing.npy: no such file" in _one_line_error(capsys, "run")
    good = tmp_path / "x.npy"
    np.save(good, x)
    assert main(["run", str(relu_artifact), "--input", f"x={good}"]) == 0
    assert "y: float32[1, 3, 8, 8] min 1 max 1 mean 1" in capsys.readouterr().out


def test_run_summarizes_a_zero_size_output(tmp_path, capsys):
    """Slice to an empty tensor is legal ONNX (onnxruntime returns shape [1, 0, 8, 8])."""
    ints = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s", [2]), ("e", [1]), ("a", [1]))]
    model = _model([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]), helper.make_node("Relu", ["x"], ["z"])],
                   inits=ints, outputs=("y", "z"))
    path = tmp_path / "empty_out.vdla"
    compile_model(model, kernels=False).save(str(path))
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "y: float32[1, 0, 8, 8] (empty)" in out and "z: float32[1, 3, 8, 8] min 0" in out


def test_compile_jobs_below_one_is_an_error_before_any_work(relu_onnx, tmp_path, capsys):
    out = tmp_path / "m.vdla"
    assert main(["compile", str(relu_onnx), "-o", str(out), "--jobs", "0"]) != 0
    assert "--jobs 0: at least one process compiles the kernels" in _one_line_error(capsys, "compile")
    assert not out.exists()
