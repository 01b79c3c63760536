"""ALU steps that must run in order: an operand an earlier step of the instruction wrote.

One pass over a run of steps cuts it into maximal stretches in which no step reads, as its
source, an entry an earlier step of the stretch wrote; each stretch reads its sources
first (what the hardware's order gives within it) and composes the updates of each
destination in order (alu_algebra), in a few numpy operations.

A body repeated R times (a loop whose factors are all zero) is a map g applied R times:
* ADD and MUL bodies over few entries are linear maps -- of the values (ADD), or of the
  exponents of the values (MUL: x_d *= x_s adds exponent vectors) -- so g^R is one matrix
  power, exact mod 2^32 (MUL: an odd value is +-5^a mod 2^32, so its exponents count mod
  2^30; a power of two only matters up to 2^32);
* otherwise passes run one by one under Brent's cycle detection on the state they change,
  so a body that reaches a fixed point (MIN, MAX, shifts that clear every bit) or a short
  cycle stops there and skips the remaining passes by the cycle length.
"""
from __future__ import annotations

import hashlib

import numpy as np

from vdla.hw.alu_ops import wrap
from vdla.hw.isa import AluOp

from .work_limit import ALU_DEPENDENT_STRETCH, ALU_STEP, UNLIMITED

_MASK = np.uint64(0xFFFFFFFF)
LINEAR_MAX_ENTRIES = 512       # matrix powers cost 4 entries^3 flops * 2 log2(R)
LINEAR_MAX_STEPS = 1 << 16     # the body runs once, on all unit vectors, to build its matrix:
LINEAR_MAX_CELLS = 1 << 22     # steps x entries values (8 B each) at most


