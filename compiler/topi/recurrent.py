"""The recurrence of an LSTM, GRU or RNN as one CPU kernel, written as loop IR: a tensor
expression states no loop whose steps read the previous step's result, so this op builds its
loops itself (the passes and the code generator are every kernel's).

The kernel takes the projections of all steps, XW = x W^T + Wb (compiler/graph/passes/recurrent.py
computes them as one matmul), and per step computes h R^T + Rb and the cell (the equations of
vdla.driver.host_ops.recurrent, which states the op). Work items are directions times chunks of
the batch, each on its own thread: a bidirectional layer runs its two directions side by side.
Each item keeps its state in its rows of Y_h and Y_c, so a step's matvec reads the state where
the previous step's cell wrote it. One sequence with threads to spare splits each step's hidden
units over the threads instead (SPLIT_MACS): a thread computes its units' gates, all of them, and
their cell; h then alternates between two buffers, so no thread overwrites the state another
is still reading, and the cell state stays in Y_c, each unit read and written by one thread.
The matvec keeps a register tile of output vectors (across gates where a thread's units are
few) over the whole reduction, as the matmul schedule does; the cell runs in vectors along the
hidden axis.
"""
from __future__ import annotations

import math

from vdla.driver.host_ops.recurrent import GATES, activation_specs
from .. import te
from ..codegen.parallel import MIN_WORK
from . import elemwise as EW
from ..tir import expr as E
from ..tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, PrimFunc, seq

MAX_ROW_TILE = 4            # batch rows that share one load of a weight vector in the matvec
# A step's matvec of at least this many multiply-adds, with one work item for several threads
# (one sequence, one direction), splits its hidden units over the threads, at the price of a
# fork and join per step (about 1 us with the pool's threads spinning); each thread then reads
# only its part of R^T. Measured per step on 2 threads (Zen 5), one thread -> split: LSTM hidden
# 128 (65 K MACs) 2.2 -> 2.6 us; 160 (102 K) 3.3 -> 2.0; 256 (262 K) 8.9 -> 6.3; GRU 192 3.5 -> 2.2.
SPLIT_MACS = 80_000


def _f(v) -> E.Expr:
    return E.const(float(v), "float32")


# The activations of vdla.driver.host_ops.recurrent.ACTIVATIONS (all of them) as loop-IR
# expressions of one element, topi.elemwise's where it has them; alpha and beta are those
# activation_specs binds.
ACTIVATIONS = {
    "sigmoid": lambda x, a, b: EW.sigmoid_expr(x),
    "tanh": lambda x, a, b: te.tanh(x),
    "relu": lambda x, a, b: EW.relu_expr(x),
    "affine": lambda x, a, b: x * _f(a) + _f(b),
    "leakyrelu": lambda x, a, b: EW.leaky_relu_expr(x, a),
    "thresholdedrelu": lambda x, a, b: EW.thresholded_relu_expr(x, a),
    "scaledtanh": lambda x, a, b: _f(a) * te.tanh(x * _f(b)),
    "hardsigmoid": lambda x, a, b: EW.hard_sigmoid_expr(x, a, b),
    "elu": lambda x, a, b: EW.elu_expr(x, a),
    "softsign": lambda x, a, b: EW.softsign_expr(x),
    "softplus": lambda x, a, b: EW.softplus_expr(x),
}


def _lanes(n: int, most: int) -> int:
    """The widest power-of-two vector, at most `most` lanes, that divides n."""
    lanes = 1
    while lanes * 2 <= most and n % (lanes * 2) == 0:
        lanes *= 2
    return lanes


def _largest_divisor(n: int, most: int) -> int:
    return max(k for k in range(1, max(1, min(n, most)) + 1) if n % k == 0)


def _loop(name: str, extent: int, body_fn, kind=ForKind.SERIAL, annotations=None):
    v = E.Var(name)
    if kind is ForKind.VECTORIZED and extent == 1:
        kind = ForKind.SERIAL
    return For(v, 0, extent, kind, body_fn(v), annotations)


