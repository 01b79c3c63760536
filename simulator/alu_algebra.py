"""Each ALU opcode as an algebra of per-lane functions that compose (SPEC §3 semantics).

An ALU step on entry d is x -> op(x, b), where b is the immediate or an accumulator value
the instruction does not change; the step itself is vdla.hw.alu_ops.lane_op, and this
module adds only how steps compose. Functions of one opcode compose into a function of the
same kind, so a run of updates of one entry -- or a loop that repeats a run millions of
times -- collapses into one exact application:

  ADD  x + c mod 2^32   compose: add c        repeat n times: n*c
  MUL  x * c mod 2^32   compose: multiply c   repeat: c^n (square and multiply)
  MIN  min(x, c)        compose: min          repeat: itself
  MAX  max(x, c)        compose: max          repeat: itself
  SHR  x >> a (a >= 0) or x << -a (a < 0, 32-bit wrap): every composition of such shifts is
       "take the w-bit field of x from bit r, sign-extend it, shift it left by l" (r, w, l),
       w = 0 being the zero function; repeating stops changing after 33 applications.

A function is a numpy array whose leading axes index entries (and lanes); SHR keeps its
(r, w, l) in a trailing axis of 3. `then(f, g)` is "f, then g". Arithmetic is exact: ADD
and MUL live in uint64 holding values mod 2^32 (a product of two such values fits).
"""
from __future__ import annotations

import numpy as np

from vdla.hw.alu_ops import LANE_MAX, LANE_MIN, lane_op, shift_amount, wrap
from vdla.hw.isa import AluOp

_MASK = np.uint64(0xFFFFFFFF)


