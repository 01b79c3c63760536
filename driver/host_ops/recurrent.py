"""The recurrent operators of the default ONNX domain (LSTM, GRU, RNN): one OpDef each over a
shared loop that steps the op's cell through the sequence, once per direction.

The cells state the ONNX equations with the gate order of the weights (LSTM: iofc, peepholes
iof; GRU: zrh; RNN: one gate). `sequence_lens` is read at run time: a batch entry shorter than
the sequence holds its state past its length, and its Y there is zero; the reverse direction
starts at its last valid step. Output shapes depend on shapes alone.
"""
from __future__ import annotations

import numpy as np

from .errors import OperandError
from .opdef import OpDef, dtype_name

# name -> (f(x, alpha, beta), default alpha, default beta); None: the function takes no such value.
# The defaults are those of the ONNX operators of the same name, as the spec says (onnxruntime
# takes 0 for an alpha or beta of Affine, ThresholdedRelu and ScaledTanh that the node does not
# give); ScaledTanh's operator had no defaults, and 1, 1 leave tanh unscaled. ThresholdedRelu passes
# x > alpha, as its operator does.
ACTIVATIONS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), None, None),
    "tanh": (lambda x, a, b: np.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: 0.5 * (1 + np.tanh(0.5 * x)), None, None),   # no overflow in exp
    "affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0), 1.0, None),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0))), 1.0, None),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "softplus": (lambda x, a, b: np.logaddexp(0, x), None, None),
}

# op -> (gates per direction in W and R, activations per direction, their defaults)
_SHAPE = {"LSTM": (4, 3, ["Sigmoid", "Tanh", "Tanh"]),
          "GRU": (3, 2, ["Sigmoid", "Tanh"]),
          "RNN": (1, 1, ["Tanh"])}
# the gates per direction in W and R, by op: what the compiler's recurrence kernel reads too
GATES = {op: shape[0] for op, shape in _SHAPE.items()}
# RNN's schema states its default for two directions whatever the direction
_RNN_DEFAULT = ["Tanh", "Tanh"]


def _names(attrs: dict) -> list[str] | None:
    names = attrs.get("activations")
    return None if names is None else [n.decode() if isinstance(n, bytes) else str(n) for n in names]


def _num_directions(attrs: dict) -> int:
    direction, layout = attrs.get("direction", "forward"), attrs.get("layout", 0)
    if direction not in ("forward", "reverse", "bidirectional"):
        raise OperandError(f"direction {direction!r}; ONNX defines forward, reverse and bidirectional")
    if layout not in (0, 1):
        raise OperandError(f"layout {layout}; ONNX defines 0 (sequence first) and 1 (batch first)")
    return 2 if direction == "bidirectional" else 1


def activation_specs(op: str, attrs: dict) -> list[list[tuple]]:
    """Per direction, the op's activations as (lower-case name, alpha, beta): the alpha (beta)
    values are consumed in order by the functions that take one, the others get None."""
    per, n_dir = _SHAPE[op][1], _num_directions(attrs)
    names = _names(attrs)
    if names is None or (op == "RNN" and names == _RNN_DEFAULT):
        names = _SHAPE[op][2] * n_dir
    if len(names) != per * n_dir:
        raise OperandError(f"activations lists {len(names)} functions; {op} with direction "
                           f"{attrs.get('direction', 'forward')!r} needs {per * n_dir}")
    alphas, betas = list(attrs.get("activation_alpha") or []), list(attrs.get("activation_beta") or [])
    specs = []
    for name in names:
        _, alpha, beta = ACTIVATIONS[name.lower()]
        alpha = alphas.pop(0) if alpha is not None and alphas else alpha
        beta = betas.pop(0) if beta is not None and betas else beta
        specs.append((name.lower(), alpha, beta))
    return [specs[d * per:(d + 1) * per] for d in range(n_dir)]


def _activations(op: str, attrs: dict) -> list[list]:
    """Per direction, the op's activations as functions of x with their alpha and beta bound."""
    return [[(lambda x, fn=ACTIVATIONS[name][0], a=alpha, b=beta: fn(x, a, b)) for name, alpha, beta in direction]
            for direction in activation_specs(op, attrs)]


def unsupported(attrs: dict) -> str | None:
    unknown = [n for n in _names(attrs) or [] if n.lower() not in ACTIVATIONS]
    if unknown:
        return (f"activations {unknown} are not supported; supported: Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus")
    return None


# -- cells: (input projection X*W^T + Wb at this step, state) -> new state --------------------

def _clipped(clip):
    return (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))


def _lstm_cell(xw, h, c, r, rb, p, acts, clip, attrs):
    f, g, act_h = acts
    i, o, fg, cc = np.split(xw + h @ r.T + rb, 4, axis=-1)
    pi, po, pf = np.split(p, 3)
    i = f(clip(i + pi * c))
    # input_forget couples the gates: what enters the cell is what it forgets
    fg = 1 - i if attrs.get("input_forget", 0) else f(clip(fg + pf * c))
    c = fg * c + i * g(clip(cc))
    o = f(clip(o + po * c))
    return o * act_h(c), c


