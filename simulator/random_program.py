"""Seeded generator of legal random VDLA programs, for simulator-vs-reference and RTL-vs-simulator runs.

A program is a DRAM image (random input data, micro-op kernels, a random-filled output area
and the instruction stream) plus the byte regions its STOREs write. Every program is legal
for the configuration it was made for, and its result does not depend on timing:

* Deadlock freedom: instructions are emitted in one order that is also a valid execution
  (the stream order). A pop is only emitted when the stream already holds an unconsumed
  push on that queue, so the push it consumes comes earlier in the stream; the earliest
  unfinished instruction can then always run, whatever the command-queue depths.
* Race freedom: the SRAMs that two modules share (INP and WGT: load writes, compute reads;
  OUT: compute writes, store reads) are tracked per element with vector clocks built from
  the token matching (the n-th pop of a queue consumes its n-th push). An access is only
  emitted if every conflicting access by the other module happens-before it; otherwise the
  generator retries other operands and finally emits a dependence-only NOP. STOREs write
  an output area that nothing reads; loads read areas that nothing writes.
* Hazards: every GEMM/ALU loop nest keeps two writes of one accumulator entry at least
  `timing.acc_raw_min_distance` micro-op steps apart, and (stricter than SPEC) an ALU
  tensor operand never reads an entry written fewer steps before.
* The stream ends with the synchronize epilogue: load and store consume the tokens compute
  left them and push one last token each, compute pops every remaining token, then FINISH.

Use (e.g. RTL against the simulator; the DRAM image is self-contained, SRAMs start zeroed):

    config = load_config("pynq")
    program = random_program(config, seed)                 # 20..120 instructions by default
    expected = program.fresh_dram()
    Simulator(config).run(expected, program.insn_addr, program.insn_count)
    actual = program.fresh_dram()
    ...run `actual` on the device under test...
    problem = describe_mismatch(program, expected, actual)  # None, or first differing byte,
                                                            # its area and the STORE that wrote it
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla.hw import require_config
from vdla.hw.alu_ops import IMM_MAX, IMM_MIN, SHR_MAX, SHR_MIN
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.depthwise import depthwise_problem, row_writes
from vdla.hw.isa import (FLAG_QUEUE, INSN_BYTES, TOKEN_QUEUES, UOP_BYTES, AluInsn, AluOp, DepthwiseInsn, FinishInsn,
                         GemmInsn, MemInsn, MemType, Module, Opcode, Uop)
from vdla.hw.requantizer import REGISTERS

LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE
# SPEC §4's flag table (vdla.hw.isa.FLAG_QUEUE) read the other way: the flag that pushes /
# pops each queue on its module, and which module pushes and which pops each queue
_PUSH_FLAG = {(m, q): f for m, table in FLAG_QUEUE.items() for f, q in table.items() if q and f.startswith("push")}
_POP_FLAG = {(m, q): f for m, table in FLAG_QUEUE.items() for f, q in table.items() if q and f.startswith("pop")}
_QUEUE_ENDS = {q: (next(m for m, p in _PUSH_FLAG if p == q), next(m for m, p in _POP_FLAG if p == q))
               for q in TOKEN_QUEUES}
_MAX_PENDING_TOKENS = 6     # unconsumed pushes per queue in stream order (queue depth is far larger)
_TRIES = 12                 # operand draws before an access falls back to a NOP


@dataclass
class Program:
    config_name: str
    seed: int
    dram: np.ndarray                 # the whole DRAM image, uint8 (copy it before running)
    insn_addr: int
    insn_count: int
    insns: list
    outputs: list[tuple[int, int]]   # (byte address, byte count) of every STORE row written
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (byte start, bytes)
    out_elem_bytes: int = 16

    def fresh_dram(self) -> np.ndarray:
        return self.dram.copy()

    def disassembly(self) -> str:
        from vdla.hw import disassemble
        return disassemble(self.insns)


class _SharedSram:
    """Per-element happens-before bookkeeping of an SRAM written by one module and read by another."""

    def __init__(self, depth: int, writer: int, reader: int):
        self.writer, self.reader = writer, reader
        self.last_write = np.zeros(depth, dtype=np.int64)  # writer's sequence number, 0 = never
        self.last_read = np.zeros(depth, dtype=np.int64)   # reader's largest sequence number

    def can_write(self, idx: np.ndarray, clock) -> bool:
        return idx.size == 0 or int(self.last_read[idx].max()) <= clock[self.reader]

    def can_read(self, idx: np.ndarray, clock) -> bool:
        return idx.size == 0 or int(self.last_write[idx].max()) <= clock[self.writer]

    def visible(self, clock, lo: int, hi: int) -> np.ndarray:
        """Indices in [lo, hi) that were written and whose last write the reader already sees."""
        seqs = self.last_write[lo:hi]
        return lo + np.flatnonzero((seqs > 0) & (seqs <= clock[self.writer]))

    def write(self, idx: np.ndarray, seq: int) -> None:
        self.last_write[idx] = seq

    def read(self, idx: np.ndarray, seq: int) -> None:
        if idx.size:
            self.last_read[idx] = np.maximum(self.last_read[idx], seq)


class _Generator:
    def __init__(self, config, seed: int, min_insns: int, max_insns: int):
        self.cfg = cfg = require_config(config)
        self.isa = cfg.isa
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.target = int(self.rng.integers(min_insns, max_insns + 1))
        self.gap = cfg.timing.acc_raw_min_distance
        self.depthwise = depthwise_problem(cfg) is None
        self.insns: list = []
        self.modules: list[int] = []
        self.seq = [0, 0, 0]
        self.clock = [np.zeros(3, dtype=np.int64) for _ in range(3)]   # per module: known completions
        self.fifo = {q: [] for q in _QUEUE_ENDS}                        # clocks of unconsumed pushes
        self.inp = _SharedSram(cfg.inp_depth, LOAD, COMPUTE)
        self.wgt = _SharedSram(cfg.wgt_depth, LOAD, COMPUTE)
        self.out = _SharedSram(cfg.out_depth, COMPUTE, STORE)
        self.uop_sram: dict[int, Uop] = {}
        self.kernels: list[tuple[int, int]] = []     # loaded uop ranges that are still intact
        self.uop_words: list[int] = []               # the uop DRAM area, in order
        # working windows: small, so that loads, kernels and stores overlap often; placed at
        # the bottom, the top or anywhere in each SRAM to exercise every address bit
        self.win = {name: self._window(depth, size) for name, depth, size in (
            ("inp", cfg.inp_depth, 32), ("wgt", cfg.wgt_depth, 8), ("acc", cfg.acc_depth, 32),
            ("uop", cfg.uop_depth, 64))}
        # DRAM element counts of the input area (one random blob every type reads in its units)
        self.in_bytes = 16 * 1024
        self.out_elems = 0
        self.outputs_rel: list[tuple[int, int]] = []  # (out element offset, element count) rows

    def _window(self, depth: int, size: int) -> tuple[int, int]:
        size = min(size, depth)
        where = self.rng.integers(3)
        base = 0 if where == 0 else depth - size if where == 1 else int(self.rng.integers(0, depth - size + 1))
        return base, size

    # ---- tokens and clocks -----------------------------------------------------------
    def _pop_queues(self, module: int, forced: tuple[str, ...] = ()) -> list[str]:
        pops = []
        for q, (_, consumer) in _QUEUE_ENDS.items():
            if consumer == module and self.fifo[q] and (q in forced or self.rng.random() < 0.45):
                pops.append(q)
        return pops

    def _begin(self, module: int, pops: list[str]) -> np.ndarray:
        """The clock an instruction of `module` runs under once it has taken `pops`."""
        clock = self.clock[module].copy()
        for q in pops:
            clock = np.maximum(clock, self.fifo[q][0])
        clock[module] = self.seq[module] + 1
        return clock

    def _emit(self, insn, module: int, pops: list[str], push_prob: float = 0.35,
              pushes: tuple[str, ...] | None = None) -> np.ndarray:
        clock = self._begin(module, pops)
        for q in pops:
            self.fifo[q].pop(0)
            setattr(insn, _POP_FLAG[(module, q)], True)
        if pushes is None:
            pushes = tuple(q for q, (producer, _) in _QUEUE_ENDS.items()
                           if producer == module and len(self.fifo[q]) < _MAX_PENDING_TOKENS
                           and self.rng.random() < push_prob)
        for q in pushes:
            self.fifo[q].append(clock)
            setattr(insn, _PUSH_FLAG[(module, q)], True)
        self.seq[module] += 1
        self.clock[module] = clock
        self.insns.append(insn)
        self.modules.append(module)
        return clock

    # ---- random fields -----------------------------------------------------------------
    def _small(self, hi: int, p_zero: float = 0.3) -> int:
        return 0 if self.rng.random() < p_zero else int(self.rng.integers(1, hi + 1))

    def _pads(self) -> tuple[int, int, int, int]:
        if self.rng.random() < 0.4:
            return 0, 0, 0, 0
        big = self.rng.random() < 0.1  # the 4-bit fields' maximum now and then
        hi = 15 if big else 2
        return tuple(int(self.rng.integers(0, hi + 1)) if self.rng.random() < 0.5 else 0 for _ in range(4))

    def _load_shape(self, window: tuple[int, int], elem_bytes: int):
        """Random (sram_base, y, x, stride, pads, sram indices) fitting the window and the input area."""
        wbase, wsize = window
        for _ in range(_TRIES):
            y_pad_0, y_pad_1, x_pad_0, x_pad_1 = self._pads()
            x = int(self.rng.integers(1, 9))
            y = int(self.rng.integers(1, 5))
            cols = x_pad_0 + x + x_pad_1
            total = (y_pad_0 + y + y_pad_1) * cols
            if total > wsize:
                continue
            sram_base = wbase + int(self.rng.integers(0, wsize - total + 1))
            r = self.rng.random()
            stride = x + int(self.rng.integers(0, 4)) if r < 0.8 else int(self.rng.integers(0, x + 1))
            span = (y - 1) * stride + x
            avail = self.in_bytes // elem_bytes
            if span > avail:
                continue
            dram_base = int(self.rng.integers(0, avail - span + 1))
            fields = dict(sram_base=sram_base, dram_base=dram_base, y_size=y, x_size=x, x_stride=stride,
                          y_pad_0=y_pad_0, y_pad_1=y_pad_1, x_pad_0=x_pad_0, x_pad_1=x_pad_1)
            return fields, np.arange(sram_base, sram_base + total)
        return None

    # ---- load module -----------------------------------------------------------------
    def load_step(self) -> None:
        pops = self._pop_queues(LOAD)
        clock = self._begin(LOAD, pops)
        if self.rng.random() < 0.1:
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=0), LOAD, pops)
            return
        mt = MemType.INP if self.rng.random() < 0.55 else MemType.WGT
        sram, window, eb = ((self.inp, self.win["inp"], self.cfg.inp_elem_bytes) if mt == MemType.INP
                            else (self.wgt, self.win["wgt"], self.cfg.wgt_elem_bytes))
        for _ in range(_TRIES):
            shape = self._load_shape(window, eb)
            if shape is not None and sram.can_write(shape[1], clock):
                fields, idx = shape
                sram.write(idx, self.seq[LOAD] + 1)
                self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, **fields), LOAD, pops)
                return
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, x_size=0), LOAD, pops)

    # ---- store module ----------------------------------------------------------------
    def store_step(self) -> None:
        pops = self._pop_queues(STORE, forced=("c2s",) if self.rng.random() < 0.5 else ())
        clock = self._begin(STORE, pops)
        if self.rng.random() < 0.12:
            self._emit(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=0), STORE, pops)
            return
        wbase, wsize = self.win["acc"]
        seen = self.out.visible(clock, wbase, wbase + wsize)
        for _ in range(_TRIES):
            if seen.size and self.rng.random() < 0.85:
                # mostly store what compute produced: a run of visible entries from a random one
                sram_base = int(self.rng.choice(seen))
                run = 1
                while run < 16 and sram_base + run in set(seen.tolist()):
                    run += 1
                y = int(self.rng.choice([d for d in (1, 2, 3, 4) if run % d == 0]))
                x = run // y
            else:
                x, y = int(self.rng.integers(1, 9)), int(self.rng.integers(1, 4))
                if x * y > wsize:
                    continue
                sram_base = wbase + int(self.rng.integers(0, wsize - x * y + 1))
            idx = np.arange(sram_base, sram_base + x * y)
            if not self.out.can_read(idx, clock):
                continue
            stride = x + int(self.rng.integers(0, 3))
            start = self.out_elems
            if self.outputs_rel and self.rng.random() < 0.1:
                start = self.outputs_rel[-1][0]  # overwrite an earlier store's rows (stores run in order)
            for row in range(y):
                self.outputs_rel.append((start + row * stride, x))
            self.out_elems = max(self.out_elems, start + (y - 1) * stride + x + int(self.rng.integers(0, 3)))
            self.out.read(idx, self.seq[STORE] + 1)
            # dram_base is relative for now; image() adds the output area's base
            self._emit(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=sram_base,
                               dram_base=start, y_size=y, x_size=x, x_stride=stride), STORE, pops)
            return
        self._emit(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=0), STORE, pops)

    # ---- compute module ----------------------------------------------------------------
    def compute_step(self) -> None:
        r = self.rng.random()
        if r < 0.05:
            pops = self._pop_queues(COMPUTE)
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, x_size=0), COMPUTE, pops)
        elif r < 0.22:
            self.acc_load_step()
        elif r < 0.6:
            self.loop_step(gemm=True)
        else:
            self.loop_step(gemm=False)

    def acc_load_step(self) -> None:
        pops = self._pop_queues(COMPUTE)
        r = self.rng.random()
        mt = MemType.ACC if r < 0.4 else MemType.ACC_8BIT if r < 0.8 else MemType.LUT
        eb = self.cfg.acc_elem_bytes if mt == MemType.ACC else self.cfg.batch * self.cfg.block
        # the lookup table is only written here (compute's own), so any part of it is fair game
        shape = self._load_shape((0, self.cfg.lut_depth) if mt == MemType.LUT else self.win["acc"], eb)
        if shape is None:
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, x_size=0), COMPUTE, pops)
            return
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, **shape[0]), COMPUTE, pops)

    def _pick(self, window: tuple[int, int], seen: np.ndarray) -> int:
        """An index in the window, mostly one whose loaded data the reader already sees."""
        if seen.size and self.rng.random() < 0.85:
            return int(self.rng.choice(seen))
        return window[0] + int(self.rng.integers(0, window[1]))

    def _random_uops(self, gemm: bool, clock, depthwise: bool = False) -> list[Uop]:
        (ab, asz), (ib, isz), (wb, wsz) = self.win["acc"], self.win["inp"], self.win["wgt"]
        seen_inp = self.inp.visible(clock, ib, ib + isz)
        seen_wgt = self.wgt.visible(clock, wb, wb + wsz)
        # a DEPTHWISE row writes from its TAPS-th micro-op on: mostly rows that write
        n = int(self.rng.integers(1, DEPTHWISE_TAPS + 6 if depthwise else 7))
        out = []
        for _ in range(n):
            dst = ab + int(self.rng.integers(0, asz))
            if gemm:
                out.append(Uop(dst, self._pick(self.win["inp"], seen_inp), self._pick(self.win["wgt"], seen_wgt)))
            else:
                out.append(Uop(dst, ab + int(self.rng.integers(0, asz)), 0))
        return out

    def _loop_fields(self, gemm: bool) -> dict:
        f = dict(iter_out=int(self.rng.integers(1, 4)), iter_in=int(self.rng.integers(1, 4)),
                 dst_factor_out=self._small(8), dst_factor_in=self._small(3),
                 src_factor_out=self._small(8), src_factor_in=self._small(3))
        if gemm:
            f.update(wgt_factor_out=self._small(2), wgt_factor_in=self._small(2))
        return f

    def _flatten(self, uops: list[Uop], f: dict, gemm: bool):
        dst, src, wgt = [], [], []
        for i in range(f["iter_out"]):
            for j in range(f["iter_in"]):
                for u in uops:    # in execution order: i, j, then the micro-ops
                    dst.append(u.dst + i * f["dst_factor_out"] + j * f["dst_factor_in"])
                    src.append(u.src + i * f["src_factor_out"] + j * f["src_factor_in"])
                    if gemm:
                        wgt.append(u.wgt + i * f["wgt_factor_out"] + j * f["wgt_factor_in"])
        return np.array(dst), np.array(src), np.array(wgt, dtype=np.int64)

    def _hazard_free(self, dst: np.ndarray, src: np.ndarray, tensor_alu: bool, writes: np.ndarray) -> bool:
        for d in range(1, self.gap):
            if np.any((dst[d:] == dst[:-d]) & writes[d:] & writes[:-d]):
                return False
            if tensor_alu and np.any(src[d:] == dst[:-d]):
                return False
        return True

    def loop_step(self, gemm: bool) -> None:
        pops = self._pop_queues(COMPUTE, forced=("l2c",) if gemm and self.rng.random() < 0.5 else ())
        clock = self._begin(COMPUTE, pops)
        cfg = self.cfg
        # ALU instructions carry the reset bit too, to show it is ignored: only GEMM's zeroes
        reset = self.rng.random() < (0.2 if gemm else 0.1)
        op = AluOp(int(self.rng.integers(0, len(AluOp))))
        use_imm = (not gemm) and self.rng.random() < 0.5
        setq = not gemm and op == AluOp.SETQ
        depthwise = gemm and self.depthwise and self.rng.random() < 0.3
        # the requantizer on OUT's write-back, with whatever its registers hold
        requant = self.rng.random() < 0.3
        for _ in range(_TRIES):
            reuse = self.kernels and not setq and self.rng.random() < 0.4
            if reuse:
                begin, end = self.kernels[int(self.rng.integers(len(self.kernels)))]
                uops = [self.uop_sram[k] for k in range(begin, end)]
            else:
                uops = self._random_uops(gemm, clock, depthwise)
            f = self._loop_fields(gemm)
            if setq:      # destinations are the requantizer's registers
                uops = [Uop(int(self.rng.integers(0, len(REGISTERS))), u.src, 0) for u in uops]
                f.update(dst_factor_out=0, dst_factor_in=0)
            dst, src, wgt = self._flatten(uops, f, gemm)
            # the steps that write (a DEPTHWISE row's first micro-ops only fill its window)
            writes = np.tile(row_writes(len(uops)) if depthwise else np.ones(len(uops), bool), dst.size // len(uops))
            if dst.max() >= cfg.acc_depth:
                continue
            reads_inp = gemm and not reset
            if reads_inp and (src.max() >= cfg.inp_depth or wgt.max() >= cfg.wgt_depth):
                continue
            if not gemm and not use_imm and src.max() >= cfg.acc_depth:
                continue
            if not setq and not self._hazard_free(dst, src, not gemm and not use_imm, writes):
                continue
            if not setq and not self.out.can_write(np.unique(dst[writes]), clock):
                continue
            if reads_inp and not (self.inp.can_read(np.unique(src), clock)
                                  and self.wgt.can_read(np.unique(wgt), clock)):
                continue
            if not reuse:
                begin = self._place_kernel(uops)
                if begin is None:
                    continue
                # the kernel load runs first on compute and carries the pops
                clock = self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=begin,
                                           dram_base=len(self.uop_words), y_size=1, x_size=len(uops),
                                           x_stride=len(uops)), COMPUTE, pops, push_prob=0.0)
                self.uop_words.extend(int(w) for w in self.isa.encode_uops(uops))
                pops = []
                end = begin + len(uops)
            seq = self.seq[COMPUTE] + 1
            if not setq:
                self.out.write(np.unique(dst[writes]), seq)
            if reads_inp:
                self.inp.read(np.unique(src), seq)
                self.wgt.read(np.unique(wgt), seq)
            common = dict(reset=reset, requant=requant, uop_begin=begin, uop_end=end, **{k: v for k, v in f.items()
                                                                       if not k.startswith("wgt")})
            if gemm:
                kind = DepthwiseInsn if depthwise else GemmInsn
                insn = kind(wgt_factor_out=f["wgt_factor_out"], wgt_factor_in=f["wgt_factor_in"], **common)
            else:
                insn = AluInsn(alu_opcode=op, use_imm=use_imm, imm=self._imm(op) if use_imm else 0, **common)
            self._emit(insn, COMPUTE, pops)
            return
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, x_size=0), COMPUTE, pops)

    def _imm(self, op: AluOp) -> int:
        if op == AluOp.SHR:  # mostly small shifts: large ones leave little in the 8-bit OUT
            if self.rng.random() < 0.3:   # any shift but SHR_MIN, which clears every bit
                return int(self.rng.integers(SHR_MIN + 1, SHR_MAX + 1))
            return int(self.rng.integers(-7, 8))
        if self.rng.random() < 0.5:
            return int(self.rng.integers(-8, 9))
        return int(self.rng.integers(IMM_MIN, IMM_MAX + 1))

    def _place_kernel(self, uops: list[Uop]) -> int | None:
        base, size = self.win["uop"]
        if len(uops) > size:
            return None
        begin = base + int(self.rng.integers(0, size - len(uops) + 1))
        end = begin + len(uops)
        for k, u in enumerate(uops):
            self.uop_sram[begin + k] = u
        # kernels overlapping the new one are no longer intact
        self.kernels = [(b, e) for b, e in self.kernels if e <= begin or b >= end] + [(begin, end)]
        return begin

    # ---- whole program -----------------------------------------------------------------
    def prologue(self) -> None:
        """Fill the working windows with DRAM data (as real programs start), so that the random
        body computes on non-zero values; compute takes the load's token before its first step."""
        loads = [(MemType.INP, self.inp, self.win["inp"], self.cfg.inp_elem_bytes),
                 (MemType.WGT, self.wgt, self.win["wgt"], self.cfg.wgt_elem_bytes)]
        for k, (mt, sram, (base, size), eb) in enumerate(loads):
            rows = 1 + int(self.rng.integers(0, 2)) * (size % 2 == 0)
            x = size // rows
            dram_base = int(self.rng.integers(0, self.in_bytes // eb - size + 1))
            sram.write(np.arange(base, base + size), self.seq[LOAD] + 1)
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, sram_base=base, dram_base=dram_base,
                               y_size=rows, x_size=x, x_stride=x), LOAD, [],
                       pushes=("l2c",) if k == len(loads) - 1 else ())
        base, size = self.win["acc"]
        mt = MemType.ACC if self.rng.random() < 0.5 else MemType.ACC_8BIT
        eb = self.cfg.acc_elem_bytes if mt == MemType.ACC else self.cfg.batch * self.cfg.block
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=mt, sram_base=base,
                           dram_base=int(self.rng.integers(0, self.in_bytes // eb - size + 1)),
                           y_size=1, x_size=size, x_stride=size), COMPUTE, ["l2c"], pushes=())
        # the whole lookup table, so that no ALU LUT reads entries the launch never wrote
        lut_eb, depth = self.cfg.batch * self.cfg.block, self.cfg.lut_depth
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.LUT, sram_base=0,
                           dram_base=int(self.rng.integers(0, self.in_bytes // lut_eb - depth + 1)),
                           y_size=1, x_size=depth, x_stride=depth), COMPUTE, [], pushes=())

    def body(self) -> None:
        weights = np.array([0.33, 0.47, 0.2])
        while len(self.insns) < self.target:
            module = int(self.rng.choice(3, p=weights))
            (self.load_step, self.compute_step, self.store_step)[module]()

    def epilogue(self) -> None:
        """synchronize: load/store drain compute's tokens and signal once more; compute takes all."""
        while self.fifo["c2l"]:
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=0), LOAD, ["c2l"], pushes=())
        self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.WGT, x_size=0), LOAD, [], pushes=("l2c",))
        while self.fifo["c2s"]:
            self._emit(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=0), STORE, ["c2s"], pushes=())
        self._emit(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=0), STORE, [], pushes=("s2c",))
        while len(self.fifo["l2c"]) + len(self.fifo["s2c"]) > 2:
            pops = [q for q in ("l2c", "s2c") if len(self.fifo[q]) > 1]
            self._emit(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, x_size=0), COMPUTE, pops, pushes=())
        self._emit(FinishInsn(), COMPUTE, ["l2c", "s2c"], pushes=())
        assert not any(self.fifo.values())

    def image(self) -> Program:
        """Lay out DRAM: [input data | micro-ops | output area | instructions], each 256-B aligned."""
        cfg = self.cfg
        out_eb = cfg.out_elem_bytes

        def up(n: int) -> int:
            return -(-n // 256) * 256

        in_at = 0
        uop_at = up(in_at + self.in_bytes)
        out_at = up(uop_at + UOP_BYTES * len(self.uop_words) + UOP_BYTES)
        insn_at = up(out_at + out_eb * self.out_elems + out_eb)
        size = up(insn_at + INSN_BYTES * len(self.insns) + INSN_BYTES)
        for insn in self.insns:
            if isinstance(insn, MemInsn) and insn.x_size:
                if insn.opcode == Opcode.STORE:
                    insn.dram_base += out_at // out_eb
                elif insn.memory_type == MemType.UOP:
                    insn.dram_base += uop_at // UOP_BYTES
        dram = self.rng.integers(0, 256, size, dtype=np.uint8)
        if self.uop_words:
            dram[uop_at:uop_at + UOP_BYTES * len(self.uop_words)] = np.array(self.uop_words, dtype="<u4").view(np.uint8)
        dram[insn_at:insn_at + INSN_BYTES * len(self.insns)] = self.isa.encode_stream(self.insns)
        outputs = [(out_at + start * out_eb, n * out_eb) for start, n in self.outputs_rel]
        regions = {"input": (in_at, self.in_bytes), "uops": (uop_at, UOP_BYTES * len(self.uop_words)),
                   "output": (out_at, out_eb * self.out_elems), "insns": (insn_at, INSN_BYTES * len(self.insns))}
        return Program(cfg.name, self.seed, dram, insn_at, len(self.insns), self.insns, outputs, regions,
                       out_eb)


def random_program(config, seed: int = 0, min_insns: int = 20, max_insns: int = 120) -> Program:
    """A legal, deadlock-free, race-free random program for `config` (see the module docstring)."""
    gen = _Generator(config, seed, min_insns, max_insns)
    if gen.rng.random() < 0.9:
        gen.prologue()
    gen.body()
    gen.epilogue()
    return gen.image()



def last_store_writing(program: Program, byte_addr: int) -> int | None:
    """Index of the last STORE in stream order that writes DRAM byte `byte_addr` (None if none does)."""
    found = None
    elem = program.out_elem_bytes
    for k, insn in enumerate(program.insns):
        if isinstance(insn, MemInsn) and insn.opcode == Opcode.STORE and insn.x_size:
            for y in range(insn.y_size):
                lo = (insn.dram_base + y * insn.x_stride) * elem
                if lo <= byte_addr < lo + insn.x_size * elem:
                    found = k
    return found


def describe_mismatch(program: Program, expected: np.ndarray, actual: np.ndarray) -> str | None:
    """None if the DRAM images agree, else where they first differ and which instruction wrote there."""
    diff = np.flatnonzero(expected != actual)
    if diff.size == 0:
        return None
    first = int(diff[0])
    region = next((name for name, (lo, n) in program.regions.items() if lo <= first < lo + n), "unused")
    writer = last_store_writing(program, first)
    from vdla.hw import format_insn
    what = (f"written by instruction {writer}: {format_insn(program.insns[writer])}" if writer is not None
            else "no STORE writes there")
    return (f"program seed {program.seed} ({program.config_name}, {program.insn_count} instructions): "
            f"{diff.size} DRAM bytes differ; first at byte 0x{first:x} in the {region} area, {what}; "
            f"expected {expected[first:first + 16].tobytes().hex()} got {actual[first:first + 16].tobytes().hex()}")
