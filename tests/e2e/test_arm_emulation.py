"""The boards' CPU kernels proven without a board: models compiled for armv7a-linux-gnueabihf
(PYNQ-Z1/Z2) and aarch64-linux-gnu (Ultra96, ZCU104), linked into the shared object a board
loads, run through the executor with every kernel call served under qemu-user
(tests/qemu_harness.py), and compared with the same model compiled for and run on this
machine. Skipped, with the reason, where qemu-user cannot be installed (not root, no apt)."""
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

import qemu_harness
from model_builders import ModelBuilder, small_cnn
from vdla.compiler.compile_model import compile_model
from vdla.compiler.target import BOARD_CORES
from vdla.driver import cpu_kernel, kernel_abi
from vdla.driver.executor import Executor

pytest.importorskip("ziglang")
TRIPLES = ["armv7a-linux-gnueabihf", "aarch64-linux-gnu"]
EMULATED_SECONDS = {}   # test -> wall time of its emulated run, printed at the end of the module


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    reason = qemu_harness.ensure_emulators()
    if reason:
        pytest.skip(reason)
    folder = str(tmp_path_factory.mktemp("qemu"))
    yield {triple: qemu_harness.build_host(triple, folder) for triple in TRIPLES}
    if EMULATED_SECONDS:
        print("\nemulated runs (s): " + ", ".join(f"{k} {v:.2f}" for k, v in EMULATED_SECONDS.items()))


def conv_model():
    b = ModelBuilder("conv", seed=1)
    y = b.node("Relu", [b.conv("input", 8, 32, 3, bias=True)])
    return b.model("input", (1, 8, 24, 24), y, (1, 32, 24, 24))


def dense_model():
    b = ModelBuilder("dense", seed=2)
    y = b.gemm("input", 96, 40)
    return b.model("input", (4, 96), y, (4, 40))


def depthwise_model():
    b = ModelBuilder("depthwise", seed=3)
    y = b.relu6(b.conv("input", 16, 16, 3, groups=16, bias=True))
    return b.model("input", (1, 16, 20, 20), y, (1, 16, 20, 20))


def libm_model():
    """Floats the kernels hand to libm (expf, tanhf): garbage under the soft-float ABI."""
    b = ModelBuilder("libm", seed=4)
    y = b.node("Mul", [b.node("Tanh", ["input"]), b.node("Exp", ["input"])])
    y = b.node("Softmax", [b.node("Add", [y, b.node("Sigmoid", ["input"])])], axis=-1)
    return b.model("input", (3, 33), y, (3, 33))


MODELS = {"conv": (conv_model, (1, 8, 24, 24)), "dense": (dense_model, (4, 96)),
          "depthwise": (depthwise_model, (1, 16, 20, 20)), "libm": (libm_model, (3, 33)),
          "small_cnn": (lambda: small_cnn(batch=1), (1, 3, 32, 32))}


def _run_emulated(name, artifact, triple, host, threads, inputs):
    start = time.perf_counter()
    board = Executor(artifact, kernel_host=qemu_harness.EmulatedKernels(triple, host, threads))
    out = board.run(inputs)
    EMULATED_SECONDS[f"{name}[{triple}]"] = time.perf_counter() - start
    return out


@pytest.mark.parametrize("triple", TRIPLES)
@pytest.mark.parametrize("name", list(MODELS))
def test_board_kernels_under_emulation_equal_the_host_kernels(name, triple, hosts, rng):
    build, shape = MODELS[name]
    model = build()
    # the conv compiles with the board's cores (no --threads: 2 on the Zynq-7000, 4 on the
    # UltraScale+), its parallel loop on the library's own pool; the others with one thread
    artifact = compile_model(model, target=triple, threads=None if name == "conv" else 1)
    threads = artifact.header["target"]["threads"]
    assert threads == (BOARD_CORES[triple] if name == "conv" else 1)
    assert kernel_abi.shared_object_key(triple) in artifact.objects
    kinds = [s.kind for s in artifact.plan.steps]
    if name == "small_cnn":   # its reflect Pad stays a host (numpy) step
        assert kinds.count("kernel") >= 10 and set(artifact.header["compile"]["host_reasons"]) == {"Pad_36"}
    else:
        assert set(kinds) <= {"kernel", "alias"}, artifact.header["compile"]["host_reasons"]
    if threads > 1:
        assert any(kernel_abi.PARALLEL_FOR.encode() in code for key, code in artifact.objects.items()
                   if not key.endswith(kernel_abi.SHARED_OBJECT))
    x = rng.standard_normal(shape).astype(np.float32)
    want = Executor(compile_model(model, target="cpu")).run({"input": x})
    got = _run_emulated(name, artifact, triple, hosts[triple], threads, {"input": x})
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=f"{name} on {triple}")


