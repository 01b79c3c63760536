"""Target triples compared as (architecture family, OS, environment), this machine's triple and
CPU features without llvmlite, and the executor picking kernels by them."""
import sys

import numpy as np
import pytest

from vdla.driver import machine


@pytest.mark.parametrize("a,b", [
    ("aarch64-linux-gnu", "aarch64-unknown-linux-gnu"),        # what a compile names / llvmlite on the board
    ("armv7a-linux-gnueabihf", "armv7l-unknown-linux-gnueabihf"),   # LLVM's arch / Python's platform.machine()
    ("x86_64-linux-gnu", "x86_64-pc-linux-gnu"),
    ("x86_64-unknown-linux", "x86_64-unknown-linux-gnu"),      # a Linux triple without an environment is gnu
    ("arm64-linux-gnu", "aarch64-unknown-linux-gnu"),
])
def test_spellings_of_one_machine_match(a, b):
    assert machine.same_machine(a, b)


@pytest.mark.parametrize("a,b", [
    ("armv7a-linux-gnueabihf", "armv7a-linux-gnueabi"),        # hard- and soft-float pass floats differently
    ("aarch64-linux-gnu", "x86_64-linux-gnu"),
    ("aarch64-linux-gnu", "aarch64-linux-musl"),
    ("armv7a-linux-gnueabihf", "aarch64-linux-gnu"),
])
def test_different_machines_do_not_match(a, b):
    assert not machine.same_machine(a, b)


def test_llvm_spelling_has_four_parts():
    assert machine.llvm_triple("armv7a-linux-gnueabihf") == "armv7a-unknown-linux-gnueabihf"
    assert machine.llvm_triple("aarch64-linux-gnu") == "aarch64-unknown-linux-gnu"
    assert machine.llvm_triple("x86_64-pc-linux-gnu") == "x86_64-pc-linux-gnu"


def test_host_triple_without_llvmlite_agrees_with_llvmlite():
    import llvmlite.binding as llvm
    assert machine.same_machine(machine.host_triple(), llvm.get_process_triple())


def test_missing_features_without_llvmlite_reads_cpuinfo(monkeypatch):
    import llvmlite.binding as llvm
    have = {f for f, on in llvm.get_host_cpu_features().items() if on}
    monkeypatch.setitem(sys.modules, "llvmlite.binding", None)   # as on a board: no llvmlite
    monkeypatch.setitem(sys.modules, "llvmlite", None)
    known = [f"+{f}" for f in ("avx2", "fma", "avx512f", "neon") if f in have]
    assert machine.missing_features(known) == []
    absent = "+neon" if "neon" not in have else "+avx2"
    assert machine.missing_features([absent, "+some-future-feature"]) == [absent]


def test_amx_tiles_the_os_does_not_grant_are_missing(monkeypatch):
    """A CPU with AMX whose kernel has not handed this process the tiles (arch_prctl refused)
    would trap on the first tile instruction: its artifacts are refused by name instead."""
    monkeypatch.setattr(machine, "request_amx", lambda: False)
    assert machine.missing_features(["+amx-tile", "+amx-int8"]) == ["+amx-tile", "+amx-int8"]
    monkeypatch.setattr(machine, "request_amx", lambda: True)
    import llvmlite.binding as llvm
    have = llvm.get_host_cpu_features()
    assert machine.missing_features(["+amx-tile"]) == ([] if have.get("amx-tile") else ["+amx-tile"])


def test_the_host_target_names_amx_only_where_granted(monkeypatch):
    from vdla.compiler.target import Target
    monkeypatch.setattr(machine, "request_amx", lambda: False)
    features = Target.host(threads=1).features.split(",")
    assert "+amx-tile" not in features and "+amx-int8" not in features


def _relu_model():
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_executor_runs_kernels_compiled_under_another_spelling_of_this_machine(rng):
    """Kernels listed under x86_64-linux-gnu (the GNU spelling) run where llvmlite says
    x86_64-unknown-linux-gnu; string comparison called it a target mismatch."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the spelling in this test is x86-64's")
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    artifact = compile_model(_relu_model(), target="x86_64-linux-gnu")
    assert list(artifact.header["kernels"]) == ["x86_64-linux-gnu"]
    x = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_array_equal(Executor(artifact).run({"x": x})["y"], np.maximum(x, 0))


def test_a_board_reporting_the_llvm_spelling_picks_the_gnu_spelled_kernels():
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.artifact import ArtifactError
    from vdla.driver.executor import check_compatible
    artifact = compile_model(_relu_model(), target="aarch64-linux-gnu", link=False)
    assert check_compatible(artifact, on="aarch64-unknown-linux-gnu") == "aarch64-linux-gnu"
    with pytest.raises(ArtifactError, match="kernels for aarch64-linux-gnu, the kernel host is armv7l"):
        check_compatible(artifact, on="armv7l-unknown-linux-gnueabihf")


def test_an_arm_process_under_emulation_does_not_read_the_x86_hosts_flags(monkeypatch):
    """qemu-user shows an emulated ARM process the host's /proc/cpuinfo: its x86 `flags` say
    nothing about the ARM CPU, so no feature is reported missing (an ARM board lists `Features`)."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("needs an x86 /proc/cpuinfo")
    monkeypatch.setitem(sys.modules, "llvmlite", None)
    monkeypatch.setattr(platform, "machine", lambda: "armv7l")
    assert machine.missing_features(["+neon", "+vfp3"]) == []
