"""insert_dependence_tokens on hand-made operation lists: which pairs it adds and which it
leaves out, checked against the SPEC §4 meaning of the queues."""
from vdla.compiler.codegen.vdla.emit import Op
from vdla.compiler.codegen.vdla.tokens import insert_dependence_tokens
from vdla.driver.runtime import Stage

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def load(lo, hi, mem="inp"):
    return Op(L, ("load", mem, lo), writes=[(mem, lo, hi)])


def gemm(inp, acc):
    return Op(C, ("gemm", inp, acc), reads=[("inp", *inp)], writes=[("acc", *acc)])


def store(lo, hi):
    return Op(S, ("store", lo), reads=[("acc", lo, hi)])


def test_read_after_write_and_write_after_read_across_modules():
    calls = insert_dependence_tokens([
        load(0, 10), gemm((0, 10), (0, 4)), store(0, 4),      # tile 0
        load(0, 10), gemm((0, 10), (0, 4)), store(0, 4)])     # tile 1 reuses every slot
    assert calls == [
        ("load", "inp", 0), ("push", L, C),                    # RAW: GEMM reads the input
        ("pop", L, C), ("gemm", (0, 10), (0, 4)), ("push", C, S), ("push", C, L),
        ("pop", C, S), ("store", 0), ("push", S, C),           # RAW: STORE reads the accumulators
        ("pop", C, L), ("load", "inp", 0), ("push", L, C),     # WAR: the load overwrites what GEMM read
        ("pop", L, C), ("pop", S, C), ("gemm", (0, 10), (0, 4)), ("push", C, S),   # WAR on acc
        ("pop", C, S), ("store", 0)]


def test_disjoint_slots_need_no_tokens_and_one_pop_covers_earlier_work():
    calls = insert_dependence_tokens([
        load(0, 10), load(10, 20),                             # two slots
        gemm((0, 10), (0, 4)), gemm((10, 20), (4, 8)),
        load(0, 10)])                                          # slot 0 again: waits for GEMM 0 only
    pushes = [c for c in calls if c[0] == "push"]
    pops = [c for c in calls if c[0] == "pop"]
    assert calls.index(("gemm", (0, 10), (0, 4))) - 1 == calls.index(("pop", L, C))
    assert len(pushes) == len(pops) == 3                      # l2c for each GEMM, c2l once
    # the c2l token is pushed by the first GEMM, not the second: slot 10..20 is not reused
    first_gemm = calls.index(("gemm", (0, 10), (0, 4)))
    assert calls[first_gemm + 1] == ("push", C, L)


def test_same_module_needs_no_token():
    calls = insert_dependence_tokens([load(0, 4), load(0, 4, "inp")])
    assert [c[0] for c in calls] == ["load", "load"]
