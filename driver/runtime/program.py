"""A compiled VDLA kernel: a program of runtime calls, parameterized by its buffers.

The compiler emits one KernelProgram per kernel; the deploy runtime replays it against the
device buffers of one run (`replay`, or `ProgramRunner` which caches the assembled stream
per buffer set). Nothing here needs the compiler: a board loads the program from its JSON
form and replays it with vdla.driver alone.

Calls are records (program_calls.py: Load, Store, Gemm, Alu, Push, Pop), one per CommandQueue
method; a Load's or Store's `param` indexes `params` (the buffers are bound by position at
replay), a Gemm's or Alu's `kernel` indexes `kernels`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from vdla.hw import AluOp, Uop

from ..device import device_buffers
from .errors import RuntimeStreamError
from .program_calls import Alu, Call, Gemm, Load, Store, call_from_list
from .uop_kernel import KernelMode, LoopLevel, UopKernel

FORMAT = "vdla-kernel-program/1"


@dataclass(frozen=True)
class ProgramParam:
    name: str
    nbytes: int
    elem_bytes: int      # DRAM element size of its memory type: buffers must be aligned to it


@dataclass
class KernelProgram:
    name: str
    config_hash: str
    params: list[ProgramParam]
    kernels: list[UopKernel] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    meta: dict = field(default_factory=dict)     # what the compiler chose (schedule knobs, ...), JSON-able

    # ---- replay ---------------------------------------------------------------------------
    def replay(self, cq, buffers) -> None:
        """Issue the program's calls on CommandQueue `cq` for `buffers` (one per param, in
        order). No synchronize: the caller launches (or appends more kernels first)."""
        if cq.config.hash != self.config_hash:
            raise RuntimeStreamError(f"kernel {self.name} was compiled for hardware config {self.config_hash}, "
                                     f"but the device is {cq.config.name} ({cq.config.hash}); recompile it")
        bufs = list(buffers)
        if len(bufs) != len(self.params):
            raise RuntimeStreamError(f"kernel {self.name} takes {len(self.params)} buffers "
                                     f"({', '.join(p.name for p in self.params)}), got {len(bufs)}")
        for p, b in zip(self.params, bufs):
            if b.nbytes < p.nbytes:
                raise RuntimeStreamError(f"kernel {self.name}: buffer for {p.name} has {b.nbytes} bytes, "
                                         f"the kernel reads or writes {p.nbytes}")
        for call in self.calls:
            call.issue(cq, bufs, self.kernels)

    # ---- figures --------------------------------------------------------------------------
    def gemm_steps(self) -> int:
        """Micro-op steps of all non-reset GEMMs: the cycles a perfect pipeline would spend."""
        return sum(self.kernels[c.kernel].steps for c in self.calls
                   if isinstance(c, Gemm) and not self.kernels[c.kernel].reset)

    def count(self, op: str) -> int:
        """How many calls of name `op` ("load", "gemm", ...: a record's NAME)."""
        return sum(1 for c in self.calls if c.NAME == op)

    # ---- serialization --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "name": self.name, "config_hash": self.config_hash,
                "params": [[p.name, p.nbytes, p.elem_bytes] for p in self.params],
                "kernels": [_kernel_to_list(k) for k in self.kernels],
                "calls": [c.to_list() for c in self.calls], "meta": self.meta}

    @classmethod
    def from_dict(cls, doc: dict) -> "KernelProgram":
        if doc.get("format") != FORMAT:
            raise RuntimeStreamError(f"not a VDLA kernel program (format {doc.get('format')!r}, "
                                     f"expected {FORMAT!r})")
        prog = cls(doc["name"], doc["config_hash"], [ProgramParam(*p) for p in doc["params"]],
                   [_kernel_from_list(k) for k in doc["kernels"]], [], dict(doc.get("meta", {})))
        for i, item in enumerate(doc["calls"]):
            try:
                c = call_from_list(item, i)
            except RuntimeStreamError as exc:
                raise RuntimeStreamError(f"kernel program {prog.name}: {exc}") from None
            if isinstance(c, (Gemm, Alu)) and not 0 <= c.kernel < len(prog.kernels):
                raise RuntimeStreamError(f"kernel program {prog.name}: call {i} names micro-op kernel "
                                         f"{c.kernel} of {len(prog.kernels)}")
            if isinstance(c, (Load, Store)) and not 0 <= c.param < len(prog.params):
                raise RuntimeStreamError(f"kernel program {prog.name}: call {i} names buffer {c.param} "
                                         f"of {len(prog.params)}")
            prog.calls.append(c)
        return prog

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "KernelProgram":
        return cls.from_dict(json.loads(text))


def _kernel_to_list(k: UopKernel) -> list:
    return [k.mode.value, int(k.reset), None if k.alu_op is None else int(k.alu_op), int(k.use_imm), k.imm,
            [[lv.extent, lv.dst, lv.src, lv.wgt] for lv in k.loops],
            [[u.dst, u.src, u.wgt] for u in k.uops], k.name] + ([int(k.requant)] if k.requant or k.depthwise else []) \
        + ([1] if k.depthwise else [])