def run_in_order(step, dst: np.ndarray, src: np.ndarray, values: np.ndarray, algebra=None,
                 meter=UNLIMITED) -> None:
    """values[dst[k]] = step(values[dst[k]], values[src[k]]) for k in order.

    Steps are cut into maximal stretches in which no step reads an entry (as its src) that
    an earlier step of the stretch wrote; each stretch then reads its sources first. Within
    a stretch an entry may be updated again: with an `algebra`, its updates compose in
    order; without one, a repeated destination ends the stretch too."""
    n = dst.size
    meter.spend(n * ALU_STEP)
    pos = np.arange(n, dtype=np.int64)
    order = np.lexsort((pos, dst))                           # (entry, position), ascending
    written = dst[order] * (n + 1) + order
    below = np.searchsorted(written, src * (n + 1) + pos) - 1  # the last write before (src, k)
    probe = written[np.maximum(below, 0)]
    conflict = np.where((below >= 0) & (probe // (n + 1) == src), probe % (n + 1), -1)
    if algebra is None:   # also the last earlier write of the step's own dst entry
        same = np.concatenate(([False], dst[order][1:] == dst[order][:-1]))
        prev_dst = np.full(n, -1, dtype=np.int64)
        prev_dst[order[same]] = order[np.flatnonzero(same) - 1]
        conflict = np.maximum(conflict, prev_dst)
    # a stretch starting at a ends at the first step whose conflict lies at or after a
    first_at = np.full(n + 1, n, dtype=np.int64)
    has = conflict >= 0
    np.minimum.at(first_at, conflict[has], pos[has])
    stretch_end = np.minimum.accumulate(first_at[::-1])[::-1].tolist()
    a = 0
    while a < n:
        meter.spend(ALU_DEPENDENT_STRETCH)
        b = stretch_end[a]
        d, operands = dst[a:b], values[src[a:b]]
        if algebra is None or b - a == 1 or np.unique(d).size == b - a:
            values[d] = step(values[d], operands)
        else:
            keys, composed = compose_by_key(algebra, d, algebra.of_operand(operands.astype(np.int64)))
            values[keys] = algebra.apply(composed, values[keys])
        a = b


def compose_by_key(algebra, key: np.ndarray, fs):
    """(distinct keys ascending, the in-order composition of the functions of each key)."""
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return key[starts], algebra.reduce_runs(fs[order], starts)


def repeat_in_order(algebra, nest, first: int, stop: int, reps: int, acc: np.ndarray, bytes_per_step: int,
                    meter=UNLIMITED) -> None:
    """Steps [first, stop) of `nest`, run `reps` times in a row."""
    def one_pass():
        for a, b in nest.chunks(bytes_per_step, first, stop):
            run_in_order(algebra.step, nest.indices("dst", a, b), nest.indices("src", a, b), acc, algebra, meter)

    if reps > 1 and _linear_power(algebra, nest, first, stop, reps, acc):
        return
    changed = np.unique(nest.indices("dst", first, stop)) if stop - first <= LINEAR_MAX_STEPS else slice(None)
    digest = lambda: hashlib.blake2b(acc[changed].tobytes(), digest_size=16).digest()  # noqa: E731
    checkpoint, power, length = digest(), 1, 0
    done = 0
    while done < reps:
        one_pass()
        done += 1
        length += 1
        now = digest()
        if now == checkpoint:                    # the state repeats every `length` passes
            for _ in range((reps - done) % length):
                one_pass()
            return
        if length == power:
            checkpoint, power, length = now, power * 2, 0


def _linear_power(algebra, nest, first: int, stop: int, reps: int, acc: np.ndarray) -> bool:
    if algebra.op not in (AluOp.ADD, AluOp.MUL) or stop - first > LINEAR_MAX_STEPS:
        return False
    dst, src = nest.indices("dst", first, stop), nest.indices("src", first, stop)
    entries = np.unique(np.concatenate([dst, src]))
    k = entries.size
    if k > LINEAR_MAX_ENTRIES or k * (stop - first) > LINEAR_MAX_CELLS:
        return False
    d, s = np.searchsorted(entries, dst), np.searchsorted(entries, src)
    # the body on the unit vectors: row e = the coefficients of entry e after one pass
    body = np.eye(k, dtype=np.uint64)
    run_in_order(lambda a, b: (a + b) & _MASK, d, s, body)
    power = _matrix_power(body, reps, _matmul_mod32)
    x = (acc[entries].reshape(k, -1).astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    if algebra.op == AluOp.ADD:
        new = _matmul_mod32(power, x)
    else:
        capped = np.eye(k)
        run_in_order(lambda a, b: np.minimum(a + b, 32), d, s, capped)
        reach = _matrix_power(capped, reps, lambda p, q: np.minimum(p @ q, 32))
        new = _products_of_powers(x, power, reach)
    acc[entries] = wrap(new).reshape(acc[entries].shape)
    return True


def _matmul_mod32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a @ b) mod 2^32 for uint64 matrices of values below 2^32, exactly, on float64 BLAS:
    16-bit halves keep every sum of products below 2^53 (for up to 2^20 terms)."""
    a0, a1 = (a & np.uint64(0xFFFF)).astype(np.float64), (a >> np.uint64(16)).astype(np.float64)
    b0, b1 = (b & np.uint64(0xFFFF)).astype(np.float64), (b >> np.uint64(16)).astype(np.float64)
    low = (a0 @ b0).astype(np.uint64)
    mid = (a1 @ b0).astype(np.uint64) + (a0 @ b1).astype(np.uint64)
    return (low + ((mid & np.uint64(0xFFFF)) << np.uint64(16))) & _MASK


def _matrix_power(m: np.ndarray, n: int, mul) -> np.ndarray:
    result, base = np.eye(m.shape[0], dtype=m.dtype), m
    while n:
        if n & 1:
            result = mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return result


# Odd residues mod 2^32 are (-1)^s * 5^a with a < 2^30: 5^(2^j) = 1 + 2^(j+2) mod 2^(j+3), so
# dividing out 5^(2^j) whenever bit j+2 is set leaves 1 and spells out a.
_FIVE_POW = [pow(5, 1 << j, 1 << 32) for j in range(30)]
_FIVE_INV = [pow(f, -1, 1 << 32) for f in _FIVE_POW]


def _log5(odd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, a) with odd = (-1)^s * 5^a mod 2^32, for odd uint64 values below 2^32."""
    sign = (odd >> np.uint64(1)) & np.uint64(1)              # 3 mod 4: negative
    y = np.where(sign, (np.uint64(1 << 32) - odd) & _MASK, odd)
    a = np.zeros_like(odd)
    for j in range(30):
        bit = (y >> np.uint64(j + 2)) & np.uint64(1)
        y = np.where(bit, (y * np.uint64(_FIVE_INV[j])) & _MASK, y)
        a |= bit << np.uint64(j)
    return sign, a


def _products_of_powers(x: np.ndarray, exp: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """new[d] = prod_t x[t] ** e[d, t] mod 2^32 per lane, given e mod 2^32 (`exp`) and
    min(e, 32) (`reach`). With x[t] = 2^v * (-1)^s * 5^a: the powers of two only matter up
    to 32, and the odd part is (-1)^(e.s) * 5^(e.a mod 2^30) -- two more matrix products."""
    zero = x == 0
    low = np.where(zero, 1, x & (~x + np.uint64(1)))                # lowest set bit
    twos = np.where(zero, 32, np.round(np.log2(low.astype(np.float64)))).astype(np.float64)
    sign, log = _log5(np.where(zero, np.uint64(1), x // low))
    shift = reach @ twos                                            # sum_t min(e, 32) * v_t
    negative = _matmul_mod32(exp, sign) & np.uint64(1)
    power = _matmul_mod32(exp, log) & np.uint64((1 << 30) - 1)
    odd = np.ones_like(power)
    for j in range(30):
        odd = np.where((power >> np.uint64(j)) & np.uint64(1), (odd * np.uint64(_FIVE_POW[j])) & _MASK, odd)
    odd = np.where(negative, (np.uint64(1 << 32) - odd) & _MASK, odd)
    return np.where(shift >= 32, np.uint64(0), (odd << np.minimum(shift, 31).astype(np.uint64)) & _MASK)
