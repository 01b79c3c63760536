"""The artifact file and the executor: round trip, damage detection, config checks, running
without the compiler, CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import model_builders as builders
from vdla.compiler.compile_model import compile_model
from vdla.driver import artifact as art
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.driver.executor import Executor
from vdla.hw.errors import ArtifactError, ModelError


@pytest.fixture(scope="module")
def small_artifact(tmp_path_factory):
    path = tmp_path_factory.mktemp("art") / "small.vdla"
    model = builders.small_cnn()
    compile_model(model, kernels=False).save(path)
    return path, model


def test_round_trip_keeps_params_and_plan(small_artifact):
    path, _ = small_artifact
    a = art.load(path)
    b = art.from_bytes(a.to_bytes())
    assert a.header["plan"] == b.header["plan"]
    assert a.params.keys() == b.params.keys()
    for k in a.params:
        np.testing.assert_array_equal(a.params[k], b.params[k])


def test_truncated_artifact_is_named(small_artifact, tmp_path):
    data = small_artifact[0].read_bytes()
    for cut in (10, 40, len(data) // 2, len(data) - 1):
        with pytest.raises(art.ArtifactError, match="truncated"):
            art.from_bytes(data[:cut])


def test_tampered_parameter_is_named(small_artifact):
    data = bytearray(small_artifact[0].read_bytes())
    a = art.from_bytes(bytes(data))
    name, entry = next(iter(a.header["params"].items()))
    prefix = len(data) - 32 - a.header["blob_bytes"]
    data[prefix + entry["offset"]] ^= 0xFF
    with pytest.raises(art.ArtifactError, match=f"parameter '{name}' fails its sha256"):
        art.from_bytes(bytes(data))


def test_tampered_header_fails_the_digest(small_artifact):
    data = small_artifact[0].read_bytes()
    i = data.index(b'"arena_bytes": ') + len(b'"arena_bytes": ')
    tampered = data[:i] + (b"9" if data[i:i + 1] != b"9" else b"8") + data[i + 1:]
    with pytest.raises(art.ArtifactError, match="digest mismatch"):
        art.from_bytes(tampered)


def test_not_an_artifact():
    with pytest.raises(art.ArtifactError, match="not a vdla artifact"):
        art.from_bytes(b"\x7fELF" + bytes(100))


def test_hardware_config_mismatch(tmp_path):
    hw = pytest.importorskip("vdla.hw")
    path = tmp_path / "m.vdla"
    compile_model(builders.small_cnn(), kernels=False, hw_config="pynq").save(path)
    a = art.load(path)
    assert a.header["hardware"]["hash"] == hw.load_config("pynq").hash
    Executor(a, hw_config=hw.load_config("pynq"))  # the same config loads
    with pytest.raises(art.ArtifactError, match="hardware config mismatch"):
        Executor(a, hw_config=hw.load_config({**hw.load_config("pynq").to_dict(), "LOG_BLOCK": 5}))


def test_target_triple_mismatch(use_kernels):
    if not use_kernels:
        pytest.skip("needs the tensor compiler to cross-compile kernels")
    a = compile_model(builders.small_cnn(), target="aarch64-linux-gnu")
    assert list(a.header["kernels"]) == ["aarch64-linux-gnu"]
    assert all(raw[:4] == b"\x7fELF" and raw[18] == 183 for raw in a.objects.values())  # EM_AARCH64
    with pytest.raises(art.ArtifactError, match="target mismatch.*aarch64-linux-gnu"):
        Executor(art.from_bytes(a.to_bytes()))


_RUN_WITHOUT_COMPILER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "vdla.compiler" or name.startswith("vdla.compiler.") or name == "onnx":
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import numpy as np
from vdla.driver.executor import Executor
ex = Executor(sys.argv[1])
spec = ex.artifact.plan.inputs[0]
x = np.load(sys.argv[2])
out = ex.run({spec.name: x})
np.save(sys.argv[3], list(out.values())[0])
assert not any(m == "vdla.compiler" or m.startswith("vdla.compiler.") for m in sys.modules)
"""


def test_executor_runs_without_the_compiler(small_artifact, tmp_path, rng, use_kernels):
    path, model = small_artifact
    if use_kernels:
        path = tmp_path / "k.vdla"
        compile_model(model).save(path)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([sys.executable, "-c", _RUN_WITHOUT_COMPILER, str(path), str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], check=True, timeout=120)
    import onnxruntime as ort
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-4, atol=1e-4)


def test_per_step_timing(small_artifact, rng):
    ex = Executor(small_artifact[0])
    ex.run({"input": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}, profile=True)
    assert [t.name for t in ex.last_timings] == [s.name for s in ex.artifact.plan.steps]
    assert all(t.seconds >= 0 for t in ex.last_timings)


def test_executor_rejects_wrong_inputs(small_artifact):
    ex = Executor(small_artifact[0])
    with pytest.raises(ValueError, match="missing input 'input'"):
        ex.run({})
    with pytest.raises(ValueError, match=r"expected float32\[2, 3, 32, 32\]"):
        ex.run({"input": np.zeros((1, 3, 32, 32), np.float32)})


def test_cli_compile_info_run(tmp_path, rng, capsys):
    import onnx
    from vdla.driver.cli import main
    model = builders.small_cnn()
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--no-kernels"]) == 0
    assert main(["info", str(tmp_path / "m.vdla"), "--steps"]) == 0
    out = capsys.readouterr().out
    assert "input  input: float32[2, 3, 32, 32]" in out and "memory plan" in out
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(tmp_path / "m.vdla"), "--input", f"input={tmp_path / 'x.npy'}",
                 "--output", str(tmp_path / "out"), "--profile"]) == 0
    (result,) = os.listdir(tmp_path / "out")
    import onnxruntime as ort
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out" / result), want, rtol=1e-4, atol=1e-4)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "m.vdla"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])     # one JSON object, last line
    assert doc["header"]["format_version"] == art.FORMAT_VERSION and doc["nodes"] == []


def test_cli_reports_a_damaged_artifact_in_one_line(tmp_path, capsys):
    from vdla.driver.cli import main
    (tmp_path / "bad.vdla").write_bytes(b"VDLAART\0" + bytes(5))
    assert main(["info", str(tmp_path / "bad.vdla")]) == EXIT_CODES[ArtifactError]
    assert "truncated" in capsys.readouterr().err


def test_cli_symbolic_batch_external_data_and_hw_config(tmp_path, capsys):
    import onnx
    from vdla.driver.cli import main
    model = builders.small_cnn()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.weights",
              size_threshold=0)
    out = str(tmp_path / "m.vdla")
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", out, "--no-kernels"]) == EXIT_CODES[ModelError]
    assert "symbolic" in capsys.readouterr().err
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", out, "--no-kernels",
                 "--input-shape", "input=3,3,32,32", "--hw-config", "pynq"]) == 0
    assert main(["run", out, "--hw-config", "pynq"]) == 0  # random inputs by default
    assert "float32[3, 10]" in capsys.readouterr().out
    other = tmp_path / "other.json"
    from vdla.hw import load_config
    other.write_text(json.dumps({**load_config("pynq").to_dict(), "LOG_BLOCK": 5}))
    assert main(["run", out, "--hw-config", str(other)]) == EXIT_CODES[ArtifactError]
    assert "hardware config mismatch" in capsys.readouterr().err