def _kernel_from_list(item: list) -> UopKernel:
    # (a kernel without the requantizer has no ninth item, one that is not DEPTHWISE no tenth:
    # artifacts written before them read the same)
    mode, reset, alu_op, use_imm, imm, loops, uops, name, *flags = item
    flags = [bool(f) for f in flags] + [False] * (2 - len(flags))
    return UopKernel(KernelMode(mode), tuple(Uop(*u) for u in uops), tuple(LoopLevel(*lv) for lv in loops),
                     bool(reset), None if alu_op is None else AluOp(alu_op), bool(use_imm), int(imm), name=name,
                     requant=flags[0], depthwise=flags[1])


class ProgramRunner:
    """Runs KernelPrograms on one device: the instruction-stream JIT with a stream cache.

    The first run of a program for a given set of buffer addresses replays its calls on a
    CommandQueue and keeps the finished stream; later runs with the same buffers only write
    nothing new and launch (micro-op kernels stay in device DRAM for the runner's life)."""

    def __init__(self, device, check_races: bool = False):
        from .command_queue import CommandQueue
        self.device = device
        self.cq = CommandQueue(device)
        self.check_races = check_races
        self._streams: dict = {}
        self.replays = 0

    def run(self, program: KernelProgram, buffers, timeout_cycles: int | None = None):
        key = (id(program), tuple(b.addr for b in buffers))
        cached = self._streams.get(key)
        if cached is None:
            program.replay(self.cq, buffers)
            stream = self.cq.finish_stream()
            if self.check_races:
                self.cq.check_races(stream)
            words = self.cq.isa.encode_stream(stream)
            buf = self.device.alloc(max(words.size, 16), align=64)
            self.device.write(buf, words)
            # (what the stream moves: counted once, not on every launch of a board's run)
            cached = self._streams[key] = (program, buf, len(stream), stream, stream_figures(stream, self.cq.config))
            self.replays += 1
        _, buf, count, stream, figures = cached
        budget = self.cq.timeout_cycles if timeout_cycles is None else timeout_cycles
        result = self.device.launch(buf.addr, count, budget)
        result.stats.update(figures)
        self.cq.last_stream, self.cq.last_result = stream, result
        return result

    def close(self) -> None:
        for _, buf, *_ in self._streams.values():
            self.device.free(buf)
        self._streams.clear()
        self.cq.close()


def stream_figures(stream, config) -> dict:
    """What a stream moves, for profiles on any device (a board reports no counters): the
    micro-op cache's misses (LOAD UOPs: a kernel's micro-ops fetched from DRAM) and hits (GEMM
    and ALU instructions whose micro-ops were already in the SRAM), and the DMA's bytes
    (loads by memory type, padding excluded, and stores)."""
    from vdla.hw import MemType, Opcode
    from vdla.hw.isa import AluInsn, GemmInsn, MemInsn
    from vdla.hw.timing import dma_bytes
    misses = uses = stored = 0
    loaded: dict[str, int] = {}
    for insn in stream:
        if isinstance(insn, (GemmInsn, AluInsn)):
            uses += 1
        elif isinstance(insn, MemInsn) and insn.x_size:
            if insn.memory_type == MemType.UOP:
                misses += insn.opcode == Opcode.LOAD
                continue
            nbytes = dma_bytes(config, insn)
            if insn.opcode == Opcode.STORE:
                stored += nbytes
            else:
                loaded[insn.memory_type.name] = loaded.get(insn.memory_type.name, 0) + nbytes
    return {"uop_cache": {"hits": uses - misses, "misses": misses},
            "dma_bytes": {"load": loaded, "store": stored}}


def run_program(device, program: KernelProgram, inputs, check_races: bool = False, runner=None):
    """Run `program` once on `device` with host arrays for every parameter but the last (the
    output). Returns (output bytes as a uint8 array, LaunchResult)."""
    import numpy as np
    if len(inputs) != len(program.params) - 1:
        raise RuntimeStreamError(f"kernel {program.name} takes {len(program.params) - 1} inputs "
                                 f"({', '.join(p.name for p in program.params[:-1])}), got {len(inputs)}")
    arrays = [np.ascontiguousarray(a) for a in inputs]
    for p, a in zip(program.params, arrays):
        if a.nbytes != p.nbytes:
            raise RuntimeStreamError(f"kernel {program.name}: {p.name} needs {p.nbytes} bytes, got an "
                                     f"array of {a.nbytes} ({a.dtype}{list(a.shape)})")
    own = runner is None
    runner = runner or ProgramRunner(device, check_races=check_races)
    try:
        with device_buffers(device, [(p.nbytes, max(64, p.elem_bytes)) for p in program.params]) as bufs:
            for buf, a in zip(bufs, arrays):
                device.write(buf, a)
            result = runner.run(program, bufs)
            out = device.read(bufs[-1], np.uint8, (program.params[-1].nbytes,))
    finally:
        if own:
            runner.close()
    return out, result