def _gru_cell(xw, h, c, r, rb, p, acts, clip, attrs):
    f, g = acts
    xz, xr, xh = np.split(xw, 3, axis=-1)
    rz, rr, rh = np.split(r, 3)
    bz, br, bh = np.split(rb, 3)
    z = f(clip(xz + h @ rz.T + bz))
    reset = f(clip(xr + h @ rr.T + br))
    if attrs.get("linear_before_reset", 0):
        cand = g(clip(xh + reset * (h @ rh.T + bh)))
    else:
        cand = g(clip(xh + (reset * h) @ rh.T + bh))
    return (1 - z) * cand + z * h, c


def _rnn_cell(xw, h, c, r, rb, p, acts, clip, attrs):
    return acts[0](clip(xw + h @ r.T + rb)), c


_CELLS = {"LSTM": _lstm_cell, "GRU": _gru_cell, "RNN": _rnn_cell}


def _scan(cell, xw, h, c, lens, reverse):
    """Y [seq, batch, hidden] and the last valid state of one direction."""
    y = np.zeros(xw.shape[:2] + h.shape[-1:], h.dtype)
    for t in (range(len(xw) - 1, -1, -1) if reverse else range(len(xw))):
        live = (t < lens)[:, None]
        h_new, c_new = cell(xw[t], h, c)
        h, c = np.where(live, h_new, h), np.where(live, c_new, c)
        y[t] = np.where(live, h_new, 0)
    # an empty sequence has no last state: zero, as onnxruntime gives (the spec does not say)
    empty = (lens == 0)[:, None]
    return y, np.where(empty, 0, h), np.where(empty, 0, c)


def _states(op: str, attrs: dict, h0, c0, p, n_dir: int, batch: int, hidden: int, work):
    """initial_h, initial_c ([num_directions, batch, hidden], zeros where absent) and P."""
    batch_first = attrs.get("layout", 0) == 1
    states = []
    for s in (h0, c0 if op == "LSTM" else None):
        s = np.zeros((n_dir, batch, hidden)) if s is None else (np.swapaxes(s, 0, 1) if batch_first else s)
        states.append(s.astype(work))
    p = p if op == "LSTM" and p is not None else np.zeros((n_dir, 3 * hidden))
    return states, p


def _recur(op: str, attrs: dict, xws: list, rs: list, rbs: list, h0, c0, p, lens, dtype):
    """Y and the final states from each direction's input projection xws[d] [seq, batch,
    gates * hidden] (x W^T + Wb), recurrence weight rs[d] [gates * hidden, hidden] and bias rbs[d]."""
    work = xws[0].dtype
    seq, batch = xws[0].shape[:2]
    n_dir, hidden = len(xws), rs[0].shape[-1]
    lens = np.full(batch, seq) if lens is None else np.asarray(lens).astype(np.int64)
    if lens.shape != (batch,) or (lens < 0).any() or (lens > seq).any():
        raise OperandError(f"sequence_lens {lens.tolist()} must hold {batch} lengths (one per batch entry) "
                           f"within 0..{seq}")
    states, p = _states(op, attrs, h0, c0, p, n_dir, batch, hidden, work)
    clip = _clipped(attrs.get("clip"))
    reverse = [attrs.get("direction", "forward") == "reverse", True][:n_dir]
    ys, hs, cs = [], [], []
    for d, acts in enumerate(_activations(op, attrs)):
        def cell(xw_t, h, c, rd=rs[d].astype(work), rb=rbs[d].astype(work), pd=p[d].astype(work), acts=acts):
            return _CELLS[op](xw_t, h, c, rd, rb, pd, acts, clip, attrs)
        y, h, c = _scan(cell, xws[d], states[0][d], states[1][d], lens, reverse[d])
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y = np.stack(ys, axis=1)                      # [seq, num_directions, batch, hidden]
    finals = [np.stack(hs), np.stack(cs)][:2 if op == "LSTM" else 1]
    if attrs.get("layout", 0) == 1:
        y = np.transpose(y, (2, 0, 1, 3))
        finals = [np.swapaxes(s, 0, 1) for s in finals]
    return [np.asarray(v, dtype=dtype) for v in [y, *finals]]


def _run(op: str):
    def run(inputs, attrs):
        arg = (lambda i: inputs[i] if len(inputs) > i and inputs[i] is not None else None)
        x, w, r = inputs[0], inputs[1], inputs[2]
        # float16 steps in float32, so the recurrence does not compound half-precision rounding
        work = np.promote_types(x.dtype, np.float32)
        x = (np.swapaxes(x, 0, 1) if attrs.get("layout", 0) == 1 else x).astype(work)
        n_dir, gates = w.shape[0], _SHAPE[op][0]
        hidden = r.shape[-1]
        b = arg(3) if arg(3) is not None else np.zeros((n_dir, 2 * gates * hidden))
        xws = [x @ w[d].astype(work).T + b[d, :gates * hidden].astype(work) for d in range(n_dir)]
        return _recur(op, attrs, xws, [r[d] for d in range(n_dir)], [b[d, gates * hidden:] for d in range(n_dir)],
                      arg(5), arg(6) if op == "LSTM" else None, arg(7), arg(4), inputs[0].dtype)
    return run


