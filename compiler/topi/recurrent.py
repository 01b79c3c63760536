"""The recurrence of an LSTM, GRU or RNN as one CPU kernel, written as loop IR: a tensor
expression states no loop whose steps read the previous step's result, so this op builds its
loops itself (the passes and the code generator are every kernel's).

The kernel takes the projections of all steps, XW = x W^T + Wb (compiler/graph/passes/recurrent.py
computes them as one matmul), and per step computes h R^T + Rb and the cell (the equations of
vdla.driver.host_ops.recurrent, which states the op). Work items are directions times chunks of
the batch, each on its own thread: a bidirectional layer runs its two directions side by side.
Each item keeps its state in its rows of Y_h and Y_c, so a step's matvec reads the state where
the previous step's cell wrote it. The matvec keeps a register tile of output vectors across
the whole reduction, as the matmul schedule does; the cell runs in vectors along the hidden axis.
"""
from __future__ import annotations

import math

from vdla.driver.host_ops.recurrent import activation_specs
from ..tir import expr as E
from ..tir.stmt import Allocate, Buffer, BufferStore, For, ForKind, PrimFunc, seq

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
MAX_ROW_TILE = 4            # batch rows that share one load of a weight vector in the matvec


def _f(v) -> E.Expr:
    return E.const(float(v), "float32")


def _tanh(x):
    return E.Call("tanh", [x], x.dtype)


# The activations of vdla.driver.host_ops.recurrent.ACTIVATIONS (all of them) as loop-IR
# expressions of one element; alpha and beta are those activation_specs binds.
ACTIVATIONS = {
    "sigmoid": lambda x, a, b: E.Call("sigmoid", [x], x.dtype),
    "tanh": lambda x, a, b: _tanh(x),
    "relu": lambda x, a, b: E.max_expr(x, _f(0)),
    "affine": lambda x, a, b: x * _f(a) + _f(b),
    "leakyrelu": lambda x, a, b: E.Select(x >= _f(0), x, x * _f(a)),
    "thresholdedrelu": lambda x, a, b: E.Select(x > _f(a), x, _f(0)),
    "scaledtanh": lambda x, a, b: _f(a) * _tanh(x * _f(b)),
    "hardsigmoid": lambda x, a, b: E.min_expr(E.max_expr(x * _f(a) + _f(b), _f(0)), _f(1)),
    "elu": lambda x, a, b: E.Select(x >= _f(0), x, _f(a) * (E.Call("exp", [x], x.dtype) - _f(1))),
    "softsign": lambda x, a, b: x / (_f(1) + E.Call("fabs", [x], x.dtype)),
    # log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|)
    "softplus": lambda x, a, b: E.max_expr(x, _f(0)) + E.Call(
        "log", [_f(1) + E.Call("exp", [_f(0) - E.Call("fabs", [x], x.dtype)], x.dtype)], x.dtype),
}


def _lanes(n: int, most: int) -> int:
    """The widest power-of-two vector, at most `most` lanes, that divides n."""
    lanes = 1
    while lanes * 2 <= most and n % (lanes * 2) == 0:
        lanes *= 2
    return lanes


def _largest_divisor(n: int, most: int) -> int:
    return max(k for k in range(1, max(1, min(n, most)) + 1) if n % k == 0)


def _loop(name: str, extent: int, body_fn, kind=ForKind.SERIAL):
    v = E.Var(name)
    if kind is ForKind.VECTORIZED and extent == 1:
        kind = ForKind.SERIAL
    return For(v, 0, extent, kind, body_fn(v))


