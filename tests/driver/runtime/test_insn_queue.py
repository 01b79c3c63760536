"""Dependence-token rules of SPEC §6, as disassembly snapshots.

Each expected line carries the reason it is right. Flags read as in vdla.hw.disasm:
`-q` pops queue q before the instruction starts, `+q` pushes to q after it completes;
queues are l2c (load->compute), c2l, c2s, s2c.
"""
import pytest

from vdla.driver.runtime import DependenceError, Stage
from vdla.driver.runtime.insn_queue import InsnQueue
from vdla.hw import GemmInsn, MemInsn, MemType, Opcode, disassemble


def _load():
    return MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=1)


def _store():
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=1)


def _lines(q):
    return [line.split(None, 1)[1] for line in disassemble(q.insns).splitlines()]


def test_pop_is_attached_to_the_next_instruction_of_the_popping_stage():
    q = InsnQueue()
    q.dep_pop(Stage.LOAD, Stage.COMPUTE)   # pending on compute
    q.append(_load())                      # a load instruction does not take compute's pop
    q.append(GemmInsn())                   # the next compute instruction does
    assert _lines(q) == [
        "load    LOAD  INP      sram=0 dram=0 y=1 x=1 stride=0",
        "compute GEMM          uop=[0,1) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [-l2c]",
    ]


def test_second_pending_pop_of_a_kind_commits_the_first_on_a_nop():
    q = InsnQueue()
    q.dep_pop(Stage.COMPUTE, Stage.LOAD)   # pending pop_next (c2l) on load
    q.dep_pop(Stage.COMPUTE, Stage.LOAD)   # same kind again: the first needs its own instruction
    q.append(_load())
    assert _lines(q) == [
        "load    LOAD  INP      nop [-c2l]",                              # load NOP = LOAD INP x=0
        "load    LOAD  INP      sram=0 dram=0 y=1 x=1 stride=0 [-c2l]",   # absorbs the second pop
    ]


def test_pops_of_both_kinds_share_one_instruction():
    q = InsnQueue()
    q.dep_pop(Stage.LOAD, Stage.COMPUTE)
    q.dep_pop(Stage.STORE, Stage.COMPUTE)
    q.append(GemmInsn())
    assert _lines(q)[0].endswith("[-l2c -s2c]")


def test_push_attaches_to_the_stage_last_instruction_or_else_a_nop():
    q = InsnQueue()
    q.append(_load())
    q.append(GemmInsn())
    q.dep_push(Stage.LOAD, Stage.COMPUTE)    # load's last instruction (0) has no l2c push: attach
    q.dep_push(Stage.LOAD, Stage.COMPUTE)    # now it has one: a load NOP carries the second
    q.dep_push(Stage.COMPUTE, Stage.LOAD)    # c2l is compute's push_prev: attach to the GEMM
    q.dep_push(Stage.COMPUTE, Stage.STORE)   # c2s is push_next, a different flag: attach too
    q.dep_push(Stage.STORE, Stage.COMPUTE)   # store stage has no instruction yet: store NOP
    assert _lines(q) == [
        "load    LOAD  INP      sram=0 dram=0 y=1 x=1 stride=0 [+l2c]",
        "compute GEMM          uop=[0,1) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [+c2l +c2s]",
        "load    LOAD  INP      nop [+l2c]",
        "store   STORE OUT      nop [+s2c]",
    ]


def test_push_commits_pending_pops_of_the_pushing_stage_first():
    q = InsnQueue()
    q.append(_store())
    q.dep_pop(Stage.COMPUTE, Stage.STORE)   # store must wait for compute ...
    q.dep_push(Stage.STORE, Stage.COMPUTE)  # ... before it signals compute: not on instruction 0
    assert _lines(q) == [
        "store   STORE OUT      sram=0 dram=0 y=1 x=1 stride=0",
        "store   STORE OUT      nop [-c2s +s2c]",   # compute NOP = LOAD UOP, store NOP = STORE
    ]


def test_finish_waits_for_last_load_and_store():
    q = InsnQueue()
    q.append(_load())
    q.dep_push(Stage.LOAD, Stage.COMPUTE)
    q.dep_pop(Stage.LOAD, Stage.COMPUTE)
    q.append(GemmInsn())
    q.dep_push(Stage.COMPUTE, Stage.STORE)
    q.dep_pop(Stage.COMPUTE, Stage.STORE)
    q.append(_store())
    q.finish()
    assert _lines(q) == [
        "load    LOAD  INP      sram=0 dram=0 y=1 x=1 stride=0 [+l2c]",
        "compute GEMM          uop=[0,1) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [-l2c +c2s]",
        "store   STORE OUT      sram=0 dram=0 y=1 x=1 stride=0 [-c2s +s2c]",  # sync: ST->C attached
        "load    LOAD  INP      nop [+l2c]",       # sync: LD->C, but the last load already pushes
        "compute FINISH [-l2c -s2c]",              # FINISH is compute's next instruction: takes both
    ]


@pytest.mark.parametrize("src,dst", [(Stage.LOAD, Stage.STORE), (Stage.STORE, Stage.LOAD),
                                     (Stage.COMPUTE, Stage.COMPUTE)])
def test_illegal_directions_are_rejected(src, dst):
    with pytest.raises(DependenceError, match="neighbouring"):
        InsnQueue().dep_push(src, dst)
    with pytest.raises(DependenceError, match="neighbouring"):
        InsnQueue().dep_pop(src, dst)


def test_unbalanced_tokens_are_rejected_at_finish():
    q = InsnQueue()
    q.dep_pop(Stage.COMPUTE, Stage.LOAD)
    q.append(_load())
    with pytest.raises(DependenceError, match="c2l is popped 1 times but pushed only 0"):
        q.finish()
    q = InsnQueue()
    q.append(GemmInsn())
    q.dep_push(Stage.COMPUTE, Stage.LOAD)
    with pytest.raises(DependenceError, match="c2l is pushed 1 times but popped only 0"):
        q.finish()
