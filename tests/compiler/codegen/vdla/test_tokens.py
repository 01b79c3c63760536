"""insert_dependence_tokens on hand-made operation lists: which pairs it adds and which it
leaves out, checked against the SPEC §4 meaning of the queues."""
from vdla.compiler.codegen.vdla.emit import Op
from vdla.compiler.codegen.vdla.tokens import insert_dependence_tokens
from vdla.driver.runtime import Stage
from vdla.driver.runtime.program_calls import Gemm, Load, Pop, Push, Store
from vdla.hw import MemType

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def _load_call(lo, hi):
    return Load(int(MemType.INP), lo, 0, 0, hi - lo, 1, hi - lo, 0, 0, 0, 0)


def load(lo, hi, mem="inp"):
    return Op(L, _load_call(lo, hi), writes=[(mem, lo, hi)])


def gemm(inp, acc):
    return Op(C, Gemm(acc[0]), reads=[("inp", *inp)], writes=[("acc", *acc)])


def store(lo, hi):
    return Op(S, Store(lo, 0, 0, hi - lo, 1, hi - lo), reads=[("acc", lo, hi)])


def test_read_after_write_and_write_after_read_across_modules():
    calls = insert_dependence_tokens([
        load(0, 10), gemm((0, 10), (0, 4)), store(0, 4),      # tile 0
        load(0, 10), gemm((0, 10), (0, 4)), store(0, 4)])     # tile 1 reuses every slot
    ld, g, st = _load_call(0, 10), Gemm(0), Store(0, 0, 0, 4, 1, 4)
    assert calls == [
        ld, Push(L, C),                                        # RAW: GEMM reads the input
        Pop(L, C), g, Push(C, S), Push(C, L),
        Pop(C, S), st, Push(S, C),                             # RAW: STORE reads the accumulators
        Pop(C, L), ld, Push(L, C),                             # WAR: the load overwrites what GEMM read
        Pop(L, C), Pop(S, C), g, Push(C, S),                   # WAR on acc
        Pop(C, S), st]


def test_disjoint_slots_need_no_tokens_and_one_pop_covers_earlier_work():
    calls = insert_dependence_tokens([
        load(0, 10), load(10, 20),                             # two slots
        gemm((0, 10), (0, 4)), gemm((10, 20), (4, 8)),
        load(0, 10)])                                          # slot 0 again: waits for GEMM 0 only
    pushes = [c for c in calls if isinstance(c, Push)]
    pops = [c for c in calls if isinstance(c, Pop)]
    assert calls.index(Gemm(0)) - 1 == calls.index(Pop(L, C))
    assert len(pushes) == len(pops) == 3                      # l2c for each GEMM, c2l once
    # the c2l token is pushed by the first GEMM, not the second: slot 10..20 is not reused
    first_gemm = calls.index(Gemm(0))
    assert calls[first_gemm + 1] == Push(C, L)


def test_same_module_needs_no_token():
    calls = insert_dependence_tokens([load(0, 4), load(0, 4, "inp")])
    assert [c.NAME for c in calls] == ["load", "load"]
