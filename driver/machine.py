"""Which CPU kernels this machine can run: target triples compared as (architecture family, OS,
environment), this machine's triple and CPU features read without llvmlite.

Triples are spelled many ways for one machine: a compile names `aarch64-linux-gnu` (the GNU
toolchain's spelling), llvmlite on the board reports `aarch64-unknown-linux-gnu`, Python's
platform module says `armv7l` where LLVM says `armv7a`. The vendor says nothing about what
runs; the environment does: `gnueabihf` and `gnueabi` pass floats to libm in different
registers, so their kernels are not interchangeable. A board has no llvmlite (there is no
wheel for the PYNQ-Z1/Z2's armv7l Python), so everything here reads only the standard library.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
from typing import NamedTuple

_ARCH_FAMILIES = {"x86_64": "x86_64", "amd64": "x86_64", "x86": "i686", "i386": "i686", "i486": "i686",
                  "i586": "i686", "i686": "i686", "aarch64": "aarch64", "arm64": "aarch64"}
# EF_ARM_ABI_FLOAT_HARD in an ARM ELF header's e_flags: the binary passes floats in VFP registers.
EF_ARM_ABI_FLOAT_HARD = 0x400


class TripleKey(NamedTuple):
    """What decides whether kernels compiled for one triple run on a machine of another."""
    arch: str   # family: x86_64, i686, aarch64, arm (any 32-bit ARM; CPU features say which)
    os: str
    env: str    # gnu, gnueabihf, musl, ...; a Linux triple without one means gnu


def arch_family(arch: str) -> str:
    arch = arch.lower()
    if arch in _ARCH_FAMILIES:
        return _ARCH_FAMILIES[arch]
    if arch.startswith(("arm", "thumb")):   # armv7a, armv7l, armv7hl, armv8l (32-bit on arm64), thumbv7
        return "arm"
    return arch


def key(triple: str) -> TripleKey:
    """ARCH-VENDOR-OS[-ENV] or ARCH-OS[-ENV] -> its TripleKey."""
    parts = triple.lower().split("-")
    os_at = next((i for i, p in enumerate(parts[1:], 1) if p.startswith("linux")), None)
    if os_at is None:
        os_at = 2 if len(parts) > 2 else len(parts) - 1
    os_name = parts[os_at] if os_at > 0 else ""
    env = parts[os_at + 1] if len(parts) > os_at + 1 else ""
    if os_name.startswith("linux"):
        os_name, env = "linux", env or "gnu"
    return TripleKey(arch_family(parts[0]), os_name, env)


def same_machine(a: str, b: str) -> bool:
    return key(a) == key(b)


def llvm_triple(triple: str) -> str:
    """The four-part spelling LLVM parses as meant: it reads `armv7a-linux-gnueabihf` as vendor
    `linux`, OS `gnueabihf`, no environment, so the ARM backend falls back to the soft-float
    calling convention; `armv7a-unknown-linux-gnueabihf` is hard-float."""
    parts = triple.split("-")
    if len(parts) in (2, 3) and parts[1].lower().startswith("linux"):
        return "-".join([parts[0], "unknown"] + parts[1:])
    return triple


def host_triple() -> str:
    """This machine's triple, from the Python interpreter that runs us (its libc and, on 32-bit
    ARM, its float ABI), e.g. x86_64-unknown-linux-gnu or armv7l-unknown-linux-gnueabihf."""
    arch = platform.machine() or "unknown"
    if not sys.platform.startswith("linux"):
        return f"{arch}-unknown-{sys.platform}"
    env = "gnu" if platform.libc_ver()[0] == "glibc" else "musl" if _has_musl() else "gnu"
    if arch_family(arch) == "arm":
        env += "eabihf" if _interpreter_is_hard_float() else "eabi"
    return f"{arch}-unknown-linux-{env}"


def _has_musl() -> bool:
    try:
        return any(name.startswith("ld-musl-") for name in os.listdir("/lib"))
    except OSError:
        return False


def _interpreter_is_hard_float() -> bool:
    try:
        with open(sys.executable, "rb") as f:
            head = f.read(52)
    except OSError:
        head = b""
    if head[:4] == b"\x7fELF" and head[4] == 1 and len(head) >= 40:   # ELF32: e_flags at offset 36
        return bool(int.from_bytes(head[36:40], "little") & EF_ARM_ABI_FLOAT_HARD)
    return os.path.exists("/lib/ld-linux-armhf.so.3")


# LLVM feature names -> the names Linux lists in /proc/cpuinfo for them (any one will do).
_CPUINFO_NAMES = {
    "neon": ("neon", "asimd"), "vfp3": ("vfpv3", "vfpv3d16", "vfpv4"), "vfp4": ("vfpv4",),
    "fp-armv8": ("fp",), "crc": ("crc32",), "aes": ("aes",), "sha2": ("sha2",),
    "sse": ("sse",), "sse2": ("sse2",), "sse3": ("pni",), "ssse3": ("ssse3",), "sse4.1": ("sse4_1",),
    "sse4.2": ("sse4_2",), "avx": ("avx",), "avx2": ("avx2",), "fma": ("fma",), "f16c": ("f16c",),
    "bmi": ("bmi1",), "bmi2": ("bmi2",), "avx512f": ("avx512f",), "avx512bw": ("avx512bw",),
    "avx512dq": ("avx512dq",), "avx512vl": ("avx512vl",), "avx512vnni": ("avx512_vnni",),
    "avx512bf16": ("avx512_bf16",), "avxvnni": ("avx_vnni",),
}


# arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): Linux (5.16+) hands a process the AMX
# tile registers only once asked; until then a tile instruction is an illegal instruction
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18
AMX_FEATURES = ("+amx-tile", "+amx-int8")


@functools.cache
def request_amx() -> bool:
    """Ask Linux for the AMX tile registers for this process (its threads and children share the
    grant); True once granted, False where the CPU or the kernel has none to give."""
    if platform.system() != "Linux" or arch_family(platform.machine()) != "x86_64":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


def missing_features(required: list[str]) -> list[str]:
    """The LLVM CPU features (`+avx2`, `+neon`, ...) in `required` that this CPU lacks. With
    llvmlite, its view of the host; without it, /proc/cpuinfo for the features whose Linux
    names are known (a feature it cannot name is not reported: unknown is not missing). AMX
    counts as missing where the OS does not grant this process the tiles (request_amx)."""
    if any(f in AMX_FEATURES for f in required) and not request_amx():
        return [f for f in required if f in AMX_FEATURES] + \
            missing_features([f for f in required if f not in AMX_FEATURES])
    try:
        import llvmlite.binding as llvm
    except ImportError:
        llvm = None
    if llvm is not None:
        have = llvm.get_host_cpu_features()
        return [f for f in required if not have.get(f.lstrip("+"), False)]
    flags = _cpuinfo_flags(arch_family(platform.machine()))
    if flags is None:
        return []
    return [f for f in required if f.lstrip("+") in _CPUINFO_NAMES
            and not flags.intersection(_CPUINFO_NAMES[f.lstrip("+")])]


def _cpuinfo_flags(arch: str) -> set[str] | None:
    """The CPU's feature names as Linux lists them for `arch` (x86: `flags`, ARM: `Features`);
    None where there is no such line (e.g. an ARM process under qemu-user reads the x86 host's
    file, which says nothing about the emulated CPU)."""
    field = "flags" if arch in ("x86_64", "i686") else "Features"
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == field:
            return set(value.split())
    return None
