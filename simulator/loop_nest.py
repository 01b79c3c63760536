"""The micro-op loop nest of one GEMM/ALU instruction (SPEC §3), never built whole.

Step (i, j, u) -- i < iter_out, j < iter_in, u over the micro-ops, in that nesting --
touches index base_f[u] + i*out_f + j*in_f of each micro-op field f (dst, src, wgt). At the
ISA's limits that is 16383 x 16383 x 8192 steps, so nothing here lists them all: ranges are
checked in closed form, hazards on a few windows of steps, per-index counts by strided
prefix sums, and the steps themselves come out in rows (one (i, j) pair: every micro-op)
grouped into chunks of bounded size. A loop whose factors are zero for every field an
instruction reads merely repeats the loops inside it; `folded` drops such loops and says
how often they repeat, so the engines apply the repetition instead of running it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .errors import HazardError, MemoryAccessError

# Scratch memory one chunk of steps may use, all temporaries included (house budget: 64 MiB).
CHUNK_BYTES = 48 << 20


@dataclass(frozen=True)
class LoopNest:
    iter_out: int
    iter_in: int
    base: dict            # field -> int64 array, the field of each micro-op in [uop_begin, uop_end)
    out: dict             # field -> factor of the outer loop
    inner: dict           # field -> factor of the inner loop

    @classmethod
    def of(cls, insn, state, index: int, fields: tuple[str, ...]) -> "LoopNest":
        depth = state.config.uop_depth
        if insn.uop_end > depth or insn.uop_begin > insn.uop_end:
            raise MemoryAccessError(f"micro-op range [{insn.uop_begin}, {insn.uop_end}) (fields uop_begin/"
                                    f"uop_end) is not inside the micro-op buffer of depth {depth}", index)
        u = slice(insn.uop_begin, insn.uop_end)
        arrays = {"dst": state.uop_dst, "src": state.uop_src, "wgt": state.uop_wgt}
        return cls(insn.iter_out, insn.iter_in, {f: arrays[f][u] for f in fields},
                   {f: int(getattr(insn, f"{f}_factor_out")) for f in fields},
                   {f: int(getattr(insn, f"{f}_factor_in")) for f in fields})

    # ---- sizes ------------------------------------------------------------------------------
    @property
    def uops(self) -> int:
        return len(next(iter(self.base.values())))

    @property
    def rows(self) -> int:
        return self.iter_out * self.iter_in

    @property
    def steps(self) -> int:
        return self.rows * self.uops

    # ---- steps --------------------------------------------------------------------------------
    def indices(self, field: str, first: int, stop: int) -> np.ndarray:
        """The field's index at flat steps [first, stop), in execution order."""
        n = self.uops
        if first % n == 0 and stop % n == 0:   # whole rows: one offset per row
            rows = np.arange(first // n, stop // n, dtype=np.int64)
            offsets = rows // self.iter_in * self.out[field] + rows % self.iter_in * self.inner[field]
            return (offsets[:, None] + self.base[field][None, :]).ravel()
        return self.at(field, np.arange(first, stop, dtype=np.int64))

    def at(self, field: str, steps: np.ndarray) -> np.ndarray:
        """The field's index at the given flat steps (any order, repeats allowed)."""
        rows, u = steps // self.uops, steps % self.uops
        return (self.base[field][u] + rows // self.iter_in * self.out[field]
                + rows % self.iter_in * self.inner[field])

    def rows_per_chunk(self, bytes_per_step: int) -> int:
        """Whole rows that fit in CHUNK_BYTES of scratch (0: a row alone is larger)."""
        return max(1, CHUNK_BYTES // max(1, bytes_per_step)) // self.uops

    def chunks(self, bytes_per_step: int, first: int = 0, stop: int | None = None):
        """(first step, stop step) ranges covering steps [first, stop) in order, each within
        CHUNK_BYTES of scratch; whole rows where a row fits and `first` starts one."""
        stop = self.steps if stop is None else stop
        per = max(1, CHUNK_BYTES // max(1, bytes_per_step))
        if per >= self.uops and first % self.uops == 0:
            per -= per % self.uops
        for a in range(first, stop, per):
            yield a, min(a + per, stop)

    # ---- repetition ---------------------------------------------------------------------------
    def folded(self) -> tuple["LoopNest", int, int]:
        """(nest without pure-repeat loops, outer repeats, inner repeats). A loop repeats when
        all its factors are zero: then every pass of it runs the same steps."""
        if self.steps == 0:
            return self, 1, 1
        outer_reps = self.iter_out if not any(self.out.values()) else 1
        inner_reps = self.iter_in if not any(self.inner.values()) else 1
        nest = dataclasses.replace(self, iter_out=self.iter_out // outer_reps,
                                   iter_in=self.iter_in // inner_reps)
        return nest, outer_reps, inner_reps

    # ---- ranges ---------------------------------------------------------------------------------
    def first_out_of_range(self, field: str, depth: int) -> tuple[int, int] | None:
        """(flat step, index) of the first step whose index reaches `depth`, or None.

        Indices grow with i and j (factors are unsigned), so the first offending row is the
        first whose largest index reaches depth, found by arithmetic rather than by search."""
        if self.steps == 0:
            return None
        base, fo, fi = self.base[field], self.out[field], self.inner[field]
        top = int(base.max())
        if top + (self.iter_out - 1) * fo + (self.iter_in - 1) * fi < depth:
            return None
        i = 0 if top + (self.iter_in - 1) * fi >= depth else _ceil_div(depth - top - (self.iter_in - 1) * fi, fo)
        j = 0 if top + i * fo >= depth else _ceil_div(depth - top - i * fo, fi)
        offset = i * fo + j * fi
        u = int(np.argmax(base + offset >= depth))
        return (i * self.iter_in + j) * self.uops + u, int(base[u]) + offset

    def counts(self, field: str, depth: int) -> np.ndarray:
        """How many steps touch each index < depth (indices must be in range)."""
        if self.steps == 0:
            return np.zeros(depth, dtype=np.int64)
        hist = np.bincount(self.base[field], minlength=depth).astype(np.int64)
        hist = _spread(hist, self.inner[field], self.iter_in)
        return _spread(hist, self.out[field], self.iter_out)

    # ---- accumulator hazards ----------------------------------------------------------------------
    def first_hazard(self, min_distance: int, writes: np.ndarray | None = None) -> tuple[int, int, int] | None:
        """(entry, step, distance) of the first pair of dst updates fewer than `min_distance`
        steps apart: the smallest distance first, then the earliest step (SPEC §3). `writes`
        (bool per micro-op) names the micro-ops that update their dst (None: all of them).

        Every (i, j) row is the first row's dst shifted by a constant, and every outer pass
        the first one's, so a clash anywhere has a shifted copy at least as early in a window
        near the start: the first few rows, and the seam between the first two outer passes."""
        if min_distance <= 1 or self.steps <= 1:
            return None
        span = min_distance - 1
        n, block = self.uops, self.iter_in * self.uops
        windows = [(0, min(self.iter_in, _ceil_div(span, n) + 1) * n)]
        if self.iter_out > 1:
            if block >= span:
                windows.append((block - span, min(block + span, self.steps)))
            else:
                windows.append((0, min(self.iter_out, _ceil_div(span, block) + 1) * block))
        best = None
        for first, stop in windows:
            dst = self.indices("dst", first, stop)
            live = np.ones(dst.size, dtype=bool) if writes is None else writes[np.arange(first, stop) % n]
            for d in range(1, min(min_distance, dst.size)):
                clash = np.flatnonzero((dst[d:] == dst[:-d]) & live[d:] & live[:-d])
                if clash.size:
                    found = (d, first + int(clash[0]))
                    best = found if best is None or found < best else best
                    break
        if best is None:
            return None
        d, step = best
        return int(self.indices("dst", step, step + 1)[0]), step, d


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _spread(hist: np.ndarray, stride: int, count: int) -> np.ndarray:
    """g[x] = sum over k < count of hist[x - k*stride]: one loop level applied to a histogram,
    with prefix sums along each residue class of the stride (linear in the depth)."""
    if count == 1:
        return hist
    if stride == 0:
        return hist * count
    size = hist.size
    cols = np.zeros(_ceil_div(size, stride) * stride, dtype=np.int64)
    cols[:size] = hist
    cols = cols.reshape(-1, stride)
    sums = np.cumsum(cols, axis=0)
    out = sums.copy()
    out[count:] -= sums[:-count]
    return out.ravel()[:size]


def check_range(nest: LoopNest, field: str, depth: int, what: str, index: int) -> None:
    found = nest.first_out_of_range(field, depth)
    if found is not None:
        step, value = found
        raise MemoryAccessError(f"{what} index {value} (micro-op field {field}, loop step {step}) exceeds "
                                f"the buffer depth {depth}", index)


def check_hazard(nest: LoopNest, min_distance: int, index: int, what: str,
                 writes: np.ndarray | None = None) -> None:
    found = nest.first_hazard(min_distance, writes)
    if found is not None:
        entry, step, d = found
        raise HazardError(f"{what} updates accumulator entry {entry} at micro-op steps {step} and {step + d}, "
                          f"closer than the pipeline's minimum distance {min_distance}", index)