class _Scan:
    """The loop nest of one recurrent op; `bufs` maps roles (xw, rt, rb, h0, c0, p, y, yh, yc)
    to the kernel's parameter buffers (h0, c0, p and yc may be None)."""

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
        clip = attrs.get("clip")
        self.clip = (lambda v: v) if clip is None else (lambda v: E.min_expr(E.max_expr(v, _f(-clip)), _f(clip)))
        self.direction = attrs.get("direction", "forward")

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
        body = seq(self._initial_state(), _loop("s", self.seq, self._step))
        if self.op == "GRU" and not self.attrs.get("linear_before_reset", 0):
            body = Allocate(self.reset_h, body)
        return Allocate(self.gates, body)

    def _vector_rows(self, body_fn):
        """body_fn(b, bi, j) for every row of the item and hidden unit, in vectors."""
        L = self.lanes
        return _loop("bi", self.rows, lambda bi: _loop("ho", self.hidden // L, lambda jo: _loop(
            "hi", L, lambda v: body_fn(self.b0 + bi, bi, jo * L + v), ForKind.VECTORIZED)))

    def _initial_state(self):
        def body(b, bi, j):
            stores = []
            for init, out in (("h0", "yh"), ("c0", "yc")):
                if self.b.get(out) is not None:
                    src = self.b.get(init)
                    value = _f(0) if src is None else E.BufferLoad(src, self.state(b, j))
                    stores.append(BufferStore(self.b[out], value, self.state(b, j)))
            return seq(*stores)
        return self._vector_rows(body)

    def _step(self, s):
        if self.direction == "bidirectional":     # direction 1 runs backwards
            t = s + self.d * (self.seq - 1 - 2 * s)
        else:
            t = self.seq - 1 - s if self.direction == "reverse" else s
        h = lambda bi, k: E.BufferLoad(self.b["yh"], self.state(self.b0 + bi, k))   # noqa: E731
        if self.op == "GRU" and not self.attrs.get("linear_before_reset", 0):
            # the candidate's matvec reads r * h, so the reset gate comes first
            reset = lambda bi, k: E.BufferLoad(self.reset_h, [bi, k])   # noqa: E731
            return seq(self._matvec(h, 0, 2 * self.hidden),
                       self._vector_rows(lambda b, bi, j: self._gru_reset(t, b, bi, j)),
                       self._matvec(reset, 2 * self.hidden, self.hidden),
                       self._vector_rows(lambda b, bi, j: self._cell(t, b, bi, j)))
        return seq(self._matvec(h, 0, self.size), self._vector_rows(lambda b, bi, j: self._cell(t, b, bi, j)))

    def _matvec(self, src, col0: int, ncols: int):
        """gates[bi, col0 + j] = Rb[j'] + sum_k src(bi, k) RT[k, j'] (j' = col0 + j, j < ncols) for
        every row of the item: a tile of row_tile rows by `vectors` vectors stays in registers
        over all k."""
        P, bt = self.lanes, self.row_tile
        vectors = _largest_divisor(ncols // P, max(1, self.accumulators // bt))
        width = vectors * P
        rt, rb, gates = self.b["rt"], self.b["rb"], self.gates

        def block(bo, jo):
            acc = Buffer("acc", (bt, width), "float32", scope="local")
            col = lambda u, v: col0 + jo * width + u * P + v     # noqa: E731

            def tile(fn):
                return _loop("r", bt, lambda r: _loop("u", vectors, lambda u: _loop(
                    "w", P, lambda v: fn(r, u, v), ForKind.VECTORIZED), ForKind.UNROLLED), ForKind.UNROLLED)
            init = tile(lambda r, u, v: BufferStore(acc, E.BufferLoad(rb, [self.d, col(u, v)]), [r, u * P + v]))
            update = _loop("k", self.hidden, lambda k: tile(lambda r, u, v: BufferStore(
                acc, E.BufferLoad(acc, [r, u * P + v]) + src(bo * bt + r, k) * E.BufferLoad(rt, [self.d, k, col(u, v)]),
                [r, u * P + v])))
            out = tile(lambda r, u, v: BufferStore(gates, E.BufferLoad(acc, [r, u * P + v]), [bo * bt + r, col(u, v)]))
            return Allocate(acc, seq(init, update, out))
        return _loop("bo", self.rows // bt, lambda bo: _loop("jo", ncols // width, lambda jo: block(bo, jo)))

    def _act(self, k: int, x):
        """Activation k of the op at x; where the directions' differ, the item's direction picks."""
        per_dir = [activation_specs(self.op, self.attrs)[d][k] for d in range(self.n_dir)]
        values = [ACTIVATIONS[name](x, alpha, beta) for name, alpha, beta in dict.fromkeys(per_dir)]
        return values[0] if len(values) == 1 else E.Select(self.d.equal(0), values[0], values[1])

    def _pre(self, t, b, bi, j, gate: int, extra=None):
        """The clipped pre-activation of gate `gate` at hidden unit j: XW + (h R^T + Rb) + extra."""
        col = gate * self.hidden + j
        v = self.xw(t, b, col) + E.BufferLoad(self.gates, [bi, col])
        return self.clip(v if extra is None else v + extra)

    def _gru_reset(self, t, b, bi, j):
        r = self._act(0, self._pre(t, b, bi, j, 1))
        return BufferStore(self.reset_h, r * E.BufferLoad(self.b["yh"], self.state(b, j)), [bi, j])

    def _cell(self, t, b, bi, j):
        H, at = self.hidden, self.state(b, j)
        h_prev = E.BufferLoad(self.b["yh"], at)
        if self.op == "RNN":
            h_new = self._act(0, self._pre(t, b, bi, j, 0))
            return seq(BufferStore(self.b["yh"], h_new, at),
                       BufferStore(self.b["y"], E.BufferLoad(self.b["yh"], at), self.y(t, b, j)))
        if self.op == "GRU":
            z = self._act(0, self._pre(t, b, bi, j, 0))
            if self.attrs.get("linear_before_reset", 0):
                r = self._act(0, self._pre(t, b, bi, j, 1))
                col = 2 * H + j
                cand = self._act(1, self.clip(self.xw(t, b, col) + r * E.BufferLoad(self.gates, [bi, col])))
            else:
                cand = self._act(1, self._pre(t, b, bi, j, 2))
            h_new = (_f(1) - z) * cand + z * h_prev
            return seq(BufferStore(self.b["yh"], h_new, at),
                       BufferStore(self.b["y"], E.BufferLoad(self.b["yh"], at), self.y(t, b, j)))
        p = self.b.get("p")
        peep = (lambda g, c: None) if p is None else (lambda g, c: E.BufferLoad(p, [self.d, g * H + j]) * c)
        c = E.BufferLoad(self.b["yc"], at)
        i = self._act(0, self._pre(t, b, bi, j, 0, peep(0, c)))
        forget = _f(1) - i if self.attrs.get("input_forget", 0) else self._act(0, self._pre(t, b, bi, j, 2, peep(2, c)))
        c_new = forget * c + i * self._act(1, self._pre(t, b, bi, j, 3))
        c_now = E.BufferLoad(self.b["yc"], at)     # read after its store: o and h see the new cell
        o = self._act(0, self._pre(t, b, bi, j, 1, peep(1, c_now)))
        return seq(BufferStore(self.b["yc"], c_new, at),
                   BufferStore(self.b["yh"], o * self._act(2, c_now), at),
                   BufferStore(self.b["y"], E.BufferLoad(self.b["yh"], at), self.y(t, b, j)))


def recurrent_scan(op: str, attrs: dict, bufs: dict, params: list, target, name: str) -> PrimFunc:
    """The kernel of `op`Scan (vdla.driver.host_ops.recurrent) on `params`, its buffers in ABI
    order; `bufs` names their roles."""
    if op not in GATES:
        raise ValueError(f"recurrent_scan: {op} is not LSTM, GRU or RNN")
    return _Scan(op, attrs, bufs, target).func(name, params)
