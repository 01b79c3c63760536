"""An independent, deliberately slow reference interpreter of VDLA instruction streams.

Written straight from SPEC.md §3 and §4, sharing no code with the fast simulator (only the
decoder and config of vdla.hw), so that it can serve as the fast simulator's oracle. It has
no notion of time: every micro-op, padding element and lane is processed one at a time, in
the order the SPEC's loops are written, and the three modules are interleaved by a
round-robin scheduler that advances any module whose head instruction can take its tokens.

It restates on purpose what everything else reads from vdla.hw: the ALU lane operations and
the SHR amount (`_alu_op`, against vdla.hw.alu_ops), SPEC §4's flag-to-queue table
(`_QUEUE_OF_FLAG`, against vdla.hw.isa.FLAG_QUEUE) and the 16-byte instruction size. An
oracle that read the statement it checks would agree with any mistake in it; written a
second time from the SPEC, a mistake in either shows up as a disagreement (tests compare
the two: tests/hw_unit/test_alu_ops.py, test_stated_once.py, tests/simulator/test_reference.py).

Choices where SPEC.md is silent or loose (also stated in the closing note of issue 3):
- LOAD UOP reads x_size micro-ops from one DRAM row; y_size, x_stride and the pad fields
  are ignored ("padding is honoured for every memory type" is read as every *data* type:
  INP, WGT, ACC, ACC_8BIT, LUT).
- LUT (the ALU's lookup table, a VDLA extension): LOAD LUT writes 256 int8 entries, element e
  lane k being entry e * lanes + k; ALU LUT reads entry (x saturated to -128..127) + 128 and
  reads its operand without using it (so a tensor operand is still range-checked).
- STORE ignores the pad fields (SPEC: "No padding"); rows are written in order y = 0, 1, ...
- LOAD with memory_type OUT and STORE with a memory_type other than OUT are errors even
  when x_size = 0 (such an instruction cannot be routed to a module).
- uop_begin > uop_end is an error (not an empty loop).
- The accumulator hazard rule checks writes only (as SPEC words it): two non-reset
  micro-ops writing the same ACC entry fewer than `timing.acc_raw_min_distance` steps apart
  in the flattened loop order. A GEMM reset writes without reading, so it is exempt.
- The requantizer (a VDLA extension): ALU SETQ sets register d (0 bias, 1 multiplier,
  2 control) of every lane to the operand and writes neither ACC nor OUT, skipping the hazard
  rule (it writes no accumulator); the requant bit of GEMM/ALU makes each of its writes set
  OUT to the requantized value (_requantize) instead of the low 8 bits.
- ALU ignores the reset bit and always computes (VTA's rule, issue 11); only GEMM resets.
- FLUSH (opcode 7, a VDLA extension): OUT gets ACC[d] + the operand (the low 8 bits, or the
  requantizer's value with the requant bit) and ACC[d] becomes 0, step by step, so a later
  step of the same instruction reads 0 from an entry an earlier one flushed.
- DEPTHWISE (opcode 5, a VDLA extension, vdla.hw.depthwise): a micro-op's window is its
  own input and the inputs of the TAPS - 1 micro-ops before it in the same (i, j) row; the
  first TAPS - 1 of a row only fill it (no write, no hazard) and the others add
  sum_t window_t[b][o] * WGT[w][o][t] (with reset: write 0).
- Every load and store instruction must happen-before FINISH through tokens (checked with
  vector clocks carried by the tokens, so the verdict does not depend on timing); a token
  left in any queue at FINISH is an error. A queue holding more than
  `timing.token_queue_depth` tokens is an error.
"""
from __future__ import annotations

import numpy as np

from vdla.hw import require_config
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.errors import RunError
from vdla.hw.isa import AluInsn, DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode


class ReferenceModelError(RunError):
    """The stream cannot be executed as written; `insn_index` names the instruction."""

    def __init__(self, message: str, insn_index: int | None = None):
        super().__init__(message if insn_index is None else f"instruction {insn_index}: {message}")
        self.insn_index = insn_index


class ReferenceStreamError(ReferenceModelError):
    """Malformed stream: no FINISH, something after FINISH, an unroutable memory type."""


class ReferenceTokenError(ReferenceModelError):
    """A flag the module has no queue for, a token left at FINISH, a queue overflow."""