class Algebra:
    op: AluOp
    commutative = True

    def of_operand(self, operand: np.ndarray):
        raise NotImplementedError

    def identity(self, shape: tuple):
        raise NotImplementedError

    def then(self, f, g):
        raise NotImplementedError

    def apply(self, f, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def step(self, x: np.ndarray, operand: np.ndarray) -> np.ndarray:
        """One update op(x, operand) on int32 arrays (the ordered engine's primitive): the
        lane operation exactly as vdla.hw states it."""
        return lane_op(self.op, x, operand)

    def power(self, f, n):
        """f applied n times (n: an int, or one count per entry along the first axis)."""
        n = np.asarray(n, dtype=np.int64)
        result, base = self.identity(f.shape[:self.lead_ndim(f)]), f
        while n.any():
            odd = (n & 1).astype(bool)
            if odd.ndim:
                odd = odd.reshape(odd.shape + (1,) * (f.ndim - 1))
            result = np.where(odd, self.then(result, base), result)
            n = n >> 1
            if n.any():
                base = self.then(base, base)
        return result

    def lead_ndim(self, f) -> int:
        return f.ndim

    def reduce_runs(self, fs, starts: np.ndarray):
        """Compose consecutive runs of functions (each run in order) into one function each;
        runs begin at `starts` (ascending, starts[0] == 0). Neighbours pair up level by level;
        a run reduced to one function leaves the work."""
        out = np.empty((len(starts), *fs.shape[1:]), dtype=fs.dtype)
        run = np.zeros(len(fs), dtype=np.int64)
        run[starts[1:]] = 1
        run = np.cumsum(run)
        while len(run):
            first = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
            size = np.diff(np.append(first, len(run)))
            done = first[size == 1]
            out[run[done]] = fs[done]
            active = np.repeat(size > 1, size)
            fs, run = fs[active], run[active]
            if not len(run):
                break
            first = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
            local = np.arange(len(run)) - np.repeat(first, np.diff(np.append(first, len(run))))
            even = np.flatnonzero(local % 2 == 0)
            paired = even[(even + 1 < len(run))]
            paired = paired[run[paired + 1] == run[paired]]
            merged = fs[even]
            merged[np.searchsorted(even, paired)] = self.then(fs[paired], fs[paired + 1])
            fs, run = merged, run[even]
        return out


class _Add(Algebra):
    op = AluOp.ADD

    def of_operand(self, operand):
        return (operand & 0xFFFFFFFF).astype(np.uint64)

    def identity(self, shape):
        return np.zeros(shape, dtype=np.uint64)

    def then(self, f, g):
        return (f + g) & _MASK

    def power(self, f, n):
        n = np.asarray(n, dtype=np.int64) & 0xFFFFFFFF
        if n.ndim:
            n = n.reshape(n.shape + (1,) * (f.ndim - 1))
        return (f * n.astype(np.uint64)) & _MASK

    def apply(self, f, x):
        return wrap((x.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64) + f)

    def reduce_runs(self, fs, starts):
        return np.add.reduceat(fs, starts, axis=0) & _MASK


class _Mul(_Add):
    op = AluOp.MUL

    def identity(self, shape):
        return np.ones(shape, dtype=np.uint64)

    def then(self, f, g):
        return (f * g) & _MASK

    power = Algebra.power

    def apply(self, f, x):
        return wrap((x.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64) * f)

    def reduce_runs(self, fs, starts):
        return np.multiply.reduceat(fs, starts, axis=0) & _MASK  # mod 2^64 keeps the low 32 bits


class _Min(Algebra):
    op = AluOp.MIN
    neutral = LANE_MAX
    pick = staticmethod(np.minimum)

    def of_operand(self, operand):
        return operand.astype(np.int64)

    def identity(self, shape):
        return np.full(shape, self.neutral, dtype=np.int64)

    def then(self, f, g):
        return self.pick(f, g)

    def power(self, f, n):
        n = np.asarray(n, dtype=np.int64)
        if n.ndim:
            n = n.reshape(n.shape + (1,) * (f.ndim - 1))
        return np.where(n > 0, f, self.neutral)

    def apply(self, f, x):
        return self.pick(x.astype(np.int64), f).astype(np.int32)

    def reduce_runs(self, fs, starts):
        return self.pick.reduceat(fs, starts, axis=0)


class _Max(_Min):
    op = AluOp.MAX
    neutral = LANE_MIN
    pick = staticmethod(np.maximum)


class _Shr(Algebra):
    """(r, w, l): y = sext_w(bits [r, r+w) of x) << l, kept to 32 bits; w = 0: y = 0."""
    op = AluOp.SHR
    commutative = False

    def of_operand(self, operand):
        a = shift_amount(np.asarray(operand).astype(np.int16))     # the low 6 bits survive the cast
        f = np.zeros(a.shape + (3,), dtype=np.int16)
        right = a >= 0
        f[..., 0] = np.where(right, a, 0)
        f[..., 2] = np.where(right, 0, -a)
        f[..., 1] = 32 - f[..., 0] - f[..., 2]
        f[f[..., 2] >= 32] = 0                     # a left shift by 32 leaves nothing
        return f

    def identity(self, shape):
        f = np.zeros(tuple(shape) + (3,), dtype=np.int16)
        f[..., 1] = 32
        return f

    def lead_ndim(self, f):
        return f.ndim - 1

    def power(self, f, n):
        # Each application moves the field by l - r or, in place, changes nothing: after 32
        # it has left the 32 bits (zero) or shrunk to its sign bit, so f^n = f^min(n, 33).
        return super().power(f, np.minimum(np.asarray(n, dtype=np.int64), 33))

    def then(self, f, g):
        f, g = np.broadcast_arrays(f, g)
        r1, w1, l1 = f[..., 0], f[..., 1], f[..., 2]
        r2, w2, l2 = g[..., 0], g[..., 1], g[..., 2]
        width = np.minimum(w1, 32 - l1)              # f's field as it survives in 32 bits
        top = l1 + width                             # f's output: zeros below l1, field, sign above
        lo = np.maximum(r2, l1)
        out = np.empty(f.shape, dtype=np.int16)
        out[..., 0] = r1 + (lo - l1)
        out[..., 2] = l2 + (lo - r2)
        out[..., 1] = np.minimum(np.minimum(r2 + w2, top) - lo, 32 - out[..., 2])
        sign_only = lo >= top                        # g reads only copies of the field's sign
        if sign_only.any():
            out[sign_only] = np.stack([(r1 + width - 1)[sign_only], np.ones_like(l2[sign_only]),
                                       l2[sign_only]], axis=-1)
        zero = (width <= 0) | (w2 <= 0) | (r2 + w2 <= l1) | (out[..., 1] <= 0)
        out[zero] = 0
        return out

    def apply(self, f, x):
        r, w, l = (f[..., k].astype(np.int64) for k in range(3))
        width = np.minimum(w, 32 - l)
        safe = np.maximum(width, 1)
        sign = np.left_shift(1, safe - 1)
        field = (((x.astype(np.int64) >> r) & (2 * sign - 1)) ^ sign) - sign
        return np.where(width > 0, wrap(field * np.left_shift(1, l)), 0).astype(np.int32)


ALGEBRAS = {a.op: a for a in (_Add(), _Mul(), _Min(), _Max(), _Shr())}