class _Scan:
    """The loop nest of one recurrent op; `bufs` maps roles (xw, rt, rb, h0, c0, p, lens, y, yh, yc)
    to the kernel's parameter buffers (h0, c0, p, lens and yc may be None). With sequence_lens,
    a step past a batch entry's length keeps its state and writes zeros to Y (the reverse
    direction starts at the entry's last step), and an entry of length 0 ends with zero states,
    as the op states them."""

    def __init__(self, op: str, attrs: dict, bufs: dict, target):
        self.op, self.attrs, self.b = op, attrs, bufs
        self.n_dir, self.hidden, self.size = bufs["rt"].shape
        self.layout1 = attrs.get("layout", 0) == 1
        xw = bufs["xw"].shape
        self.seq, self.batch = (xw[1], xw[0]) if self.layout1 else (xw[0], xw[1])
        self.lanes = _lanes(self.hidden, target.vector_lanes(32))
        threads = max(1, getattr(target, "threads", 1) or 1)
        # batch chunks per direction: enough work items for the threads where the batch allows
        self.chunks = _largest_divisor(self.batch, math.ceil(threads / self.n_dir)) if self.n_dir < threads else 1
        self.rows = self.batch // self.chunks
        self.row_tile = _largest_divisor(self.rows, MAX_ROW_TILE)
        self.accumulators = max(1, target.vector_registers // 2)
        self.parts = 1
        if self.n_dir * self.chunks == 1 and self.rows * self.hidden * self.size >= SPLIT_MACS:
            self.parts = max(p for p in range(1, threads + 1) if self.hidden % (p * self.lanes) == 0)
        clip = attrs.get("clip")
        self.clip = (lambda v: v) if clip is None else (lambda v: E.min_expr(E.max_expr(v, _f(-clip)), _f(clip)))
        self.direction = attrs.get("direction", "forward")
        self.activations = activation_specs(op, attrs)      # per direction: (name, alpha, beta)

    # -- indexing in the op's layouts --------------------------------------------------------
    def xw(self, t, b, j):
        col = self.d * self.size + j
        return E.BufferLoad(self.b["xw"], [b, t, col] if self.layout1 else [t, b, col])

    def state(self, b, j):
        return [b, self.d, j] if self.layout1 else [self.d, b, j]

    def y(self, t, b, j):
        return [b, t, self.d, j] if self.layout1 else [t, self.d, b, j]

    # -- the kernel ---------------------------------------------------------------------------
    def func(self, name: str, params: list) -> PrimFunc:
        items = self.n_dir * self.chunks
        kind = ForKind.PARALLEL if items > 1 else ForKind.SERIAL
        return PrimFunc(name, params, _loop("item", items, self._item, kind))

    def _item(self, item):
        self.d = item // self.chunks
        self.b0 = (item % self.chunks) * self.rows
        self.gates = Buffer("gates", (self.rows, self.size), "float32")
        self.reset_h = Buffer("reset_h", (self.rows, self.hidden), "float32")   # GRU: r * h
        self.h_split = Buffer("h", (2, self.rows, self.hidden), "float32")      # split: h by step parity
        body = seq(self._initial_state(), _loop("s", self.seq, self._step), self._final_state())
        if self.op == "GRU" and not self.attrs.get("linear_before_reset", 0):
            body = Allocate(self.reset_h, body)
        if self.parts > 1:
            body = Allocate(self.h_split, body)
        return Allocate(self.gates, body)

    def live(self, t, b):
        """Whether step t is inside batch entry b's sequence (None: every step is)."""
        lens = self.b.get("lens")
        return None if lens is None else t < E.cast("int32", E.BufferLoad(lens, [b]))

    def _kept(self, t, b, new, old):
        live = self.live(t, b)
        return new if live is None else E.Select(live, new, old)

    # -- where h lives: Y_h itself, or (split) the buffer of the step's parity ------------------
    def h_load(self, s, bi, j):
        if self.parts > 1:
            return E.BufferLoad(self.h_split, [E.to_expr(s % 2), bi, j])
        return E.BufferLoad(self.b["yh"], self.state(self.b0 + bi, j))

    def h_store(self, s, bi, value, j):
        if self.parts > 1:
            return BufferStore(self.h_split, value, [E.to_expr((s + 1) % 2), bi, j])
        return BufferStore(self.b["yh"], value, self.state(self.b0 + bi, j))

    def _final_state(self):
        """Y_h from the split buffers; zero states for an entry of length 0 (it has no last step)."""
        lens = self.b.get("lens")

        def body(b, bi, j):
            empty = None if lens is None else E.cast("int32", E.BufferLoad(lens, [b])).equal(E.const(0))
            stores = []
            for out, value in (("yh", self.h_load(self.seq, bi, j)),
                               ("yc", E.BufferLoad(self.b["yc"], self.state(b, j)) if self.b.get("yc") else None)):
                if value is None or (empty is None and (out == "yc" or self.parts == 1)):
                    continue
                stores.append(BufferStore(self.b[out], value if empty is None else E.Select(empty, _f(0), value),
                                          self.state(b, j)))
            return seq(*stores)
        if lens is None and self.parts == 1:
            return None
        return self._vector_rows(body)

    def _vector_rows(self, body_fn, u0=0, units=None):
        """body_fn(b, bi, j) for every row of the item and hidden unit j in [u0, u0 + units), in vectors."""
        L = self.lanes
        return _loop("bi", self.rows, lambda bi: _loop("ho", (units or self.hidden) // L, lambda jo: _loop(
            "hi", L, lambda v: body_fn(self.b0 + bi, bi, u0 + jo * L + v), ForKind.VECTORIZED)))

    def _initial_state(self):
        def body(b, bi, j):
            stores = []
            for init in ("h0", "c0"):
                if init == "c0" and self.b.get("yc") is None:
                    continue
                src = self.b.get(init)
                value = _f(0) if src is None else E.BufferLoad(src, self.state(b, j))
                stores.append(self.h_store(-1, bi, value, j) if init == "h0" else
                              BufferStore(self.b["yc"], value, self.state(b, j)))
            return seq(*stores)
        return self._vector_rows(body)

    def _step(self, s):
        if self.direction == "bidirectional":     # direction 1 runs backwards
            t = s + self.d * (self.seq - 1 - 2 * s)
        else:
            t = self.seq - 1 - s if self.direction == "reverse" else s
        h = lambda bi, k: self.h_load(s, bi, k)      # noqa: E731
        cell = lambda b, bi, j: self._cell(s, t, b, bi, j)       # noqa: E731
        if self.op == "GRU" and not self.attrs.get("linear_before_reset", 0):
            # the candidate's matvec reads r * h of every unit: the reset gates come first
            reset = lambda bi, k: E.BufferLoad(self.reset_h, [bi, k])     # noqa: E731
            phases = [lambda u0, n: seq(self._gates_matvec(h, (0, 1), u0, n), self._vector_rows(
                          lambda b, bi, j: self._gru_reset(s, t, b, bi, j), u0, n)),
                      lambda u0, n: seq(self._gates_matvec(reset, (2,), u0, n), self._vector_rows(cell, u0, n))]
        else:
            phases = [lambda u0, n: seq(self._gates_matvec(h, range(GATES[self.op]), u0, n),
                                        self._vector_rows(cell, u0, n))]
        if self.parts == 1:
            return seq(*[phase(0, self.hidden) for phase in phases])
        units = self.hidden // self.parts
        # SPLIT_MACS chose the split; the pool's workers stay warm from one step to the next
        return seq(*[_loop("part", self.parts, lambda p, phase=phase: phase(p * units, units), ForKind.PARALLEL,
                           {MIN_WORK: 0}) for phase in phases])

    def _gates_matvec(self, src, gates, u0, units: int):
        """gates[bi, g H + j] = Rb[g H + j] + sum_k src(bi, k) RT[k, g H + j] for the gates `gates`,
        hidden units j in [u0, u0 + units) and every row of the item. Register tiles of row_tile
        rows by up to `accumulators` vectors (across gates where a part's units are few) stay
        in registers over all k."""
        P, bt, H = self.lanes, self.row_tile, self.hidden
        columns = [g * H + u0 + q * P for g in gates for q in range(units // P)]   # each vector's first
        per_tile = _largest_divisor(len(columns), max(1, self.accumulators // bt))
        rt, rb = self.b["rt"], self.b["rb"]

        def block(bo, cols):
            acc = Buffer("acc", (bt, len(cols) * P), "float32", scope="local")

            def tile(fn):       # fn(row, accumulator slot, column) for each lane of the tile, unrolled here
                return seq(*[_loop("w", P, lambda v, r=r, u=u: fn(r, [E.const(r), u * P + v], cols[u] + v),
                                   ForKind.VECTORIZED) for r in range(bt) for u in range(len(cols))])
            init = tile(lambda r, slot, j: BufferStore(acc, E.BufferLoad(rb, [self.d, j]), slot))
            update = _loop("k", H, lambda k: tile(lambda r, slot, j: BufferStore(
                acc, E.BufferLoad(acc, slot) + src(bo * bt + r, k) * E.BufferLoad(rt, [self.d, k, j]), slot)))
            out = tile(lambda r, slot, j: BufferStore(self.gates, E.BufferLoad(acc, slot), [bo * bt + r, j]))
            return Allocate(acc, seq(init, update, out))
        return _loop("bo", self.rows // bt, lambda bo: seq(*[block(bo, columns[i:i + per_tile])
                                                            for i in range(0, len(columns), per_tile)]))

    def _act(self, k: int, x):
        """Activation k of the op at x; where the directions' differ, the item's direction picks."""
        per_dir = [self.activations[d][k] for d in range(self.n_dir)]
        values = [ACTIVATIONS[name](x, alpha, beta) for name, alpha, beta in dict.fromkeys(per_dir)]
        return values[0] if len(values) == 1 else E.Select(self.d.equal(0), values[0], values[1])

    def _pre(self, t, b, bi, j, gate: int, extra=None):
        """The clipped pre-activation of gate `gate` at hidden unit j: XW + (h R^T + Rb) + extra."""
        col = gate * self.hidden + j
        v = self.xw(t, b, col) + E.BufferLoad(self.gates, [bi, col])
        return self.clip(v if extra is None else v + extra)

    def _gru_reset(self, s, t, b, bi, j):
        r = self._act(0, self._pre(t, b, bi, j, 1))
        return BufferStore(self.reset_h, r * self.h_load(s, bi, j), [bi, j])

    def _new_h(self, s, t, b, bi, j, value):
        """h's store and Y's, read back from h's (past the entry's length: h kept, Y zero)."""
        live = self.live(t, b)
        stored = self.h_load(s + 1, bi, j)
        return [self.h_store(s, bi, self._kept(t, b, value, self.h_load(s, bi, j)), j),
                BufferStore(self.b["y"], stored if live is None else E.Select(live, stored, _f(0)), self.y(t, b, j))]

    def _cell(self, s, t, b, bi, j):
        H, at = self.hidden, self.state(b, j)
        h_prev = self.h_load(s, bi, j)
        if self.op == "RNN":
            return seq(*self._new_h(s, t, b, bi, j, self._act(0, self._pre(t, b, bi, j, 0))))
        if self.op == "GRU":
            z = self._act(0, self._pre(t, b, bi, j, 0))
            if self.attrs.get("linear_before_reset", 0):
                r = self._act(0, self._pre(t, b, bi, j, 1))
                col = 2 * H + j
                cand = self._act(1, self.clip(self.xw(t, b, col) + r * E.BufferLoad(self.gates, [bi, col])))
            else:
                cand = self._act(1, self._pre(t, b, bi, j, 2))
            return seq(*self._new_h(s, t, b, bi, j, (_f(1) - z) * cand + z * h_prev))
        p = self.b.get("p")
        peep = (lambda g, c: None) if p is None else (lambda g, c: E.BufferLoad(p, [self.d, g * H + j]) * c)
        c = E.BufferLoad(self.b["yc"], at)
        i = self._act(0, self._pre(t, b, bi, j, 0, peep(0, c)))
        forget = _f(1) - i if self.attrs.get("input_forget", 0) else self._act(0, self._pre(t, b, bi, j, 2, peep(2, c)))
        c_new = forget * c + i * self._act(1, self._pre(t, b, bi, j, 3))
        c_now = E.BufferLoad(self.b["yc"], at)     # read after its store: o and h see the new cell
        o = self._act(0, self._pre(t, b, bi, j, 1, peep(1, c_now)))
        return seq(BufferStore(self.b["yc"], self._kept(t, b, c_new, c), at),
                   *self._new_h(s, t, b, bi, j, o * self._act(2, c_now)))


def recurrent_scan(op: str, attrs: dict, bufs: dict, params: list, target, name: str) -> PrimFunc:
    """The kernel of `op`Scan (vdla.driver.host_ops.recurrent) on `params`, its buffers in ABI
    order; `bufs` names their roles."""
    if op not in GATES:
        raise ValueError(f"recurrent_scan: {op} is not LSTM, GRU or RNN")
    return _Scan(op, attrs, bufs, target).func(name, params)
