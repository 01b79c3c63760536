"""The loop nest's closed forms (ranges, hazards, index counts, repetition) against brute
force over every step, on random small nests; and the ISA's largest nests stay cheap."""
import time

import numpy as np
import pytest

from vdla.hw import AluInsn, GemmInsn, load_config
from vdla.simulator.errors import HazardError, MemoryAccessError
from vdla.simulator.loop_nest import LoopNest, check_hazard, check_range
from vdla.simulator.state import OnChipState

CFG = load_config("pynq")


def brute(nest: LoopNest, field: str) -> np.ndarray:
    return np.array([nest.base[field][u] + i * nest.out[field] + j * nest.inner[field]
                     for i in range(nest.iter_out) for j in range(nest.iter_in) for u in range(nest.uops)],
                    dtype=np.int64)


def random_nest(rng, depth_hint: int = 40) -> LoopNest:
    n = int(rng.integers(0, 6)) if rng.random() < 0.1 else int(rng.integers(1, 6))
    fields = ("dst", "src")
    pick = lambda: int(rng.integers(0, 4)) if rng.random() < 0.6 else 0  # noqa: E731
    return LoopNest(int(rng.integers(0, 5)), int(rng.integers(0, 5)),
                    {f: rng.integers(0, depth_hint, n).astype(np.int64) for f in fields},
                    {f: pick() for f in fields}, {f: pick() for f in fields})


def old_first_hazard(dst: np.ndarray, min_distance: int):
    """The rule as first written: smallest distance first, then the earliest step."""
    for d in range(1, min_distance):
        if dst.size > d:
            clash = np.flatnonzero(dst[d:] == dst[:-d])
            if clash.size:
                p = int(clash[0])
                return int(dst[p]), p, d
    return None


def test_indices_counts_and_ranges_match_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(400):
        nest = random_nest(rng)
        for field in ("dst", "src"):
            flat = brute(nest, field)
            assert nest.steps == flat.size
            if flat.size:
                np.testing.assert_array_equal(nest.indices(field, 0, nest.steps), flat)
                a = int(rng.integers(0, flat.size))
                b = int(rng.integers(a, flat.size + 1))
                np.testing.assert_array_equal(nest.indices(field, a, b), flat[a:b])
                chunks = [nest.indices(field, a, b) for a, b in nest.chunks(bytes_per_step=(48 << 20) // 3)]
                np.testing.assert_array_equal(np.concatenate(chunks), flat)
            depth = int(rng.integers(1, 60))
            bad = np.flatnonzero(flat >= depth)
            expect = (int(bad[0]), int(flat[bad[0]])) if bad.size else None
            assert nest.first_out_of_range(field, depth) == expect
            if not bad.size:
                np.testing.assert_array_equal(nest.counts(field, depth), np.bincount(flat, minlength=depth))


@pytest.mark.parametrize("min_distance", [0, 2, 3, 5, 9])
def test_hazard_windows_find_the_same_clash_as_scanning_every_step(min_distance):
    rng = np.random.default_rng(min_distance)
    found = 0
    for _ in range(500):
        nest = random_nest(rng, depth_hint=int(rng.integers(2, 12)))
        expect = old_first_hazard(brute(nest, "dst"), min_distance)
        assert nest.first_hazard(min_distance) == expect
        found += expect is not None
    assert min_distance <= 1 or found > 50  # the comparison is not vacuous


def test_folding_keeps_only_loops_that_move_an_index():
    base = {"dst": np.array([3, 5]), "src": np.array([1, 2])}
    nest = LoopNest(7, 9, base, {"dst": 0, "src": 0}, {"dst": 1, "src": 0})
    folded, outer, inner = nest.folded()
    assert (folded.iter_out, folded.iter_in, outer, inner) == (1, 9, 7, 1)
    nest = LoopNest(7, 9, base, {"dst": 0, "src": 2}, {"dst": 0, "src": 0})
    folded, outer, inner = nest.folded()
    assert (folded.iter_out, folded.iter_in, outer, inner) == (7, 1, 1, 9)


def test_the_largest_nests_are_checked_without_listing_their_steps():
    """16383 x 16383 x 8192 steps (2^40): range, hazard and counts in closed form."""
    state = OnChipState(CFG)
    state.uop_dst[:CFG.uop_depth] = np.arange(CFG.uop_depth) % 2
    state.uop_src[:CFG.uop_depth] = 7
    top = 16383
    begin = time.perf_counter()
    alu = AluInsn(uop_begin=0, uop_end=CFG.uop_depth, iter_out=top, iter_in=top, use_imm=True, imm=1)
    nest = LoopNest.of(alu, state, 0, ("dst",))
    check_range(nest, "dst", CFG.acc_depth, "ALU destination", 0)
    check_hazard(nest, 2, 0, "ALU")
    counts = nest.counts("dst", CFG.acc_depth)
    assert counts[0] == counts[1] == top * top * CFG.uop_depth // 2 and counts[2:].sum() == 0
    # a stride on the outer loop walks off the end of the accumulator at once
    wide = GemmInsn(uop_begin=0, uop_end=CFG.uop_depth, iter_out=top, iter_in=top, dst_factor_out=1)
    with pytest.raises(MemoryAccessError, match=rf"index 2048 \(micro-op field dst, loop step {2047 * top * CFG.uop_depth + 1}\)"):
        check_range(LoopNest.of(wide, state, 3, ("dst",)), "dst", CFG.acc_depth, "GEMM accumulator", 3)
    # one micro-op repeated: the same entry on consecutive steps
    single = GemmInsn(uop_begin=0, uop_end=1, iter_out=top, iter_in=top)
    with pytest.raises(HazardError, match="entry 0 at micro-op steps 0 and 1"):
        check_hazard(LoopNest.of(single, state, 0, ("dst",)), 2, 0, "GEMM")
    assert time.perf_counter() - begin < 30  # generous: a listing of 2^40 steps would never end
