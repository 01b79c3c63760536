"""Micro-op kernels: a list of micro-ops inside up to two affine loop levels (SPEC §3, §6).

A kernel is what one GEMM or ALU instruction executes: for i < loop0.extent,
j < loop1.extent and every micro-op u, the indices are u.dst + i*loop0.dst + j*loop1.dst
(likewise src and wgt). A GEMM kernel with `depthwise` is a DEPTHWISE instruction
(vdla.hw.depthwise): its micro-ops are one row of a sliding window, whose first TAPS - 1
write nothing. Kernels are immutable values; two equal kernels share one place in
the micro-op SRAM and one copy in device DRAM.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

import numpy as np

from vdla.hw import AluOp, Uop
from vdla.hw.alu_ops import immediate_error
from vdla.hw.depthwise import depthwise_problem, row_writes
from vdla.hw.requantizer import REGISTERS

from .errors import KernelError


class KernelMode(Enum):
    GEMM = "gemm"
    ALU = "alu"


@dataclass(frozen=True)
class LoopLevel:
    """One affine loop level: extent and the index step of dst, src and wgt per iteration."""
    extent: int
    dst: int = 0
    src: int = 0
    wgt: int = 0


@dataclass(frozen=True, eq=False)
class UopKernel:
    mode: KernelMode
    uops: tuple[Uop, ...]
    loops: tuple[LoopLevel, ...] = ()
    reset: bool = False
    alu_op: AluOp | None = None
    use_imm: bool = False
    imm: int = 0
    name: str = field(default="", compare=False)
    # OUT written through the requantizer (vdla.hw.requantizer) instead of the low 8 bits
    requant: bool = False
    # a DEPTHWISE instruction (vdla.hw.depthwise): the micro-ops are a sliding window's row
    depthwise: bool = False

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def gemm(cls, uops, loops=(), reset: bool = False, name: str = "", requant: bool = False,
             depthwise: bool = False) -> "UopKernel":
        """GEMM kernel (reset=True: zero the destination accumulators instead of multiply-add;
        requant=True: OUT through the requantizer; depthwise=True: a DEPTHWISE instruction)."""
        return cls(KernelMode.GEMM, _uops(uops), tuple(loops), reset, name=name, requant=requant,
                   depthwise=depthwise)

    @classmethod
    def alu(cls, op: AluOp, uops, loops=(), imm: int | None = None, name: str = "",
            requant: bool = False) -> "UopKernel":
        """ALU kernel: ACC[dst] = op(ACC[dst], imm if given else ACC[src]); SETQ: requantizer
        register dst <- the operand (vdla.hw.requantizer)."""
        return cls(KernelMode.ALU, _uops(uops), tuple(loops), False, AluOp(op),
                   imm is not None, int(imm or 0), name=name, requant=requant)

    @property
    def sets_requantizer(self) -> bool:
        """An ALU SETQ: its destinations are the requantizer's registers, not accumulators."""
        return self.alu_op == AluOp.SETQ

    # ---- identity: equal kernels are interchangeable --------------------------------------
    @cached_property
    def signature(self) -> tuple:
        return (self.mode, self.reset, self.alu_op, self.use_imm, self.imm, self.loops,
                tuple((u.dst, u.src, u.wgt) for u in self.uops), self.requant, self.depthwise)

    def __eq__(self, other) -> bool:
        return isinstance(other, UopKernel) and self.signature == other.signature

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(self.signature)

    def describe(self) -> str:
        if self.mode is KernelMode.GEMM:
            kind = "DEPTHWISE" if self.depthwise else "GEMM"
        else:
            kind = f"ALU {self.alu_op.name}"
        return f"{kind} kernel {self.name or '(unnamed)'} ({len(self.uops)} micro-ops, {len(self.loops)} loops)"

    # ---- what the hardware will do ----------------------------------------------------------
    def padded_loops(self) -> tuple[LoopLevel, LoopLevel]:
        """(outer, inner) as encoded in the instruction; missing levels run once."""
        loops = self.loops + (LoopLevel(1),) * (2 - len(self.loops))
        return loops[0], loops[1]

    def flat_indices(self, which: str) -> np.ndarray:
        """The `which` (dst/src/wgt) index of every micro-op step, in execution order."""
        outer, inner = self.padded_loops()
        base = np.array([getattr(u, which) for u in self.uops], dtype=np.int64)
        i = np.arange(outer.extent, dtype=np.int64)[:, None, None] * getattr(outer, which)
        j = np.arange(inner.extent, dtype=np.int64)[None, :, None] * getattr(inner, which)
        return (base[None, None, :] + i + j).ravel()

    @property
    def steps(self) -> int:
        outer, inner = self.padded_loops()
        return outer.extent * inner.extent * len(self.uops)

    def validate(self, config) -> None:
        """Raise KernelError unless the kernel encodes and runs correctly on `config`."""
        what = self.describe()
        if not self.uops:
            raise KernelError(f"{what}: a kernel needs at least one micro-op")
        if len(self.loops) > 2:
            raise KernelError(f"{what}: {len(self.loops)} loop levels; the hardware has two")
        if len(self.uops) > config.uop_depth:
            raise KernelError(f"{what}: {len(self.uops)} micro-ops do not fit the micro-op SRAM "
                              f"({config.uop_depth} entries); split the kernel or use a loop level")
        isa = config.isa
        layout = {f.name: f for f in (isa.gemm if self.mode is KernelMode.GEMM else isa.alu)}
        for level, loop in zip(("outer", "inner"), self.padded_loops()):
            lo, hi = layout["iter_out"].range()
            if not 1 <= loop.extent <= hi:
                raise KernelError(f"{what}: {level} loop extent {loop.extent} is outside 1..{hi}")
            for name in ("dst", "src", "wgt"):
                key = f"{name}_factor_{'out' if level == 'outer' else 'in'}"
                step = getattr(loop, name)
                if key not in layout:
                    if step:
                        raise KernelError(f"{what}: an ALU loop has no {name} factor (got {step})")
                    continue
                f = layout[key]
                if not 0 <= step <= f.mask:
                    raise KernelError(f"{what}: {level} loop {name} step {step} does not fit field "
                                      f"{key} (0..{f.mask})")
        if self.depthwise and (problem := depthwise_problem(config)):
            raise KernelError(f"{what}: {problem}")
        if self.use_imm and (problem := immediate_error(self.alu_op, self.imm)):
            raise KernelError(f"{what}: {problem}")
        try:
            isa.encode_uops(self.uops)
        except ValueError as exc:
            raise KernelError(f"{what}: {exc}") from None
        self._check_ranges(config, what)
        if not self.reset and not self.sets_requantizer:
            self._check_hazard(config.timing.acc_raw_min_distance, what)

    def _check_ranges(self, config, what: str) -> None:
        if self.mode is KernelMode.GEMM:
            checks = [("dst", config.acc_depth, "accumulator")]
            if not self.reset:
                checks += [("src", config.inp_depth, "input"), ("wgt", config.wgt_depth, "weight")]
        else:
            checks = [("dst", len(REGISTERS), "requantizer register") if self.sets_requantizer
                      else ("dst", config.acc_depth, "accumulator")]
            if not self.use_imm:
                checks.append(("src", config.acc_depth, "accumulator"))
        outer, inner = self.padded_loops()
        for name, depth, sram in checks:
            top = (max(getattr(u, name) for u in self.uops)
                   + (outer.extent - 1) * getattr(outer, name) + (inner.extent - 1) * getattr(inner, name))
            if top >= depth:
                raise KernelError(f"{what}: micro-op {name} index reaches {top}, beyond the {sram} "
                                  f"{'file size' if sram.endswith('register') else 'SRAM depth'} {depth}")

    def _check_hazard(self, min_distance: int, what: str) -> None:
        """The accumulator is read-modify-written without forwarding: the same entry may not be
        updated by two micro-op steps fewer than `min_distance` apart (SPEC §3)."""
        if min_distance <= 1:
            return
        dst = self.flat_indices("dst")
        per_pass = len(self.uops)
        writes = np.tile(row_writes(per_pass) if self.depthwise else np.ones(per_pass, bool), dst.size // per_pass)
        for d in range(1, min_distance):
            clash = np.flatnonzero((dst[d:] == dst[:-d]) & writes[d:] & writes[:-d])
            if clash.size:
                p = int(clash[0])
                raise KernelError(
                    f"{what}: accumulator entry {int(dst[p])} is updated at micro-op steps {p} "
                    f"(uop {p % per_pass}) and {p + d} (uop {(p + d) % per_pass}), {d} apart; the hardware "
                    f"needs at least {min_distance} (timing.acc_raw_min_distance) because its pipeline "
                    "does not forward. Reorder the micro-ops or loops so that consecutive steps update "
                    "different entries")


def _uops(items) -> tuple[Uop, ...]:
    out = []
    for u in items:
        out.append(u if isinstance(u, Uop) else Uop(*u))
    return tuple(out)