class ReferenceDeadlock(ReferenceModelError):
    """No module can advance and FINISH has not run."""


class ReferenceMemoryError(ReferenceModelError):
    """An SRAM index or a DRAM byte outside its memory."""


class ReferenceHazardError(ReferenceModelError):
    """Two writes of one accumulator entry closer than the pipeline allows."""


# SPEC §4 table: which queue each dependence flag means, per module (None: flag must be 0).
_QUEUE_OF_FLAG = {
    "load": {"pop_prev": None, "pop_next": "c2l", "push_prev": None, "push_next": "l2c"},
    "compute": {"pop_prev": "l2c", "pop_next": "s2c", "push_prev": "c2l", "push_next": "c2s"},
    "store": {"pop_prev": "c2s", "pop_next": None, "push_prev": "s2c", "push_next": None},
}
_MODULES = ("load", "compute", "store")


def _wrap32(value: int) -> int:
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _low8(value: int) -> int:
    return ((value + 128) & 0xFF) - 128


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _requantize(x: int, bias: int, mul: int, ctrl: int, entries) -> int:
    """The OUT write-back requantizer on one lane, on Python ints: (x + bias) times the
    multiplier's low 18 bits (signed), plus half of 2^shift, shifted right by the shift in
    CTRL[5:0] (a floor), plus the zero point CTRL[15:8], clipped to CTRL[23:16]..CTRL[31:24];
    with CTRL[6] set, the lookup table's entry (of the 256 `entries`) for that value."""
    shift = ctrl & 63
    value = (x + bias) * _signed(mul, 18)
    if shift:
        value = (value + (1 << (shift - 1))) >> shift
    lo, hi = _signed(ctrl >> 16, 8), _signed(ctrl >> 24, 8)
    value = min(max(value + _signed(ctrl >> 8, 8), lo), hi)
    return int(entries[value + 128]) if ctrl >> 6 & 1 else value


def _alu_op(op: int, a: int, b: int) -> int:
    """One lane of the tensor ALU on Python ints (a is an int32 value, b an int32 or imm)."""
    if op == 0:  # MIN
        return min(a, b)
    if op == 1:  # MAX
        return max(a, b)
    if op in (2, 7):  # ADD; FLUSH writes the sum back (and leaves the accumulator 0: alu())
        return _wrap32(a + b)
    if op == 4:  # MUL
        return _wrap32(a * b)
    if op == 3:  # SHR: low 6 bits of the operand as a signed amount
        amount = b & 63
        if amount >= 32:
            amount -= 64
        if amount >= 0:
            return a >> amount
        return _wrap32(a << -amount)
    raise ReferenceStreamError(f"unknown ALU opcode {op}")


