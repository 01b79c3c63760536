"""How long the simulator takes for the slowest legal single instructions of the ISA.

Each case is one launch: a prologue that fills the SRAMs with random data (micro-ops, inputs,
weights, accumulators), the instruction under test, FINISH. Cases: ALU with an immediate and
with a tensor operand at 16383 x 16383 iterations over all 8192 micro-ops (2^40 steps), ALUs
whose operands are their own earlier results (a repeated body over 511 entries; 2046
bodies of 2 entries, each repeated 16383 times), GEMM at
16383 x 16383 iterations (2 and 8192 micro-ops), the two instructions of issue 11, and the
largest LOAD of every memory type (full padding) and STORE. Each instruction's simulation
time (the launch minus the prologue's) is printed beside the hardware's own time for it (its
cycles at the config's clock) and the aim of 1 s.

Loops that merely repeat are folded, so the ISA's extremes are cheap. What still costs time
is work that is distinct step by step: the last rows give the simulator's rate on nests
without repetition (GEMM and ALU), and on steps that read their own results one by one.

Instructions whose work no folding removes (every step distinct, or each reading the last,
in numbers that take the hardware itself minutes to hours) meet the simulator's work limit:
the "beyond the work limit" rows time how long the simulator takes to refuse them.

With --json the last line is one JSON object: worst_insn_s (largest time of any case, to
simulate it or to refuse it), worst_insn, worst_simulated_s, worst_refusal_s, gemm_max_iters_s, and the rates in steps per second.

    python benchmarks/sim_worst_case.py [--config pynq] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from vdla.hw import DEFAULT_PRESET, AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.simulator import Simulator, WorkLimitExceeded

TOP = 16383          # the 14-bit loop-count fields' maximum
AIM_S = 1.0
DRAM_BYTES = 32 << 20
INSN_ADDR = 30 << 20


class Bench:
    """A DRAM image with random SRAM contents and micro-op tables, and the launches over it."""

    def __init__(self, config, seed: int = 0):
        self.cfg = cfg = config
        rng = np.random.default_rng(seed)
        self.dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
        self.sim = Simulator(cfg)
        self.uop_base = 16 << 20
        self.prologue = [
            MemInsn(memory_type=MemType.INP, sram_base=0, dram_base=0, y_size=1, x_size=cfg.inp_depth,
                    x_stride=cfg.inp_depth),
            MemInsn(memory_type=MemType.WGT, sram_base=0, dram_base=0, y_size=1, x_size=cfg.wgt_depth,
                    x_stride=cfg.wgt_depth, push_next=True),
            MemInsn(memory_type=MemType.ACC, sram_base=0, dram_base=(8 << 20) // cfg.acc_elem_bytes, y_size=1,
                    x_size=cfg.acc_depth, x_stride=cfg.acc_depth, pop_prev=True)]

    def uops(self, table: list[Uop]) -> MemInsn:
        words = self.cfg.isa.encode_uops(table)
        self.dram[self.uop_base:self.uop_base + words.nbytes] = words.view(np.uint8)
        return MemInsn(memory_type=MemType.UOP, sram_base=0, dram_base=self.uop_base // 4, y_size=1,
                       x_size=len(table), x_stride=len(table))

    def launch(self, insns: list) -> tuple[float, int, object]:
        stream = self.cfg.isa.encode_stream(insns)
        dram = self.dram.copy()
        dram[INSN_ADDR:INSN_ADDR + stream.size] = stream
        begin = time.perf_counter()
        result = self.sim.run(dram, INSN_ADDR, len(insns))
        return time.perf_counter() - begin, result.cycles, result

    def compute_case(self, table: list[Uop], insn) -> tuple[float, int, int]:
        """(simulation seconds of `insn`, its cycles, its micro-op steps)."""
        base = self.prologue + [self.uops(table)]
        base_s, _, _ = self.launch(base + [FinishInsn()])
        wall, _, result = self.launch(base + [insn, FinishInsn()])
        start, end = result.insn_times[len(base)]
        steps = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_begin)
        return max(wall - base_s, 0.0), int(end - start), steps

    def dma_case(self, insn: MemInsn) -> tuple[float, int, int]:
        if insn.opcode == Opcode.STORE:
            insns = [MemInsn(memory_type=MemType.UOP, x_size=0, push_next=True),
                     insn.replace(pop_prev=True, push_prev=True), FinishInsn(pop_next=True)]
            at = 1
        elif insn.module().name == "LOAD":
            insns = [insn.replace(push_next=True), FinishInsn(pop_prev=True)]
            at = 0
        else:
            insns, at = [insn, FinishInsn()], 0
        wall, _, result = self.launch(insns)
        start, end = result.insn_times[at]
        moved = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * (insn.x_pad_0 + insn.x_size + insn.x_pad_1)
        return wall, int(end - start), moved


def extreme_cases(b: Bench) -> dict:
    cfg = b.cfg
    n = cfg.uop_depth
    half = cfg.acc_depth // 2
    # destinations in the lower half (each entry every 512 steps), sources in the upper half
    spread = [Uop(k % 512, half + k % half) for k in range(n)]
    cases = {
        "ALU ADD imm, 16383x1000, 2 uops (issue 11)":
            ([Uop(0), Uop(1)], AluInsn(uop_begin=0, uop_end=2, iter_out=TOP, iter_in=1000, alu_opcode=AluOp.ADD,
                                       use_imm=True, imm=3)),
        "ALU MUL imm, max iters, 8192 uops":
            (spread, AluInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.MUL, use_imm=True,
                             imm=-3)),
        "ALU SHR imm, max iters, 8192 uops":
            (spread, AluInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.SHR, use_imm=True,
                             imm=-1)),
        "ALU ADD tensor, max iters, 8192 uops":
            (spread, AluInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.ADD)),
        "ALU SHR tensor, max iters, 8192 uops":
            (spread, AluInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.SHR)),
        "ALU ADD own results, max iters, 511 entries":
            ([Uop(k % 511, k % 511 + 1) for k in range(1022)],
             AluInsn(uop_begin=0, uop_end=1022, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.ADD)),
        "ALU MUL own results, max iters, 511 entries":
            ([Uop(k % 511, k % 511 + 1) for k in range(1022)],
             AluInsn(uop_begin=0, uop_end=1022, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.MUL)),
        "ALU MUL own results, 2046 rows x 16383 repeats":
            ([Uop(0, 1), Uop(1, 0)], AluInsn(uop_begin=0, uop_end=2, iter_out=2046, iter_in=TOP, src_factor_out=1,
                                             alu_opcode=AluOp.MUL)),
        "ALU SHR own results, 2046 rows x 16383 repeats":
            ([Uop(0, 1), Uop(1, 0)], AluInsn(uop_begin=0, uop_end=2, iter_out=2046, iter_in=TOP, src_factor_out=1,
                                             alu_opcode=AluOp.SHR)),
        "GEMM max iters, 2 uops (issue 11)":
            ([Uop(0, 0, 0), Uop(1, 1, 1)], GemmInsn(uop_begin=0, uop_end=2, iter_out=TOP, iter_in=TOP)),
        "GEMM max iters, 8192 uops":
            ([Uop(k % 512, k % cfg.inp_depth, k % cfg.wgt_depth) for k in range(n)],
             GemmInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP)),
    }
    return {name: b.compute_case(table, insn) for name, (table, insn) in cases.items()}


def refused_cases(b: Bench) -> dict:
    """Instructions whose steps all differ (or read one another one by one) in numbers no
    folding removes: hours on the hardware and longer here. The work limit
    (vdla.simulator.work_limit) stops each; the figure is how long it takes to say so."""
    cfg = b.cfg
    n = cfg.uop_depth
    cases = {
        "GEMM 1024x2048 distinct rows, 8192 uops":
            ([Uop(k % 1024, 0, k % cfg.wgt_depth) for k in range(n)],
             GemmInsn(uop_begin=0, uop_end=n, iter_out=1024, iter_in=cfg.inp_depth, dst_factor_out=1,
                      src_factor_in=1)),
        "ALU SHR tensor 1024x1024 distinct rows":
            ([Uop(k % 512, 1024 + k % 512) for k in range(n)],
             AluInsn(uop_begin=0, uop_end=n, iter_out=512, iter_in=512, dst_factor_out=1, src_factor_in=1,
                     alu_opcode=AluOp.SHR)),
        "ALU ADD own results, x[d] += x[d+1] over 2047 entries, max iters":
            ([Uop(d, d + 1) for d in range(cfg.acc_depth - 1)],
             AluInsn(uop_begin=0, uop_end=cfg.acc_depth - 1, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.ADD)),
    }
    out = {}
    for name, (table, insn) in cases.items():
        begin = time.perf_counter()
        try:
            s, _, _ = b.compute_case(table, insn)
            out[name] = (s, "simulated")
        except WorkLimitExceeded:
            out[name] = (time.perf_counter() - begin, "refused")
    return out


def dma_cases(b: Bench) -> dict:
    cfg = b.cfg
    pads = dict(y_pad_0=15, y_pad_1=15, x_pad_0=15, x_pad_1=15)
    out = {}
    for mt, depth in ((MemType.INP, cfg.inp_depth), (MemType.WGT, cfg.wgt_depth), (MemType.ACC, cfg.acc_depth),
                      (MemType.ACC_8BIT, cfg.acc_depth)):
        side = int(np.sqrt(depth)) - 30                     # (30 + side)^2 elements fill the SRAM
        out[f"LOAD {mt.name} {side}x{side} + pads 15"] = b.dma_case(MemInsn(
            memory_type=mt, sram_base=0, dram_base=0, y_size=side, x_size=side, x_stride=side + 7, **pads))
        out[f"LOAD {mt.name} {depth} rows of 1"] = b.dma_case(MemInsn(
            memory_type=mt, sram_base=0, dram_base=0, y_size=depth, x_size=1, x_stride=3))
    out[f"LOAD UOP {cfg.uop_depth}"] = b.dma_case(MemInsn(memory_type=MemType.UOP, sram_base=0, dram_base=1,
                                                          y_size=1, x_size=cfg.uop_depth))
    out[f"STORE OUT {cfg.out_depth} rows of 1"] = b.dma_case(MemInsn(
        opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=0, y_size=cfg.out_depth, x_size=1,
        x_stride=5))
    return out


def distinct_rates(b: Bench) -> dict:
    """Steps per second where nothing repeats (every step a different index combination)."""
    cfg = b.cfg
    rates = {}
    gemm = GemmInsn(uop_begin=0, uop_end=64, iter_out=256, iter_in=64, dst_factor_out=4, src_factor_in=1,
                    wgt_factor_in=1)
    s, _, steps = b.compute_case([Uop(k % 4, k, k % 16) for k in range(64)], gemm)
    rates["GEMM, no repetition"] = (s, steps)
    alu = AluInsn(uop_begin=0, uop_end=64, iter_out=256, iter_in=64, dst_factor_out=4, src_factor_in=1,
                  alu_opcode=AluOp.SHR)
    s, _, steps = b.compute_case([Uop(k % 4, cfg.acc_depth // 2 + k) for k in range(64)], alu)
    rates["ALU SHR tensor, no repetition"] = (s, steps)
    chain = AluInsn(uop_begin=0, uop_end=2047, alu_opcode=AluOp.ADD)     # ACC[d] += ACC[d - 1], d = 1..2047
    s, _, steps = b.compute_case([Uop(d, d - 1) for d in range(1, 2048)], chain)
    rates["ALU ADD chain, each step reads the last"] = (s, steps)
    return rates


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    b = Bench(cfg)
    clock = cfg.clock_mhz * 1e6
    print(f"slowest legal single instructions on {cfg.name} @ {cfg.clock_mhz} MHz: simulation time of the "
          f"instruction beside the hardware's time for it and the aim of {AIM_S:.0f} s")
    print(f"{'instruction':<46}{'steps/elements':>20}{'HW cycles':>20}{'HW time':>10}{'simulated in':>14}{'aim':>6}")
    extremes = {**extreme_cases(b), **dma_cases(b)}
    for name, (s, cycles, work) in extremes.items():
        print(f"{name:<46}{work:>20,}{cycles:>20,}{_seconds(cycles / clock):>10}{_seconds(s):>14}"
              f"{'ok' if s < AIM_S else 'SLOW':>6}")
    refused = refused_cases(b)
    print(f"beyond the work limit ({Simulator(cfg).max_insn_work:,} units, vdla.simulator.work_limit), "
          "time to simulate or refuse:")
    for name, (s, outcome) in refused.items():
        print(f"  {name:<68}{outcome:>10} in {_seconds(s):>9}{'ok' if s < AIM_S else 'SLOW':>6}")
    rates = distinct_rates(b)
    print("work that does not repeat costs time per step:")
    for name, (s, steps) in rates.items():
        print(f"  {name:<44}{steps:>12,} steps in {_seconds(s):>9}: {steps / max(s, 1e-9) / 1e6:6.2f} M steps/s "
              f"(hardware: {clock / 1e6:.0f} M micro-ops/s)")
    worst = max(extremes, key=lambda k: extremes[k][0])
    worst_refusal = max(refused, key=lambda k: refused[k][0])
    gemm_s = extremes["GEMM max iters, 8192 uops"][0]
    print(f"worst: {worst} in {_seconds(extremes[worst][0])}; GEMM at max iterations in {_seconds(gemm_s)}")
    if args.json:
        worst_s = max(extremes[worst][0], refused[worst_refusal][0])
        print(json.dumps({"worst_insn_s": round(worst_s, 4),
                          "worst_insn": worst if extremes[worst][0] >= refused[worst_refusal][0] else worst_refusal,
                          "worst_simulated_s": round(extremes[worst][0], 4),
                          "worst_refusal_s": round(refused[worst_refusal][0], 4),
                          "gemm_max_iters_s": round(gemm_s, 4),
                          **{f"{key}_steps_per_s": round(steps / max(s, 1e-9)) for key, (s, steps) in
                             zip(("gemm_distinct", "alu_distinct", "alu_chain"), rates.values())}}))
    return 0


def _seconds(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 1:
        return f"{s:.2f} s"
    return f"{s * 1e3:.1f} ms"


if __name__ == "__main__":
    sys.exit(main())