@pytest.fixture(scope="module")
def cnn():
    model = small_cnn(batch=1)
    calib = np.random.default_rng(5).standard_normal((4, 1, 3, 32, 32)).astype(np.float32)
    here = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})
    return model, calib, here


@pytest.mark.parametrize("triple", TRIPLES)
def test_small_cnn_cpu_partition_under_emulation_equals_the_host(triple, cnn, hosts, rng, monkeypatch):
    """The accelerator takes the convolutions (simulated), the board's CPU everything else:
    LeakyRelu, HardSwish, Sigmoid gating, Pad, pooling, Tanh, MatMul, Softmax. Placement weighs
    the board's CPU speed; here both compiles weigh the PYNQ's, so the artifacts differ only in
    where their CPU kernels run."""
    from vdla.compiler.vdla import placement
    monkeypatch.setitem(placement.CPU_MACS_PER_S, triple, placement.CPU_MACS_PER_S[placement.DEFAULT_BOARD_CPU])
    model, calib, here = cnn
    artifact = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib},
                             host_triple=triple)
    kinds = [s.kind for s in artifact.plan.steps]
    assert "vdla" in kinds and kinds.count("kernel") >= 5
    assert artifact.header["vdla_programs"] == here.header["vdla_programs"]
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = Executor(here).run({"input": x})
    got = _run_emulated("small_cnn", artifact, triple, hosts[triple], 1, {"input": x})
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6)


_BOARD_RUN = """
import json, sys
import numpy as np
from vdla.driver.executor import Executor, host_triple
ex = Executor(sys.argv[1], threads=2)
out = ex.run({"input": np.load(sys.argv[2])})
np.save(sys.argv[3], list(out.values())[0])
print(json.dumps({"triple": host_triple(), "numpy": np.__version__,
                  "modules": sorted(m for m in sys.modules if m.startswith(("vdla", "llvmlite", "onnx")))}))
"""


def test_an_armv7_artifact_runs_on_an_emulated_board_with_only_the_deploy_runtime(hosts, tmp_path, rng):
    """Debian's armhf Python and numpy under qemu-arm, vdla.driver and vdla.hw copied beside
    them as a board installs them: no compiler, no simulator, no llvmlite (there is no armv7l
    wheel). The artifact's linked kernels load with ctypes; its one host step runs on numpy."""
    sysroot, why = qemu_harness.board_python(os.environ.get("VDLA_TEST_CACHE", os.path.expanduser("~/.cache/vdla-tests")))
    if sysroot is None:
        pytest.skip(why)
    model = small_cnn(batch=1)
    artifact = compile_model(model, target="armv7a-linux-gnueabihf", threads=2)
    artifact.save(tmp_path / "m.vdla")
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "run.py").write_text(_BOARD_RUN)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(cpu_kernel.__file__)))
    site = qemu_harness.deploy_runtime_tree(repo, str(tmp_path / "site"))
    start = time.perf_counter()
    done = qemu_harness.run_board_python(sysroot, site, [str(tmp_path / n) for n in ("run.py", "m.vdla", "x.npy", "y.npy")])
    EMULATED_SECONDS["board python small_cnn[armv7a-linux-gnueabihf]"] = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["triple"] == "armv7l-unknown-linux-gnueabihf"
    assert not [m for m in report["modules"] if m.startswith(("vdla.compiler", "vdla.simulator", "llvmlite", "onnx"))]
    want = Executor(compile_model(model, target="cpu")).run({"input": x})
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), list(want.values())[0], rtol=1e-5, atol=1e-6)


EXPORTS = Path(__file__).parent / "exports"


@pytest.mark.parametrize("triple", TRIPLES)
@pytest.mark.parametrize("export", ["vit_tiny_dynamo", "bert_torchscript", "lraspp_torchscript", "lstm_torchscript"])
def test_real_exports_run_on_the_board_triples_as_on_this_machine(export, triple, hosts):
    """Today's exporters' node patterns (attention, GELU, LayerNorm, Resize, a bidirectional
    LSTM's recurrence kernel; the checked-in torch exports of test_real_exports.py) on the
    boards' kernels."""
    data = dict(np.load(EXPORTS / f"{export.rsplit('_', 1)[0]}.npz"))
    feeds = {k[3:]: v for k, v in data.items() if k.startswith("in_")}
    want = Executor(compile_model(str(EXPORTS / f"{export}.onnx"), target="cpu")).run(feeds)
    artifact = compile_model(str(EXPORTS / f"{export}.onnx"), target=triple, threads=1)
    got = _run_emulated(export, artifact, triple, hosts[triple], 1, feeds)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5 * float(np.abs(want[key]).max()),
                                   err_msg=f"{export} on {triple}")
