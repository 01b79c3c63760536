"""The instruction list of one launch and the dependence-token rules of SPEC §6.

* A pop is attached to the next instruction of the popping stage ("pending pop"); a second
  pop of the same kind while one is pending first commits the pending one on a NOP.
* A push is attached to the last instruction of the pushing stage if that instruction does
  not push in that direction yet; otherwise a NOP of that stage carries it. Pending pops
  of the pushing stage are committed first (on a NOP), so the push comes after them.
* NOPs are dependence-only instructions: LOAD INP / LOAD UOP / STORE OUT with x_size = 0
  on the load / compute / store stage.

Attaching a push to the stage's last instruction instead of a trailing NOP gives the same
ordering (the stage runs in order and the NOP would pop nothing), one cycle sooner.
"""
from __future__ import annotations

from vdla.hw import FinishInsn, Insn, MemInsn, MemType, Module, Opcode

from .errors import DependenceError

Stage = Module


def _pop_flag(src: Stage, dst: Stage) -> str:
    return "pop_prev" if src < dst else "pop_next"


def _push_flag(src: Stage, dst: Stage) -> str:
    return "push_next" if src < dst else "push_prev"


def check_direction(src, dst, what: str) -> tuple[Stage, Stage]:
    try:
        src, dst = Stage(src), Stage(dst)
    except ValueError:
        raise DependenceError(f"{what}: stages must be Stage.LOAD, Stage.COMPUTE or Stage.STORE, "
                              f"got {src!r} -> {dst!r}") from None
    if abs(int(src) - int(dst)) != 1:
        raise DependenceError(f"{what}({src.name} -> {dst.name}): tokens only flow between neighbouring "
                              "stages (load<->compute, compute<->store)")
    return src, dst


def nop(stage: Stage) -> Insn:
    if stage == Stage.LOAD:
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, y_size=0, x_size=0)
    if stage == Stage.COMPUTE:
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, y_size=0, x_size=0)
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, y_size=0, x_size=0)


class InsnQueue:
    def __init__(self):
        self.insns: list[Insn] = []
        self.pending = {s: {"pop_prev": False, "pop_next": False} for s in Stage}
        self.last_of_stage: dict[Stage, int | None] = {s: None for s in Stage}

    def __len__(self) -> int:
        return len(self.insns)

    def append(self, insn: Insn) -> Insn:
        stage = insn.module()
        for flag, on in self.pending[stage].items():
            if on:
                setattr(insn, flag, True)
                self.pending[stage][flag] = False
        self.insns.append(insn)
        self.last_of_stage[stage] = len(self.insns) - 1
        return insn

    def commit_pending(self, stage: Stage) -> None:
        if any(self.pending[stage].values()):
            self.append(nop(stage))

    def dep_pop(self, src, dst) -> None:
        src, dst = check_direction(src, dst, "dep_pop")
        flag = _pop_flag(src, dst)
        if self.pending[dst][flag]:
            self.append(nop(dst))
        self.pending[dst][flag] = True

    def dep_push(self, src, dst) -> None:
        src, dst = check_direction(src, dst, "dep_push")
        self.commit_pending(src)
        flag = _push_flag(src, dst)
        last = self.last_of_stage[src]
        if last is not None and not getattr(self.insns[last], flag):
            setattr(self.insns[last], flag, True)
            return
        self.append(nop(src)).__setattr__(flag, True)

    def finish(self) -> list[Insn]:
        """Close the stream: compute waits for the last store and the last load, then FINISH."""
        self.dep_push(Stage.STORE, Stage.COMPUTE)
        self.dep_push(Stage.LOAD, Stage.COMPUTE)
        self.dep_pop(Stage.STORE, Stage.COMPUTE)
        self.dep_pop(Stage.LOAD, Stage.COMPUTE)
        self.append(FinishInsn())
        check_token_balance(self.insns)
        return self.insns


def check_token_balance(insns: list[Insn]) -> None:
    """Every push needs a pop (else TokenError at FINISH) and every pop a push (else deadlock)."""
    pushed = {}
    popped = {}
    for insn in insns:
        for q in insn.pushes():
            pushed[q] = pushed.get(q, 0) + 1
        for q in insn.pops():
            popped[q] = popped.get(q, 0) + 1
    for q in sorted(set(pushed) | set(popped)):
        a, b = pushed.get(q, 0), popped.get(q, 0)
        if b > a:
            raise DependenceError(f"token queue {q} is popped {b} times but pushed only {a} times: the "
                                  "stream would deadlock; add the missing dep_push or drop a dep_pop")
        if a > b:
            raise DependenceError(f"token queue {q} is pushed {a} times but popped only {b} times: "
                                  "tokens would be left at FINISH; add the missing dep_pop")
