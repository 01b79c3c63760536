"""Linking kernels and the thread pool into one shared object per target with zig cc."""
import struct
import sys

import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.codegen import arm_abi, link
from vdla.compiler.target import Target
from vdla.driver import cpu_kernel, kernel_abi, thread_pool

pytest.importorskip("ziglang")


def _conv(target):
    x = te.placeholder((1, 4, 28, 28, 16), "float32", "x")
    w = te.placeholder((4, 4, 3, 3, 16, 16), "float32", "w")
    y = topi.relu(topi.conv2d_nchwc(x, w, strides=1, pads=1))
    return build(topi.schedule_for([y], target), [x, w, y], target, "conv")


def _dynamic_symbols(so: bytes) -> set[str]:
    """Names in an ELF shared object's .dynsym (32- or 64-bit, little endian)."""
    wide = so[4] == 2
    shoff = struct.unpack_from("<Q" if wide else "<I", so, 0x28 if wide else 0x20)[0]
    shentsize, shnum = struct.unpack_from("<HH", so, 0x3A if wide else 0x2E)
    sections = []
    for i in range(shnum):
        at = shoff + i * shentsize
        if wide:
            _, kind, _, _, offset, size, linked, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", so, at)
        else:
            _, kind, _, _, offset, size, linked, _, _, entsize = struct.unpack_from("<IIIIIIIIII", so, at)
        sections.append((kind, offset, size, linked, entsize))
    names = set()
    for kind, offset, size, linked, entsize in sections:
        if kind == 11:   # SHT_DYNSYM
            strings = sections[linked][1]
            for k in range(1, size // entsize):
                name_at = struct.unpack_from("<I", so, offset + k * entsize)[0]
                end = so.index(b"\0", strings + name_at)
                names.add(so[strings + name_at:end].decode())
    return names


@pytest.mark.parametrize("triple,zig", [
    ("armv7a-linux-gnueabihf", "arm-linux-gnueabihf.2.17"),
    ("aarch64-linux-gnu", "aarch64-linux-gnu.2.17"),
    ("x86_64-unknown-linux-gnu", "x86_64-linux-gnu.2.17"),
    ("aarch64-unknown-linux-musl", "aarch64-linux-musl"),
])
def test_zig_targets(triple, zig):
    assert link.zig_target(triple) == zig


def test_no_shared_objects_for_other_systems():
    with pytest.raises(link.LinkError, match="for Linux"):
        link.zig_target("x86_64-apple-darwin")


@pytest.mark.parametrize("triple,machine", [("armv7a-linux-gnueabihf", 40), ("aarch64-linux-gnu", 183)])
def test_board_shared_object_exports_kernels_specs_and_its_own_pool(triple, machine):
    target = Target(triple, threads=2)
    kern = _conv(target)
    assert kernel_abi.PARALLEL_FOR in kern.llvm_ir          # two threads: the kernel calls the pool
    so = link.link_shared({"conv": kern.object_code}, target)
    assert so[:4] == b"\x7fELF" and struct.unpack_from("<HH", so, 16) == (3, machine)   # ET_DYN
    symbols = _dynamic_symbols(so)
    assert {"conv", kernel_abi.argspec_symbol("conv"), kernel_abi.num_threads_symbol("conv"),
            kernel_abi.PARALLEL_FOR} <= symbols
    assert {symbol for symbol, _ in thread_pool.state_symbols()} <= symbols   # reset after a fork
    if machine == 40:
        assert arm_abi.e_flags(so) & arm_abi.EF_ARM_ABI_FLOAT_HARD
    assert len(so) < 64 * 1024    # no unused compiler-rt


def test_host_shared_object_runs_like_the_jit_loaded_object(rng):
    target = Target.host(threads=2)
    kern = _conv(target)
    linked = cpu_kernel.load_shared(link.link_shared({"conv": kern.object_code}, target), ["conv"])
    jitted = kern.load()
    assert linked.arg_specs("conv") == jitted.arg_specs("conv")
    x = rng.standard_normal((1, 4, 28, 28, 16)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3, 16, 16)).astype(np.float32)
    want = np.zeros((1, 4, 28, 28, 16), np.float32)
    jitted.run("conv", [x, w, want])
    for threads in (1, 2):
        linked.set_num_threads(threads)
        got = np.zeros_like(want)
        linked.run("conv", [x, w, got])
        np.testing.assert_array_equal(got, want)


def test_an_undefined_symbol_fails_the_link_naming_it():
    import llvmlite.binding as llvm
    from vdla.compiler.codegen.emit import emit_object, parse
    target = Target.host()
    mod = parse("declare i32 @vdla_no_such_function()\n"
                "define i32 @k(ptr %b) {\n  %r = call i32 @vdla_no_such_function()\n  ret i32 %r\n}\n")
    mod.triple = llvm.get_process_triple()
    with pytest.raises(link.LinkError, match="vdla_no_such_function"):
        link.link_shared({"k": emit_object(mod, target)}, target)


def test_missing_ziglang_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "ziglang", None)
    with pytest.raises(link.LinkError, match=r"ziglang.*pip install 'vdla\[link\]'"):
        link.link_shared({}, Target("aarch64-linux-gnu"))