# -- the recurrence alone: "LSTMScan", "GRUScan", "RNNScan" -----------------------------------
# The CPU pipeline splits a recurrent op in two (compiler/graph/passes/recurrent.py): the input
# projection of every step at once, a matmul, and the recurrence, which only this op can state.
# Inputs: XW [seq, batch, num_directions * gates * hidden] (batch first with layout 1: x W^T + Wb,
# the directions side by side), RT [num_directions, hidden, gates * hidden] (R transposed, so a
# kernel reads a step's gates in vectors), RB [num_directions, gates * hidden] (R's bias), then
# the optional initial_h, initial_c and P (LSTM only) and sequence_lens. Attributes and outputs:
# the op's.

def scan_op(op: str) -> str:
    return f"{op}Scan"


def _run_scan(op: str):
    def run(inputs, attrs):
        arg = (lambda i: inputs[i] if len(inputs) > i and inputs[i] is not None else None)
        xw, rt, rb = inputs[0], inputs[1], inputs[2]
        xw = np.swapaxes(xw, 0, 1) if attrs.get("layout", 0) == 1 else xw
        n_dir, size = rt.shape[0], rt.shape[2]
        xws = [xw[..., d * size:(d + 1) * size] for d in range(n_dir)]
        lens = arg(6) if op == "LSTM" else arg(4)
        return _recur(op, attrs, xws, [rt[d].T for d in range(n_dir)], [rb[d] for d in range(n_dir)],
                      arg(3), arg(4) if op == "LSTM" else None, arg(5) if op == "LSTM" else None, lens, xw.dtype)
    return run


def _scan_types(op: str):
    def rule(inputs, attrs):
        xw, rt = inputs[0], inputs[1]
        if xw.ndim != 3 or rt.ndim != 3 or xw.shape[2] != rt.shape[0] * rt.shape[2] \
                or rt.shape[2] != _SHAPE[op][0] * rt.shape[1]:
            raise OperandError(f"XW {list(xw.shape)} and RT {list(rt.shape)}: expected [seq, batch, directions * "
                               f"{_SHAPE[op][0]} * hidden] and [directions, hidden, {_SHAPE[op][0]} * hidden]")
        n_dir, hidden = rt.shape[0], rt.shape[1]
        seq, batch = xw.shape[:2] if attrs.get("layout", 0) == 0 else xw.shape[1::-1]
        layout0 = attrs.get("layout", 0) == 0
        state = (n_dir, batch, hidden) if layout0 else (batch, n_dir, hidden)
        y = (seq, n_dir, batch, hidden) if layout0 else (batch, seq, n_dir, hidden)
        dtype = dtype_name(xw)
        return [(y, dtype), (state, dtype)] + ([(state, dtype)] if op == "LSTM" else [])
    return rule


def _types(op: str):
    def rule(inputs, attrs):
        x, w, r = inputs[0], inputs[1], inputs[2]
        gates, n_dir = _SHAPE[op][0], _num_directions(attrs)
        if x.ndim != 3:
            raise OperandError(f"X has shape {list(x.shape)}; it must be 3-D")
        seq, batch, size = x.shape if attrs.get("layout", 0) == 0 else (x.shape[1], x.shape[0], x.shape[2])
        hidden = int(r.shape[-1]) if r.ndim == 3 else -1
        state = (n_dir, batch, hidden) if attrs.get("layout", 0) == 0 else (batch, n_dir, hidden)
        expected = {0: ("X", None), 1: ("W", (n_dir, gates * hidden, size)),
                    2: ("R", (n_dir, gates * hidden, hidden)), 3: ("B", (n_dir, 2 * gates * hidden)),
                    4: ("sequence_lens", (batch,)), 5: ("initial_h", state), 6: ("initial_c", state),
                    7: ("P", (n_dir, 3 * hidden))}
        for i, v in enumerate(inputs[:8]):
            name, shape = expected[i]
            if v is not None and shape is not None and tuple(v.shape) != shape:
                raise OperandError(f"{name} has shape {list(v.shape)}; {op} with direction "
                                   f"{attrs.get('direction', 'forward')!r}, X {list(x.shape)} and hidden size "
                                   f"{hidden} (from R) needs {list(shape)}")
        if attrs.get("hidden_size", hidden) != hidden:
            raise OperandError(f"hidden_size={attrs['hidden_size']} but R {list(r.shape)} has hidden size {hidden}")
        _activations(op, attrs)
        dtype = dtype_name(x)
        y = (seq, n_dir, batch, hidden) if attrs.get("layout", 0) == 0 else (batch, seq, n_dir, hidden)
        return [(y, dtype), (state, dtype)] + ([(state, dtype)] if op == "LSTM" else [])
    return rule


DEFS: dict[str, OpDef] = {op: OpDef(_run(op), _types(op), unsupported=unsupported) for op in _SHAPE}
DEFS.update({scan_op(op): OpDef(_run_scan(op), _scan_types(op), unsupported=unsupported) for op in _SHAPE})
