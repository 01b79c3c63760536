"""A compiled VDLA kernel: a program of runtime calls, parameterized by its buffers.

The compiler emits one KernelProgram per kernel; the deploy runtime replays it against the
device buffers of one run (`replay`, or `ProgramRunner` which caches the assembled stream
per buffer set). Nothing here needs the compiler: a board loads the program from its JSON
form and replays it with vdla.driver alone.

Calls (one tuple each, the CommandQueue method they stand for first):
    ("load", mem_type, sram, param, elem_offset, x_size, y_size, x_stride, y_pad0, y_pad1, x_pad0, x_pad1,
     pad_min)   (pad_min: pad with the lanes' most negative value; 0 or absent: zeros)
    ("store", sram, param, elem_offset, x_size, y_size, x_stride)
    ("gemm", kernel) / ("alu", kernel)        index into `kernels`
    ("push", src_stage, dst_stage) / ("pop", src_stage, dst_stage)
`param` indexes `params` (name, bytes): the buffers are bound by position at replay.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from vdla.hw import AluOp, MemType, Uop

from ..device import device_buffers
from .errors import RuntimeStreamError
from .insn_queue import Stage
from .uop_kernel import KernelMode, LoopLevel, UopKernel

FORMAT = "vdla-kernel-program/1"
_ARITY = {"load": (12, 13), "store": (7,), "gemm": (2,), "alu": (2,), "push": (3,), "pop": (3,)}


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
    calls: list[tuple] = field(default_factory=list)
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
            op = call[0]
            if op == "load":
                _, mt, sram, p, off, xs, ys, stride, yp0, yp1, xp0, xp1, *pad_min = call
                cq.load_2d(MemType(mt), sram, bufs[p], off, xs, ys, stride, y_pad=(yp0, yp1), x_pad=(xp0, xp1),
                           pad_min=bool(pad_min and pad_min[0]))
            elif op == "store":
                _, sram, p, off, xs, ys, stride = call
                cq.store_2d(sram, bufs[p], off, xs, ys, stride)
            elif op == "gemm":
                cq.push_gemm(self.kernels[call[1]])
            elif op == "alu":
                cq.push_alu(self.kernels[call[1]])
            elif op == "push":
                cq.dep_push(Stage(call[1]), Stage(call[2]))
            else:
                cq.dep_pop(Stage(call[1]), Stage(call[2]))

    # ---- figures --------------------------------------------------------------------------
    def gemm_steps(self) -> int:
        """Micro-op steps of all non-reset GEMMs: the cycles a perfect pipeline would spend."""
        return sum(self.kernels[c[1]].steps for c in self.calls
                   if c[0] == "gemm" and not self.kernels[c[1]].reset)

    def count(self, op: str) -> int:
        return sum(1 for c in self.calls if c[0] == op)

    # ---- serialization --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "name": self.name, "config_hash": self.config_hash,
                "params": [[p.name, p.nbytes, p.elem_bytes] for p in self.params],
                "kernels": [_kernel_to_list(k) for k in self.kernels],
                "calls": [list(c) for c in self.calls], "meta": self.meta}

    @classmethod
    def from_dict(cls, doc: dict) -> "KernelProgram":
        if doc.get("format") != FORMAT:
            raise RuntimeStreamError(f"not a VDLA kernel program (format {doc.get('format')!r}, "
                                     f"expected {FORMAT!r})")
        prog = cls(doc["name"], doc["config_hash"], [ProgramParam(*p) for p in doc["params"]],
                   [_kernel_from_list(k) for k in doc["kernels"]], [], dict(doc.get("meta", {})))
        for i, c in enumerate(doc["calls"]):
            if not c or c[0] not in _ARITY or len(c) not in _ARITY[c[0]]:
                raise RuntimeStreamError(f"kernel program {prog.name}: call {i} {c!r} is malformed")
            if c[0] in ("gemm", "alu") and not 0 <= c[1] < len(prog.kernels):
                raise RuntimeStreamError(f"kernel program {prog.name}: call {i} names micro-op kernel "
                                         f"{c[1]} of {len(prog.kernels)}")
            if c[0] in ("load", "store"):
                p = c[3] if c[0] == "load" else c[2]
                if not 0 <= p < len(prog.params):
                    raise RuntimeStreamError(f"kernel program {prog.name}: call {i} names buffer {p} "
                                             f"of {len(prog.params)}")
            prog.calls.append(tuple(c))
        return prog

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "KernelProgram":
        return cls.from_dict(json.loads(text))


def _kernel_to_list(k: UopKernel) -> list:
    return [k.mode.value, int(k.reset), None if k.alu_op is None else int(k.alu_op), int(k.use_imm), k.imm,
            [[lv.extent, lv.dst, lv.src, lv.wgt] for lv in k.loops],
            [[u.dst, u.src, u.wgt] for u in k.uops], k.name]


def _kernel_from_list(item: list) -> UopKernel:
    mode, reset, alu_op, use_imm, imm, loops, uops, name = item
    return UopKernel(KernelMode(mode), tuple(Uop(*u) for u in uops), tuple(LoopLevel(*lv) for lv in loops),
                     bool(reset), None if alu_op is None else AluOp(alu_op), bool(use_imm), int(imm), name=name)


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
            cached = self._streams[key] = (program, buf, len(stream), stream)
            self.replays += 1
        _, buf, count, stream = cached
        budget = self.cq.timeout_cycles if timeout_cycles is None else timeout_cycles
        result = self.device.launch(buf.addr, count, budget)
        self.cq.last_stream, self.cq.last_result = stream, result
        return result

    def close(self) -> None:
        for _, buf, _, _ in self._streams.values():
            self.device.free(buf)
        self._streams.clear()
        self.cq.close()


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
