"""A bound on the work of simulating one instruction, so that no legal stream hangs the simulator.

Loops that merely repeat are folded (gemm.py, alu.py), so the ISA's extreme loop counts cost
nothing; steps that differ from one another cost time each. At the ISA's limits one GEMM can
hold about 2^35 distinct steps and one ALU whose operands are its own earlier results about
2^40 dependent ones -- minutes to hours on the hardware itself, and far longer here. Rather
than run for hours, an instruction whose work passes the limit stops with WorkLimitExceeded,
naming the instruction; `Simulator(config, max_insn_work=...)` raises the limit.

Work is counted in units of about 0.1 us of simulation on the machines we measure
(benchmarks/sim_worst_case.py prints the rates): a GEMM step, an ALU step with a tensor
operand, a loop body the ALU engines take on its own, and a stretch of ALU steps that must run one after another (each reads an earlier
step's result) weigh what they cost. The default limit, 2^26 units, is a few seconds: some
hundred times the largest instruction our compiler emits.
"""
from __future__ import annotations

from .errors import WorkLimitExceeded

DEFAULT_LIMIT = 1 << 23
GEMM_STEP = 1
ALU_STEP = 7
ALU_DEPENDENT_STRETCH = 48
ALU_BODY = 2000            # a loop body the ALU engines take on its own: a few numpy calls


class WorkMeter:
    """The work one instruction has spent; raises once it passes `limit`."""

    def __init__(self, limit: int, index: int, what: str):
        self.limit, self.index, self.what = limit, index, what
        self.used = 0

    def spend(self, units: int) -> None:
        self.used += units
        if self.used > self.limit:
            raise WorkLimitExceeded(
                f"{self.what}: simulating it takes more than {self.limit:,} units of work (about "
                f"{self.limit * 1e-7:.0f} s: steps that differ from one another, or that read earlier "
                f"steps' results one by one, cannot be folded); raise Simulator(config, max_insn_work=...) "
                f"to simulate it anyway", self.index, self.limit)


class _Unlimited(WorkMeter):
    def spend(self, units: int) -> None:
        pass


UNLIMITED = _Unlimited(0, -1, "")    # for work bounded by construction (matrix bodies of few entries)
