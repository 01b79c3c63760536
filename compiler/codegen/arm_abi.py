"""The float ABI of 32-bit ARM ELF objects: what the object's build attributes say, and the
header flag that says it to loaders and linkers.

PYNQ boards run hard-float Linux (armhf): a float argument travels in s0, not r0. An object
compiled soft-float still links and loads there, and every call between it and libm (expf,
tanhf, erff) then reads its argument from the wrong register. LLVM records the convention in
the `.ARM.attributes` section (Tag_ABI_VFP_args = 1: VFP registers), but its object writer
leaves the ELF header's EF_ARM_ABI_FLOAT_HARD clear (GNU as sets it), so a kernel object would
not say what it is; `mark_hard_float` sets the flag after checking the attribute.
"""
from __future__ import annotations

import struct

from vdla.driver.machine import EF_ARM_ABI_FLOAT_HARD
from vdla.hw.errors import CompileError

EM_ARM = 40
TAG_FILE = 1
TAG_ABI_VFP_ARGS = 28          # 0: base (soft-float) AAPCS, 1: VFP registers
TAG_COMPATIBILITY = 32         # a ULEB128 and a string
_STRING_TAGS = {4, 5, 65, 67}  # and every odd tag above 32 (the AAELF rule)


class ArmAbiError(CompileError, ValueError):
    """An ARM object whose float ABI is not the one its target needs."""


def _elf32_arm(obj: bytes) -> None:
    if obj[:4] != b"\x7fELF" or obj[4] != 1 or obj[5] != 1 or struct.unpack_from("<H", obj, 18)[0] != EM_ARM:
        raise ArmAbiError("not a little-endian ELF32 ARM object")


def e_flags(obj: bytes) -> int:
    _elf32_arm(obj)
    return struct.unpack_from("<I", obj, 36)[0]


def _section(obj: bytes, wanted: str) -> bytes | None:
    shoff, = struct.unpack_from("<I", obj, 32)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 46)
    headers = [struct.unpack_from("<IIIIII", obj, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    for name, _, _, _, offset, size in headers:
        start = names[4] + name
        if obj[start:obj.index(b"\0", start)].decode() == wanted:
            return obj[offset:offset + size]
    return None


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def build_attributes(obj: bytes) -> dict[int, int | str]:
    """The file-scope `aeabi` build attributes of an ELF32 ARM object (tag -> value)."""
    _elf32_arm(obj)
    data = _section(obj, ".ARM.attributes")
    attrs: dict[int, int | str] = {}
    if not data or data[0:1] != b"A":
        return attrs
    at = 1
    while at < len(data):
        length, = struct.unpack_from("<I", data, at)
        end = at + length
        vendor_end = data.index(b"\0", at + 4)
        if data[at + 4:vendor_end] == b"aeabi":
            sub = vendor_end + 1
            while sub < end:
                tag, size = data[sub], struct.unpack_from("<I", data, sub + 1)[0]
                if tag == TAG_FILE:
                    _read_pairs(data, sub + 5, sub + size, attrs)
                sub += size
        at = end
    return attrs


def _read_pairs(data: bytes, at: int, end: int, attrs: dict) -> None:
    while at < end:
        tag, at = _uleb(data, at)
        if tag == TAG_COMPATIBILITY:
            _, at = _uleb(data, at)
        if tag in _STRING_TAGS or tag == TAG_COMPATIBILITY or (tag > 32 and tag % 2):
            stop = data.index(b"\0", at)
            attrs[tag] = data[at:stop].decode(errors="replace")
            at = stop + 1
        else:
            attrs[tag], at = _uleb(data, at)


def passes_floats_in_vfp_registers(obj: bytes) -> bool:
    return build_attributes(obj).get(TAG_ABI_VFP_ARGS) == 1


def mark_hard_float(obj: bytes, what: str = "kernel object") -> bytes:
    """`obj` with EF_ARM_ABI_FLOAT_HARD set, after checking that its code really uses the
    hard-float calling convention."""
    if not passes_floats_in_vfp_registers(obj):
        raise ArmAbiError(f"{what}: compiled for a hard-float target but its build attributes do not "
                          "record Tag_ABI_VFP_args = 1: floats would be passed to libm in integer "
                          "registers; compile with a four-part gnueabihf triple")
    flags = e_flags(obj) | EF_ARM_ABI_FLOAT_HARD
    return obj[:36] + struct.pack("<I", flags) + obj[40:]
