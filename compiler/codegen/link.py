"""Kernel objects + the thread pool -> one shared object for a target triple, which the deploy
runtime loads with ctypes (vdla.driver.cpu_kernel.load_shared): a board then needs neither
the compiler nor llvmlite, for which there is no wheel for the PYNQ-Z1/Z2's armv7l Python.

The linker is zig's clang/lld from the PyPI `ziglang` package (`python -m ziglang cc`). It is
well kept (a release tracks each LLVM release), installs with pip on every host we compile
on, and one wheel cross-links for every target we ship: armv7 hard-float, aarch64 and x86-64,
against glibc stubs of a chosen version and with its own compiler-rt (32-bit ARM kernels call
__aeabi_ldivmod and friends for their 64-bit index arithmetic). The alternative, Debian's
gcc-arm-linux-gnueabihf and gcc-aarch64-linux-gnu, needs apt and root and links against the
build machine's glibc version; an LLVM-only route (llvmlite) has no linker at all.

The objects are linked against glibc GLIBC_VERSION, the oldest zig offers for these targets,
so the result runs on every newer glibc (PYNQ images since v2.5 have 2.27 or newer).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from vdla.driver import kernel_abi, machine, thread_pool
from vdla.hw.errors import CompileError

GLIBC_VERSION = "2.17"
# our architecture families -> zig's names for them
_ZIG_ARCH = {"x86_64": "x86_64", "i686": "x86", "aarch64": "aarch64", "arm": "arm"}
LINK_TIMEOUT_S = 600   # the first link for a target builds zig's libc stubs and compiler-rt (~1 min)


class LinkError(CompileError, RuntimeError):
    """The kernels could not be linked into a shared object; the message says what to do."""


def zig_target(triple: str) -> str:
    """The zig `-target` for an LLVM triple, e.g. armv7a-linux-gnueabihf -> arm-linux-gnueabihf.2.17."""
    key = machine.key(triple)
    if key.os != "linux" or key.arch not in _ZIG_ARCH:
        raise LinkError(f"cannot link kernels for {triple}: shared objects are linked for Linux on "
                        f"{', '.join(_ZIG_ARCH)}")
    glibc = f".{GLIBC_VERSION}" if key.env.startswith("gnu") else ""
    return f"{_ZIG_ARCH[key.arch]}-linux-{key.env}{glibc}"


def zig_cc() -> list[str]:
    """The command that runs zig's C compiler driver; a LinkError naming the package if it is missing."""
    try:
        import ziglang  # noqa: F401  (only to find out whether it is installed)
    except ImportError:
        raise LinkError("linking kernels into a shared object for a board needs the `ziglang` package "
                        "(pip install 'vdla[link]', or pip install ziglang); or compile with link=False "
                        "(vdla compile --no-link), and the board then needs llvmlite to load the kernels") from None
    return [sys.executable, "-m", "ziglang", "cc"]


def pool_object(target) -> bytes:
    """The deploy runtime's thread pool (vdla.driver.thread_pool) compiled for `target`."""
    from .emit import emit_object, parse
    mod = parse(thread_pool.build_ir(target.pointer_bits, target.arch))
    mod.triple = target.llvm_triple
    mod.data_layout = str(target.target_machine().target_data)
    mod.name = "vdla_thread_pool"
    return emit_object(mod, target)


def link_shared(objects: dict[str, bytes], target) -> bytes:
    """Link kernel objects (name -> ELF object) and a thread pool for `target` into one shared
    object. Undefined symbols are errors here, not at load time on the board; references
    between the objects bind inside the library (-Bsymbolic), so two artifacts loaded into one
    process each use their own pool; sections nothing exported reaches are dropped (zig's
    compiler-rt is one object: 220 KB for the few __aeabi helpers a 32-bit ARM kernel calls)."""
    command = zig_cc()
    with tempfile.TemporaryDirectory(prefix="vdla-link-") as tmp:
        paths = []
        for k, (name, code) in enumerate([*objects.items(), ("vdla_thread_pool", pool_object(target))]):
            path = os.path.join(tmp, f"{k}.o")
            with open(path, "wb") as f:
                f.write(code)
            paths.append(path)
        out = os.path.join(tmp, kernel_abi.SHARED_OBJECT)
        command += ["-target", zig_target(target.triple), "-shared", "-s", "-o", out, *paths,
                    "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-Wl,--gc-sections", "-lm", "-lpthread", "-lc"]
        try:
            done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=LINK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise LinkError(f"linking {len(objects)} kernels for {target.triple} took over {LINK_TIMEOUT_S} s "
                            f"(zig cc, target {zig_target(target.triple)})") from None
        if done.returncode != 0:
            raise LinkError(f"linking {len(objects)} kernels for {target.triple} failed (zig cc -target "
                            f"{zig_target(target.triple)}, exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        with open(out, "rb") as f:
            return f.read()


def link_kernels(objects: dict[str, bytes], index: dict, target) -> dict[str, bytes]:
    """The artifact objects for each triple of `index` (the kernels lower_graph compiled for
    `target`): {"TRIPLE/kernels.so": shared object}, to store beside the kernel objects. Each
    index entry records how its shared object was linked."""
    from importlib.metadata import version

    linked = {}
    for triple, entry in index.items():
        mine = {name: objects[kernel_abi.kernel_object_key(triple, name)] for name in entry["names"]}
        key = kernel_abi.shared_object_key(triple)
        linked[key] = link_shared(mine, target)
        entry["shared_object"] = {"object": key, "linker": f"ziglang {version('ziglang')}",
                                  "zig_target": zig_target(triple)}
    return linked
