"""The deploy runtime with linked kernels: the executor prefers an artifact's shared object
(ctypes) over JIT-loading its objects (llvmlite), runs it without llvmlite and without the
compiler, and says what is missing when an artifact without one meets a runtime without llvmlite."""
import os
import subprocess
import sys

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.driver import kernel_abi
from vdla.driver.artifact import ArtifactError
from vdla.driver.executor import Executor

pytest.importorskip("ziglang")


def small_cnn(seed=0):
    """Conv + Relu, a Sigmoid gate (libm's expf), global average pooling, Gemm, Softmax."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w", rng.standard_normal((16, 3, 3, 3)) * 0.3), ("b", rng.standard_normal(16) * 0.1),
        ("fc_w", rng.standard_normal((10, 16)) * 0.25), ("fc_b", rng.standard_normal(10) * 0.1)]]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Sigmoid", ["r"], ["g"]),
             helper.make_node("Mul", ["r", "g"], ["m"]), helper.make_node("GlobalAveragePool", ["m"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["l"], transB=1),
             helper.make_node("Softmax", ["l"], ["out"], axis=-1)]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.fixture(scope="module")
def model():
    return small_cnn()


@pytest.fixture(scope="module")
def artifacts(model):
    linked = compile_model(model, target="cpu", threads=2, link=True)
    jitted = compile_model(model, target="cpu", threads=2)
    return linked, jitted


def test_host_compiles_are_jit_loaded_unless_linking_is_asked_for(artifacts):
    linked, jitted = artifacts
    triple = linked.header["target"]["triple"]
    assert kernel_abi.shared_object_key(triple) in linked.objects
    assert linked.header["kernels"][triple]["shared_object"]["zig_target"].startswith("x86_64-linux-gnu")
    assert not any(key.endswith(kernel_abi.SHARED_OBJECT) for key in jitted.objects)


def test_executor_prefers_the_shared_object_and_matches_the_jit(artifacts, rng):
    import ctypes
    linked, jitted = artifacts
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    a, b = Executor(linked), Executor(jitted)
    assert all(isinstance(lib._engine, ctypes.CDLL) for lib, _, _ in a.kernels.values())
    assert not any(isinstance(lib._engine, ctypes.CDLL) for lib, _, _ in b.kernels.values())
    for threads in (1, 2):
        for lib, _, _ in a.kernels.values():
            lib.set_num_threads(threads)
        np.testing.assert_array_equal(list(a.run({"input": x}).values())[0], list(b.run({"input": x}).values())[0])


def test_a_shared_object_for_another_machine_is_refused_naming_it(artifacts, model):
    linked, _ = artifacts
    triple = linked.header["target"]["triple"]
    board = compile_model(model, target="aarch64-linux-gnu")
    edited = type(linked)(linked.header, linked.params, dict(linked.objects))
    edited.objects[kernel_abi.shared_object_key(triple)] = board.objects[kernel_abi.shared_object_key("aarch64-linux-gnu")]
    with pytest.raises(ArtifactError, match=f"linked kernels for {triple} cannot be loaded on this machine"):
        Executor(edited)


_RUN_DEPLOY_ONLY = """
import sys, importlib.abc
BLOCKED = ("vdla.compiler", "llvmlite", "onnx")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import numpy as np
from vdla.driver.artifact import ArtifactError
from vdla.driver.executor import Executor
try:
    ex = Executor(sys.argv[1], threads=2)
except ArtifactError as exc:
    print("ArtifactError:", exc)
    sys.exit(3)
out = ex.run({"input": np.load(sys.argv[2])})
np.save(sys.argv[3], list(out.values())[0])
assert not any(m.startswith(BLOCKED) for m in sys.modules), sorted(m for m in sys.modules if m.startswith(BLOCKED))
"""


def _deploy_only(path, x_path, y_path):
    return subprocess.run([sys.executable, "-c", _RUN_DEPLOY_ONLY, str(path), str(x_path), str(y_path)],
                          capture_output=True, text=True, timeout=120)


def test_deploy_runtime_runs_linked_kernels_without_llvmlite_or_the_compiler(artifacts, tmp_path, rng):
    linked, jitted = artifacts
    linked.save(tmp_path / "m.vdla")
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    done = _deploy_only(tmp_path / "m.vdla", tmp_path / "x.npy", tmp_path / "y.npy")
    assert done.returncode == 0, done.stdout + done.stderr
    want = list(Executor(jitted).run({"input": x}).values())[0]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)


def test_without_llvmlite_an_unlinked_artifact_says_what_to_do(artifacts, tmp_path, rng):
    _, jitted = artifacts
    jitted.save(tmp_path / "m.vdla")
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 16, 16), np.float32))
    done = _deploy_only(tmp_path / "m.vdla", tmp_path / "x.npy", tmp_path / "y.npy")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "only llvmlite can load, and llvmlite is not installed" in done.stdout
    # the same target linked, not another target (which would drop what the artifact runs on)
    assert "compile it again with --link" in done.stdout and "--target" not in done.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_the_linked_pool_again(artifacts, rng):
    """The linked library's pool had workers in the parent; the child has none and must start
    its own, not wait for the parent's."""
    linked, _ = artifacts
    ex = Executor(linked, threads=2)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = list(ex.run({"input": x}).values())[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: run, report, leave without pytest's cleanup
        try:
            ok = np.array_equal(list(ex.run({"input": x}).values())[0], want)
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    import select
    ready, _, _ = select.select([read], [], [], 60)
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    assert ready and os.read(read, 1) == b"1", "the forked child hung or computed something else"


def test_cli_links_for_a_board_unless_told_not_to(model, tmp_path):
    import onnx
    from vdla.driver.artifact import load
    from vdla.driver.cli import main
    onnx.save(model, tmp_path / "m.onnx")
    key = kernel_abi.shared_object_key("aarch64-linux-gnu")
    for flags, linked in (([], True), (["--no-link"], False)):
        out = tmp_path / f"m{len(flags)}.vdla"
        assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(out), "--target", "aarch64-linux-gnu", *flags]) == 0
        assert (key in load(out).objects) == linked
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "h.vdla"), "--link"]) == 0
    assert any(k.endswith(kernel_abi.SHARED_OBJECT) for k in load(tmp_path / "h.vdla").objects)
