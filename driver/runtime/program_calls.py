"""The calls of a KernelProgram: one frozen record per CommandQueue method that replay issues.

Their JSON form (format vdla-kernel-program/1) is a list, the call's name first, then its
fields in declaration order; Load's `pad_min` is written only when set. `call_from_list` reads
one back and checks it: a known name, the right number of fields, each an integer of its
range. Indexes into the program's buffers and micro-op kernels are checked by the program,
which knows how many it has.
"""
from __future__ import annotations

from dataclasses import MISSING, astuple, dataclass, fields
from typing import ClassVar

from vdla.hw import MemType

from .errors import RuntimeStreamError
from .insn_queue import Stage

# No field of a call (an SRAM index, an element offset, a size) comes near this: a larger
# value is a damaged document, and the encoder would mask it into a bit field.
_LIMIT = 1 << 48


class _Call:
    """A call's JSON form: its name, then its fields in order."""
    NAME: ClassVar[str]

    def to_list(self) -> list:
        return [self.NAME, *astuple(self)]


@dataclass(frozen=True)
class Load(_Call):
    """A 2-D DMA load into an SRAM (or the accumulators), padded; `param` indexes the buffers."""
    NAME: ClassVar[str] = "load"
    mem_type: int
    sram: int
    param: int
    elem_offset: int
    x_size: int
    y_size: int
    x_stride: int
    y_pad0: int
    y_pad1: int
    x_pad0: int
    x_pad1: int
    pad_min: int = 0      # 1: pad with the lanes' most negative value (max pooling); 0: zeros

    def issue(self, cq, buffers, kernels) -> None:
        cq.load_2d(MemType(self.mem_type), self.sram, buffers[self.param], self.elem_offset, self.x_size,
                   self.y_size, self.x_stride, y_pad=(self.y_pad0, self.y_pad1),
                   x_pad=(self.x_pad0, self.x_pad1), pad_min=bool(self.pad_min))

    def to_list(self) -> list:
        values = list(astuple(self))
        return [self.NAME] + (values if self.pad_min else values[:-1])


@dataclass(frozen=True)
class Store(_Call):
    """A 2-D DMA store of output rows to buffer `param`."""
    NAME: ClassVar[str] = "store"
    sram: int
    param: int
    elem_offset: int
    x_size: int
    y_size: int
    x_stride: int

    def issue(self, cq, buffers, kernels) -> None:
        cq.store_2d(self.sram, buffers[self.param], self.elem_offset, self.x_size, self.y_size, self.x_stride)


@dataclass(frozen=True)
class Gemm(_Call):
    """Run micro-op kernel `kernel` (an index into the program's kernels) on the GEMM core."""
    NAME: ClassVar[str] = "gemm"
    kernel: int

    def issue(self, cq, buffers, kernels) -> None:
        cq.push_gemm(kernels[self.kernel])


@dataclass(frozen=True)
class Alu(_Call):
    """Run micro-op kernel `kernel` on the vector ALU."""
    NAME: ClassVar[str] = "alu"
    kernel: int

    def issue(self, cq, buffers, kernels) -> None:
        cq.push_alu(kernels[self.kernel])


@dataclass(frozen=True)
class Push(_Call):
    """A dependence token from stage `src` to stage `dst` (Stage values)."""
    NAME: ClassVar[str] = "push"
    src: int
    dst: int

    def issue(self, cq, buffers, kernels) -> None:
        cq.dep_push(Stage(self.src), Stage(self.dst))


@dataclass(frozen=True)
class Pop(_Call):
    """Wait for a token from stage `src` at stage `dst`."""
    NAME: ClassVar[str] = "pop"
    src: int
    dst: int

    def issue(self, cq, buffers, kernels) -> None:
        cq.dep_pop(Stage(self.src), Stage(self.dst))


Call = Load | Store | Gemm | Alu | Push | Pop
CALLS: dict[str, type] = {c.NAME: c for c in (Load, Store, Gemm, Alu, Push, Pop)}
# The fields that name an enumeration: their values must be members.
_MEMBERS = {"mem_type": MemType, "src": Stage, "dst": Stage}


def call_from_list(item, index: int) -> Call:
    """The record of JSON call `item`, the program's call number `index` (named in errors)."""
    if not isinstance(item, list) or not item or item[0] not in CALLS:
        raise RuntimeStreamError(f"call {index} {item!r} is malformed: expected [name, fields...] with "
                                 f"name one of {', '.join(CALLS)}")
    cls = CALLS[item[0]]
    names = [f.name for f in fields(cls)]
    required = sum(1 for f in fields(cls) if f.default is MISSING)
    values = item[1:]
    if not required <= len(values) <= len(names):
        count = str(len(names)) if required == len(names) else f"{required} or {len(names)}"
        raise RuntimeStreamError(f"call {index} {item!r} is malformed: {cls.NAME} takes {count} field(s) "
                                 f"({', '.join(names)}), got {len(values)}")
    for name, value in zip(names, values):
        if isinstance(value, bool) or not isinstance(value, int) or not -_LIMIT < value < _LIMIT:
            raise RuntimeStreamError(f"call {index} ({cls.NAME}): field {name} must be an integer of "
                                     f"magnitude below 2**48, got {value!r}")
        if name in _MEMBERS and value not in set(_MEMBERS[name]):
            raise RuntimeStreamError(f"call {index} ({cls.NAME}): field {name} is {value}, no "
                                     f"{_MEMBERS[name].__name__} ({', '.join(str(int(m)) for m in _MEMBERS[name])})")
    return cls(*values)