class ReferenceMachine:
    """On-chip state plus the DRAM image; `writer[b]` is the instruction that last wrote DRAM byte b."""

    def __init__(self, config, dram: np.ndarray):
        cfg = self.config = require_config(config)
        self.dram = dram
        self.batch, self.block = cfg.batch, cfg.block
        lanes = (self.batch, self.block)
        self.inp = np.zeros((cfg.inp_depth, *lanes), dtype=np.int64)
        self.wgt = np.zeros((cfg.wgt_depth, self.block, self.block), dtype=np.int64)
        self.acc = np.zeros((cfg.acc_depth, *lanes), dtype=np.int64)
        self.out = np.zeros((cfg.acc_depth, *lanes), dtype=np.int64)
        self.uop = [(0, 0, 0)] * cfg.uop_depth
        self.table = np.zeros((256 // (self.batch * self.block), self.batch, self.block), dtype=np.int64)
        self.requant = np.zeros((3, self.batch, self.block), dtype=np.int64)   # bias, mul, ctrl per lane
        self.writer = np.full(dram.size, -1, dtype=np.int64)
        nlanes = self.batch * self.block
        # DRAM bytes of one element, per memory type (SPEC §1, ACC_8BIT from §3)
        self.dram_elem = {MemType.UOP: 4, MemType.INP: nlanes * cfg.inp_bits // 8,
                          MemType.WGT: self.block * self.block * cfg.wgt_bits // 8,
                          MemType.ACC: nlanes * cfg.acc_bits // 8, MemType.ACC_8BIT: nlanes,
                          MemType.OUT: nlanes * cfg.inp_bits // 8, MemType.LUT: nlanes}

    # ---- helpers ---------------------------------------------------------------------
    def _dram_bytes(self, byte_addr: int, count: int, index: int, what: str) -> np.ndarray:
        if byte_addr + count > self.dram.size:
            raise ReferenceMemoryError(f"{what} touches DRAM bytes [{byte_addr}, {byte_addr + count}) "
                                       f"beyond the DRAM size {self.dram.size}", index)
        return self.dram[byte_addr:byte_addr + count]

    @staticmethod
    def _sram_index(value: int, depth: int, index: int, what: str) -> int:
        if not 0 <= value < depth:
            raise ReferenceMemoryError(f"{what} index {value} is outside the buffer (depth {depth})", index)
        return value

    # ---- LOAD ------------------------------------------------------------------------
    def load(self, insn: MemInsn, index: int) -> None:
        mt = insn.memory_type
        if mt == MemType.UOP:
            self._load_uops(insn, index)
            return
        sram, depth = {MemType.INP: (self.inp, self.config.inp_depth),
                       MemType.WGT: (self.wgt, self.config.wgt_depth),
                       MemType.ACC: (self.acc, self.config.acc_depth),
                       MemType.ACC_8BIT: (self.acc, self.config.acc_depth),
                       MemType.LUT: (self.table, self.table.shape[0])}[mt]
        elem = self.dram_elem[mt]
        cols = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        what = f"LOAD {mt.name} (sram_base {insn.sram_base})"
        for r in range(rows):
            for c in range(cols):
                s = self._sram_index(insn.sram_base + r * cols + c, depth, index, what)
                y, x = r - insn.y_pad_0, c - insn.x_pad_0
                if 0 <= y < insn.y_size and 0 <= x < insn.x_size:
                    addr = (insn.dram_base + y * insn.x_stride + x) * elem
                    raw = self._dram_bytes(addr, elem, index, f"LOAD {mt.name} row {y} element {x}")
                    sram[s] = self._decode_elem(mt, raw).reshape(sram.shape[1:])
                else:   # padding: zeros, or with pad_min the lanes' most negative value
                    sram[s] = 0 if not insn.pad_min else (-(1 << 31) if mt == MemType.ACC else -128)

    @staticmethod
    def _decode_elem(mt: MemType, raw: np.ndarray) -> np.ndarray:
        if mt == MemType.ACC:
            return raw.view("<i4").astype(np.int64)
        return raw.view(np.int8).astype(np.int64)  # INP, WGT, ACC_8BIT, LUT: int8 lanes, sign-extended

    def _load_uops(self, insn: MemInsn, index: int) -> None:
        isa = self.config.isa
        for k in range(insn.x_size):
            s = self._sram_index(insn.sram_base + k, self.config.uop_depth, index, "LOAD UOP")
            raw = self._dram_bytes((insn.dram_base + k) * 4, 4, index, f"LOAD UOP micro-op {k}")
            u = isa.decode_uop(int.from_bytes(raw.tobytes(), "little"))
            self.uop[s] = (u.dst, u.src, u.wgt)

    # ---- STORE -----------------------------------------------------------------------
    def store(self, insn: MemInsn, index: int) -> None:
        elem = self.dram_elem[MemType.OUT]
        for y in range(insn.y_size):
            for x in range(insn.x_size):
                s = self._sram_index(insn.sram_base + y * insn.x_size + x, self.config.acc_depth,
                                     index, f"STORE OUT (sram_base {insn.sram_base})")
                addr = (insn.dram_base + y * insn.x_stride + x) * elem
                dst = self._dram_bytes(addr, elem, index, f"STORE OUT row {y} element {x}")
                dst[:] = (self.out[s].ravel() & 0xFF).astype(np.uint8)
                self.writer[addr:addr + elem] = index

    # ---- GEMM / ALU ------------------------------------------------------------------
    def _loop(self, insn, index: int):
        """(step, dst, src, wgt) per micro-op execution, in SPEC order: i, then j, then u."""
        if insn.uop_begin > insn.uop_end or insn.uop_end > self.config.uop_depth:
            raise ReferenceMemoryError(f"micro-op range [{insn.uop_begin}, {insn.uop_end}) is not a range "
                                       f"inside the micro-op buffer (depth {self.config.uop_depth})", index)
        wgt_out = getattr(insn, "wgt_factor_out", 0)
        wgt_in = getattr(insn, "wgt_factor_in", 0)
        step = 0
        for i in range(insn.iter_out):
            for j in range(insn.iter_in):
                for u in range(insn.uop_begin, insn.uop_end):
                    d, s, w = self.uop[u]
                    yield (step, d + i * insn.dst_factor_out + j * insn.dst_factor_in,
                           s + i * insn.src_factor_out + j * insn.src_factor_in,
                           w + i * wgt_out + j * wgt_in)
                    step += 1

    def _write_acc(self, a: int, value: np.ndarray, requant: bool = False) -> None:
        self.acc[a] = value
        if requant:
            bias, mul, ctrl = self.requant
            entries = self.table.ravel()
            self.out[a] = [[_requantize(int(v), int(bias[b, k]), int(mul[b, k]), int(ctrl[b, k]), entries)
                            for k, v in enumerate(row)] for b, row in enumerate(value)]
        else:
            self.out[a] = [[_low8(int(v)) for v in row] for row in value]

    def _check_hazard(self, last_write: dict, a: int, step: int, index: int, what: str) -> None:
        gap = self.config.timing.acc_raw_min_distance
        prev = last_write.get(a)
        if prev is not None and step - prev < gap:
            raise ReferenceHazardError(f"{what} writes accumulator entry {a} at micro-op steps {prev} and "
                                       f"{step}; the pipeline needs at least {gap} steps between them", index)
        last_write[a] = step

    def gemm(self, insn: GemmInsn, index: int) -> None:
        cfg = self.config
        last_write: dict[int, int] = {}
        for step, a, x, w in self._loop(insn, index):
            self._sram_index(a, cfg.acc_depth, index, "GEMM accumulator (micro-op dst)")
            if insn.reset:
                self._write_acc(a, np.zeros_like(self.acc[a]), insn.requant)
                continue
            self._sram_index(x, cfg.inp_depth, index, "GEMM input (micro-op src)")
            self._sram_index(w, cfg.wgt_depth, index, "GEMM weight (micro-op wgt)")
            self._check_hazard(last_write, a, step, index, "GEMM")
            total = self.acc[a].copy()
            for b in range(self.batch):
                for o in range(self.block):
                    total[b, o] += int(np.dot(self.inp[x][b], self.wgt[w][o]))
            self._write_acc(a, np.array([[_wrap32(int(v)) for v in row] for row in total], dtype=np.int64),
                            insn.requant)

    def depthwise(self, insn: DepthwiseInsn, index: int) -> None:
        """vdla.hw.depthwise: each micro-op's window is its row's last TAPS inputs; the first
        TAPS - 1 micro-ops of a row write nothing."""
        cfg = self.config
        last_write: dict[int, int] = {}
        row = max(insn.uop_end - insn.uop_begin, 1)
        window: list[int] = []
        for step, a, x, w in self._loop(insn, index):
            self._sram_index(a, cfg.acc_depth, index, "DEPTHWISE accumulator (micro-op dst)")
            if step % row == 0:
                window = []
            if not insn.reset:
                self._sram_index(x, cfg.inp_depth, index, "DEPTHWISE input (micro-op src)")
                self._sram_index(w, cfg.wgt_depth, index, "DEPTHWISE weight (micro-op wgt)")
                window = (window + [x])[-DEPTHWISE_TAPS:]
            if step % row < DEPTHWISE_TAPS - 1:
                continue
            self._check_hazard(last_write, a, step, index, "DEPTHWISE")
            if insn.reset:
                self._write_acc(a, np.zeros_like(self.acc[a]), insn.requant)
                continue
            total = self.acc[a].copy()
            for b in range(self.batch):
                for o in range(self.block):
                    total[b, o] += sum(int(self.inp[v][b][o]) * int(self.wgt[w][o][t]) for t, v in enumerate(window))
            self._write_acc(a, np.array([[_wrap32(int(v)) for v in r] for r in total], dtype=np.int64),
                            insn.requant)

    def alu(self, insn: AluInsn, index: int) -> None:
        cfg = self.config
        last_write: dict[int, int] = {}
        for step, d, s, _ in self._loop(insn, index):   # insn.reset is ignored on ALU
            if insn.alu_opcode == 6:    # SETQ: requantizer register d (bias, mul, ctrl) <- the operand
                self._sram_index(d, 3, index, "ALU SETQ register (micro-op dst)")
                if not insn.use_imm:
                    self._sram_index(s, cfg.acc_depth, index, "ALU source (micro-op src)")
                self.requant[d] = np.full_like(self.acc[0], insn.imm) if insn.use_imm else self.acc[s].copy()
                continue
            self._sram_index(d, cfg.acc_depth, index, "ALU destination (micro-op dst)")
            if not insn.use_imm:
                self._sram_index(s, cfg.acc_depth, index, "ALU source (micro-op src)")
            self._check_hazard(last_write, d, step, index, f"ALU {insn.alu_opcode.name}")
            lhs = self.acc[d]
            rhs = np.full_like(lhs, insn.imm) if insn.use_imm else self.acc[s].copy()
            if insn.alu_opcode == 5:    # LUT: the operand is read above and not used
                entries = self.table.ravel()
                self._write_acc(d, np.array([[entries[min(max(int(v), -128), 127) + 128] for v in row]
                                             for row in lhs], dtype=np.int64), insn.requant)
                continue
            result = np.array([[_alu_op(int(insn.alu_opcode), int(p), int(q)) for p, q in zip(pr, qr)]
                               for pr, qr in zip(lhs, rhs)], dtype=np.int64)
            self._write_acc(d, result, insn.requant)
            if insn.alu_opcode == 7:    # FLUSH: the sum went to OUT, the accumulator holds 0
                self.acc[d] = 0

    # ---- dispatch --------------------------------------------------------------------
    def execute(self, insn, index: int) -> None:
        if isinstance(insn, MemInsn):
            if insn.x_size == 0:
                return  # dependence-only NOP
            if insn.opcode == Opcode.STORE:
                self.store(insn, index)
            else:
                self.load(insn, index)
        elif isinstance(insn, DepthwiseInsn):
            self.depthwise(insn, index)
        elif isinstance(insn, GemmInsn):
            self.gemm(insn, index)
        elif isinstance(insn, AluInsn):
            self.alu(insn, index)


def module_of(insn, index: int) -> str:
    """SPEC §4 routing."""
    if isinstance(insn, MemInsn):
        if insn.opcode == Opcode.STORE:
            if insn.memory_type != MemType.OUT:
                raise ReferenceStreamError(f"STORE must use memory_type OUT, got {insn.memory_type.name}", index)
            return "store"
        if insn.memory_type == MemType.OUT:
            raise ReferenceStreamError("LOAD cannot use memory_type OUT", index)
        return "load" if insn.memory_type in (MemType.INP, MemType.WGT) else "compute"
    return "compute"


def _flags(insn, module: str, index: int) -> tuple[list[str], list[str]]:
    pops, pushes = [], []
    for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
        if getattr(insn, flag):
            queue = _QUEUE_OF_FLAG[module][flag]
            if queue is None:
                raise ReferenceTokenError(f"{flag} is set but the {module} module has no queue for it", index)
            (pops if flag.startswith("pop") else pushes).append(queue)
    return pops, pushes


def decode_program(config, dram: np.ndarray, insn_addr: int, insn_count: int) -> list:
    cfg = require_config(config)
    if insn_addr % 16 or insn_count < 1 or insn_addr + 16 * insn_count > dram.size:
        raise ReferenceStreamError(f"{insn_count} instructions at byte {insn_addr} are not a 16-byte aligned, "
                                   f"non-empty range inside DRAM ({dram.size} bytes)")
    insns = [cfg.isa.decode(dram[insn_addr + 16 * k: insn_addr + 16 * k + 16].tobytes())
             for k in range(insn_count)]
    finishes = [k for k, insn in enumerate(insns) if isinstance(insn, FinishInsn)]
    if not finishes:
        raise ReferenceStreamError("the stream has no FINISH instruction")
    if finishes[0] != insn_count - 1:
        raise ReferenceStreamError("instructions follow FINISH", finishes[0])
    return insns


def run_insns(config, insns: list, dram: np.ndarray, schedule_seed: int | None = None) -> ReferenceMachine:
    """Execute decoded instructions against `dram` (modified in place); returns the final machine.

    The default schedule is round-robin over load, store, compute. With `schedule_seed`, each
    step runs one randomly chosen ready module instead: a program whose modules are properly
    ordered by tokens gives the same DRAM under every schedule (tests use this to show that
    random programs are race-free)."""
    pick = np.random.default_rng(schedule_seed) if schedule_seed is not None else None
    machine = ReferenceMachine(config, dram)
    depth = machine.config.timing.token_queue_depth
    queues = {m: [] for m in _MODULES}
    plans = []
    for k, insn in enumerate(insns):
        module = module_of(insn, k)
        pops, pushes = _flags(insn, module, k)
        queues[module].append(k)
        plans.append((pops, pushes))
    # A token is its pusher's knowledge of completed instructions (a vector clock: how many
    # instructions of each module happen-before it), so FINISH can check that every load
    # and store instruction is ordered before it without relying on any timing.
    tokens: dict[str, list[tuple[int, int, int]]] = {"l2c": [], "c2l": [], "c2s": [], "s2c": []}
    known = {m: (0, 0, 0) for m in _MODULES}
    heads = {m: 0 for m in _MODULES}

    def ready(module: str) -> bool:
        if heads[module] >= len(queues[module]):
            return False
        return all(tokens[q] for q in plans[queues[module][heads[module]]][0])

    def step(module: str) -> int:
        k = queues[module][heads[module]]
        pops, pushes = plans[k]
        clock = list(known[module])
        for q in pops:
            clock = [max(a, b) for a, b in zip(clock, tokens[q].pop(0))]
        machine.execute(insns[k], k)
        heads[module] += 1
        clock[_MODULES.index(module)] = heads[module]
        known[module] = tuple(clock)
        for q in pushes:
            tokens[q].append(known[module])
            if len(tokens[q]) > depth:
                raise ReferenceTokenError(f"push to {q} overflows its {depth} entries", k)
        return k

    while pick is not None:
        movable = [m for m in _MODULES if ready(m)
                   and not (m == "compute" and isinstance(insns[queues[m][heads[m]]], FinishInsn))]
        if movable:
            step(movable[int(pick.integers(len(movable)))])
        elif ready("compute"):  # only FINISH can run
            k = step("compute")
            _check_finished(queues, known["compute"], tokens, k)
            return machine
        else:
            _raise_deadlock(queues, heads, plans, tokens)
    while True:
        progressed = False
        for module in ("load", "store"):
            if ready(module):
                step(module)
                progressed = True
        if ready("compute"):
            k = queues["compute"][heads["compute"]]
            if not isinstance(insns[k], FinishInsn):
                step("compute")
                progressed = True
            elif not progressed:  # FINISH waits until load and store cannot advance
                step("compute")
                _check_finished(queues, known["compute"], tokens, k)
                return machine
        if not progressed:
            _raise_deadlock(queues, heads, plans, tokens)


def _check_finished(queues, finish_clock, tokens, finish_index: int) -> None:
    for m, module in enumerate(_MODULES):
        if module != "compute" and finish_clock[m] < len(queues[module]):
            late = queues[module][finish_clock[m]:]
            raise ReferenceTokenError(f"{module} instructions {late} are not ordered before FINISH by tokens "
                                      "(they may still run when the accelerator stops)", finish_index)
    left = {q: len(t) for q, t in tokens.items() if t}
    if left:
        raise ReferenceTokenError(f"tokens left in queues at FINISH: {left}", finish_index)


def _raise_deadlock(queues, heads, plans, tokens) -> None:
    stuck = []
    for module in _MODULES:
        if heads[module] < len(queues[module]):
            k = queues[module][heads[module]]
            waits = sorted(q for q in plans[k][0] if not tokens[q])
            stuck.append(f"{module} at instruction {k} waits on {', '.join(waits)}")
    raise ReferenceDeadlock("deadlock: " + "; ".join(stuck))


def reference_run(config, dram: np.ndarray, insn_addr: int, insn_count: int) -> np.ndarray:
    """Run `insn_count` instructions fetched from byte `insn_addr`; `dram` is modified in place."""
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise TypeError("dram must be a 1-D uint8 array")
    insns = decode_program(config, dram, insn_addr, insn_count)
    run_insns(config, insns, dram)
    return dram
