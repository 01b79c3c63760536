"""Reductions and the ops that reduce along an axis or contract over one, of the default ONNX
domain: the Reduce* family (ReduceMean is the older table's, nn.py), ArgMax/ArgMin, CumSum/CumProd,
TopK, Einsum, Det, and the integer products MatMulInteger, ConvInteger with DynamicQuantizeLinear."""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .axes import normalize_axis
from .errors import OperandError
from .nn import conv, pool_output_size
from .opdef import OpDef, broadcast_shape, dtype_name


# -- Reduce*: axes an attribute (older opsets) or a constant input (ReduceSum 13, the rest 18) -----

def _reduced_axes(rank: int, inputs, attrs) -> list[int] | None:
    """The axes reduced over (sorted, each once); None: the op is the identity."""
    axes = operand(inputs, 1, attrs, "axes")
    if axes is None or (isinstance(axes, list) and not axes):
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    # onnxruntime accepts an axis named twice (it is reduced once); out-of-range axes are errors
    return sorted({normalize_axis(a, rank, "axes entry") for a in np.atleast_1d(axes).tolist()})


def _reduced_shape(shape, axes, keepdims) -> tuple:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _accumulator(dtype):
    """Floats sum in float64 (the result is cast back); integers in numpy's own wider type."""
    return np.float64 if np.issubdtype(dtype, np.floating) else None


def _lowest(dtype, of_max: bool = True):
    """The identity of max (the lowest value), or of min (the highest): an empty set's result."""
    if dtype == np.bool_:
        return not of_max
    if np.issubdtype(dtype, np.floating):
        return -np.inf if of_max else np.inf
    info = np.iinfo(dtype)
    return info.min if of_max else info.max


def _log_sum_exp(x, axes, keepdims):
    xs = x.astype(np.float64)
    if xs.size == 0:
        return np.log(np.sum(np.exp(xs), axis=axes, keepdims=keepdims))
    peak = np.max(xs, axis=axes, keepdims=True)
    shift = np.where(np.isfinite(peak), peak, 0)        # an all -inf slice stays -inf, not NaN
    total = np.log(np.sum(np.exp(xs - shift), axis=axes, keepdims=True)) + shift
    return total if keepdims else np.squeeze(total, axis=axes)


_REDUCERS = {
    "ReduceSum": lambda x, ax, k: np.sum(x, axis=ax, keepdims=k, dtype=_accumulator(x.dtype)),
    "ReduceProd": lambda x, ax, k: np.prod(x, axis=ax, keepdims=k, dtype=_accumulator(x.dtype)),
    "ReduceMax": lambda x, ax, k: np.max(x, axis=ax, keepdims=k, initial=_lowest(x.dtype)),
    "ReduceMin": lambda x, ax, k: np.min(x, axis=ax, keepdims=k, initial=_lowest(x.dtype, of_max=False)),
    "ReduceL1": lambda x, ax, k: np.sum(np.abs(x), axis=ax, keepdims=k, dtype=_accumulator(x.dtype)),
    "ReduceL2": lambda x, ax, k: np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=ax, keepdims=k)),
    "ReduceSumSquare": lambda x, ax, k: np.sum(np.square(x), axis=ax, keepdims=k, dtype=_accumulator(x.dtype)),
    "ReduceLogSum": lambda x, ax, k: np.log(np.sum(x, axis=ax, keepdims=k, dtype=np.float64)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reduce(name: str) -> OpDef:
    fn = _REDUCERS[name]

    def run(inputs, attrs):
        x = inputs[0]
        axes = _reduced_axes(x.ndim, inputs, attrs)
        # no axes with noop_with_empty_axes: no reduction, but the elementwise part still applies
        # (ReduceSumSquare squares, ReduceL1 takes the absolute value)
        with np.errstate(divide="ignore"):       # the log of an empty (zero) sum is -inf
            out = fn(x, () if axes is None else tuple(axes), bool(attrs["keepdims"]))
        return [np.asarray(out).astype(x.dtype)]

    def types(inputs, attrs):
        x = inputs[0]
        axes = _reduced_axes(x.ndim, inputs, attrs)
        shape = tuple(x.shape) if axes is None else _reduced_shape(x.shape, axes, attrs["keepdims"])
        return [(shape, dtype_name(x))]
    return OpDef(run, types, constant_operands={1: "axes"})


# -- ArgMax, ArgMin ---------------------------------------------------------------------------------

def _arg(pick):
    def run(inputs, attrs):
        x = inputs[0]
        axis = normalize_axis(attrs["axis"], x.ndim)
        if x.shape[axis] == 0:
            raise OperandError(f"axis {attrs['axis']} of the input {list(x.shape)} is empty: it has no {pick.__name__}")
        if attrs.get("select_last_index", 0):   # (opset 12)
            index = x.shape[axis] - 1 - pick(np.flip(x, axis), axis=axis)
        else:
            index = pick(x, axis=axis)
        index = index.astype(np.int64)
        return [np.expand_dims(index, axis) if attrs["keepdims"] else index]

    def types(inputs, attrs):
        x = inputs[0]
        axis = normalize_axis(attrs["axis"], x.ndim)
        return [(_reduced_shape(x.shape, [axis], attrs["keepdims"]), "int64")]
    return OpDef(run, types)


# -- CumSum, CumProd --------------------------------------------------------------------------------

def _scalar_axis(inputs, attrs, rank: int) -> int:
    axis = operand(inputs, 1, attrs, "axis")
    if isinstance(axis, list):
        if len(axis) != 1:
            raise OperandError(f"axis {axis} must be a single value")
        axis = axis[0]
    return normalize_axis(axis, rank)


def _cumulative(accumulate, identity):
    """CumSum (np.cumsum, 0) or CumProd (np.cumprod, 1): the running total in x's own dtype, as the
    ONNX loops accumulate."""
    def run(inputs, attrs):
        x = inputs[0]
        axis = _scalar_axis(inputs, attrs, x.ndim)
        xs = np.flip(x, axis) if attrs["reverse"] else x
        out = accumulate(xs, axis=axis, dtype=x.dtype)
        if attrs["exclusive"] and out.shape[axis]:  # each total without its own element: shifted one step
            lead = np.full_like(np.take(out, [0], axis=axis), identity)
            out = np.concatenate([lead, np.take(out, range(out.shape[axis] - 1), axis=axis)], axis=axis)
        return [np.ascontiguousarray(np.flip(out, axis) if attrs["reverse"] else out)]
    return run


def _cumulative_types(inputs, attrs):
    x = inputs[0]
    _scalar_axis(inputs, attrs, x.ndim)
    return [(tuple(x.shape), dtype_name(x))]


# -- TopK -------------------------------------------------------------------------------------------

def _topk_k(inputs, attrs, shape, axis: int) -> int:
    k = operand(inputs, 1, attrs, "k")
    if isinstance(k, list):
        if len(k) != 1:
            raise OperandError(f"K {k} must hold a single value")
        k = k[0]
    if not 0 <= k <= shape[axis]:
        raise OperandError(f"K {k} must be in 0..{shape[axis]}, the length of axis {axis} of the input {list(shape)}")
    return int(k)


def _topk(inputs, attrs):
    x = inputs[0]
    axis = normalize_axis(attrs["axis"], x.ndim)
    k = _topk_k(inputs, attrs, x.shape, axis)
    n = x.shape[axis]
    if attrs["largest"]:
        # a stable ascending sort of the reversed axis, read backwards: descending, and among equal
        # values the lower original index first (ONNX's tie rule)
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    # sorted=0 leaves the order to the implementation: the sorted one serves
    index = np.take(order, range(k), axis=axis).astype(np.int64)
    return [np.take_along_axis(x, index, axis=axis), index]


def _topk_types(inputs, attrs):
    x = inputs[0]
    axis = normalize_axis(attrs["axis"], x.ndim)
    shape = tuple(_topk_k(inputs, attrs, x.shape, axis) if i == axis else d for i, d in enumerate(x.shape))
    return [(shape, dtype_name(x)), (shape, "int64")]


# -- Einsum -----------------------------------------------------------------------------------------

def _einsum_shape(equation: str, shapes) -> tuple:
    """The output shape of numpy's einsum for `equation` on operands of `shapes`."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise OperandError(f"equation {equation!r} names {len(terms)} operands; the node has {len(shapes)}")
    sizes, ellipses, counts = {}, [], {}
    for term, shape in zip(terms, shapes):
        head, dots, tail = term.partition("...")
        n_ellipsis = len(shape) - len(head) - len(tail)
        if n_ellipsis < 0 or (not dots and n_ellipsis):
            raise OperandError(f"equation term {term!r} does not fit an operand of shape {list(shape)}")
        dims = list(zip(head, shape[:len(head)])) + list(zip(tail, shape[len(shape) - len(tail):]))
        if dots:
            ellipses.append(tuple(shape[len(head):len(head) + n_ellipsis]))
        for letter, d in dims:
            counts[letter] = counts.get(letter, 0) + 1
            if sizes.get(letter, 1) != 1 and d not in (1, sizes[letter]):
                raise OperandError(f"equation {equation!r}: index {letter!r} has lengths {sizes[letter]} and {d}")
            sizes[letter] = max(sizes.get(letter, d), d)
    batch = broadcast_shape(*ellipses) if ellipses else ()
    if not arrow:       # implicit output: the broadcast dims, then the indices named once, sorted
        rhs = "..." + "".join(sorted(k for k, c in counts.items() if c == 1))
    head, dots, tail = rhs.partition("...")
    if dots and not ellipses and batch:
        raise OperandError(f"equation {equation!r} has '...' in its output but not in its operands")
    for letter in head + tail:
        if letter not in sizes:
            raise OperandError(f"equation {equation!r}: output index {letter!r} names no operand index")
    return tuple(sizes[c] for c in head) + (tuple(batch) if dots else ()) + tuple(sizes[c] for c in tail)


def _einsum(inputs, attrs):
    out = np.einsum(attrs["equation"].replace(" ", ""), *inputs)
    return [np.asarray(out).astype(inputs[0].dtype)]


def _einsum_types(inputs, attrs):
    return [(_einsum_shape(attrs["equation"], [x.shape for x in inputs]), dtype_name(inputs[0]))]


# -- Det --------------------------------------------------------------------------------------------

def _det_types(inputs, attrs):
    x = inputs[0]
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise OperandError(f"input {list(x.shape)} must be [*, M, M]: square matrices in its last two dims")
    return [(tuple(x.shape[:-2]), dtype_name(x))]


def _det(inputs, attrs):
    x = inputs[0]
    _det_types(inputs, attrs)
    # LU in float64 (numpy has no float16 one), rounded once to the input's dtype
    return [np.asarray(np.linalg.det(x.astype(np.float64)), dtype=x.dtype)]


# -- MatMulInteger, ConvInteger, DynamicQuantizeLinear ----------------------------------------------

def _less_zero_point(x, zero_point, per_row: bool = False):
    """x - zero_point in int32; a per-row zero point [M] of a matrix [M, K] becomes [M, 1]."""
    x = x.astype(np.int32)
    if zero_point is None:
        return x
    zp = np.asarray(zero_point).astype(np.int32)
    if per_row and zp.ndim == 1 and zp.size > 1:
        zp = zp.reshape(-1, 1)
    return x - zp


def _matmul_shape(a, b) -> tuple:
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if not a or not b or a2[-1] != b2[-2]:
        raise OperandError(f"cannot multiply shapes {list(a)} and {list(b)}")
    out = broadcast_shape(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    return out[:-2] + out[-1:] if len(a) == 1 else out[:-1] if len(b) == 1 else out


def _matmul_integer(inputs, attrs):
    a, b = inputs[0], inputs[1]
    a_zp = inputs[2] if len(inputs) > 2 else None
    b_zp = inputs[3] if len(inputs) > 3 else None
    return [np.matmul(_less_zero_point(a, a_zp, per_row=a.ndim >= 2), _less_zero_point(b, b_zp))]


def _matmul_integer_types(inputs, attrs):
    return [(_matmul_shape(inputs[0].shape, inputs[1].shape), "int32")]


def _conv_window(x_shape, w_shape, attrs) -> dict:
    """strides, dilations, pads (auto_pad resolved) and group of a ConvInteger on these shapes."""
    nd = len(x_shape) - 2
    if nd < 1 or len(w_shape) != nd + 2:
        raise OperandError(f"input {list(x_shape)} and weights {list(w_shape)} must both be [N, C, spatial...] "
                           "with the same spatial rank")
    group = attrs["group"]
    if group < 1 or x_shape[1] != w_shape[1] * group or w_shape[0] % group:
        raise OperandError(f"group {group}: the input's {x_shape[1]} channels must be the weights' "
                           f"{w_shape[1]} per group times the groups, which must divide {w_shape[0]} filters")
    kernel = list(w_shape[2:])
    if attrs.get("kernel_shape") and list(attrs["kernel_shape"]) != kernel:
        raise OperandError(f"kernel_shape {attrs['kernel_shape']} disagrees with the weights {list(w_shape)}")
    strides = list(attrs.get("strides") or [1] * nd)
    dilations = list(attrs.get("dilations") or [1] * nd)
    mode = attrs["auto_pad"]
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        total = [max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
                 for size, k, s, d in zip(x_shape[2:], kernel, strides, dilations)]
        low = [t // 2 if mode == "SAME_UPPER" else t - t // 2 for t in total]
        pads = low + [t - lo for t, lo in zip(total, low)]
    elif mode == "VALID":
        pads = [0] * (2 * nd)
    elif mode == "NOTSET":
        pads = list(attrs.get("pads") or [0] * (2 * nd))
    else:
        raise OperandError(f"auto_pad {mode!r}: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    for key, value, length in (("strides", strides, nd), ("dilations", dilations, nd), ("pads", pads, 2 * nd)):
        if len(value) != length or min(value) < (0 if key == "pads" else 1):
            raise OperandError(f"{key} {value}: expected {length} {'non-negative' if key == 'pads' else 'positive'} "
                               "values")
    return {"strides": strides, "dilations": dilations, "pads": pads, "group": group}


def _conv_out_shape(x_shape, w_shape, window) -> tuple:
    nd = len(x_shape) - 2
    s, d, p = window["strides"], window["dilations"], window["pads"]
    sizes = [pool_output_size(x_shape[2 + i], w_shape[2 + i], s[i], p[i], p[nd + i], d[i]) for i in range(nd)]
    if min(sizes) < 1:
        raise OperandError(f"the weights {list(w_shape)} do not fit the padded input {list(x_shape)}")
    return (x_shape[0], w_shape[0], *sizes)


def _conv_integer(inputs, attrs):
    x, w = inputs[0], inputs[1]
    x_zp = inputs[2] if len(inputs) > 2 else None
    w_zp = inputs[3] if len(inputs) > 3 else None
    if w_zp is not None and np.ndim(w_zp) == 1 and np.size(w_zp) > 1:     # one per output channel
        w_zp = np.reshape(w_zp, (-1,) + (1,) * (w.ndim - 1))
    window = _conv_window(x.shape, w.shape, attrs)
    return [conv(_less_zero_point(x, x_zp), _less_zero_point(w, w_zp), None, window, acc_dtype=np.int32)]


def _conv_integer_types(inputs, attrs):
    x, w = inputs[0], inputs[1]
    x_zp = inputs[2] if len(inputs) > 2 else None
    w_zp = inputs[3] if len(inputs) > 3 else None
    if x_zp is not None and int(np.prod(x_zp.shape)) != 1:
        raise OperandError(f"x_zero_point {list(x_zp.shape)} must be a scalar (per-tensor)")
    if w_zp is not None and int(np.prod(w_zp.shape)) not in (1, w.shape[0]):
        raise OperandError(f"w_zero_point {list(w_zp.shape)} must be a scalar or one value per output channel "
                           f"({w.shape[0]})")
    return [(_conv_out_shape(x.shape, w.shape, _conv_window(x.shape, w.shape, attrs)), "int32")]


def _dynamic_quantize(inputs, attrs):
    x = inputs[0].astype(np.float32)
    low = min(np.float32(0), x.min()) if x.size else np.float32(0)
    high = max(np.float32(0), x.max()) if x.size else np.float32(0)
    scale = np.float32((high - low) / np.float32(255))
    if scale == 0:      # an all-zero input: the formula divides by 0; onnxruntime answers scale 1
        return [np.zeros(x.shape, np.uint8), np.asarray(1, np.float32), np.asarray(0, np.uint8)]
    zero_point = np.uint8(np.clip(np.rint(-low / scale), 0, 255))
    y = np.clip(np.rint(x / scale) + zero_point, 0, 255).astype(np.uint8)
    return [y, np.asarray(scale), np.asarray(zero_point)]


def _dynamic_quantize_types(inputs, attrs):
    return [(tuple(inputs[0].shape), "uint8"), ((), "float32"), ((), "uint8")]


DEFS: dict[str, OpDef] = {
    **{name: _reduce(name) for name in _REDUCERS},
    "ArgMax": _arg(np.argmax),
    "ArgMin": _arg(np.argmin),
    "CumSum": OpDef(_cumulative(np.cumsum, 0), _cumulative_types, constant_operands={1: "axis"}),
    "CumProd": OpDef(_cumulative(np.cumprod, 1), _cumulative_types, constant_operands={1: "axis"}),
    "TopK": OpDef(_topk, _topk_types, constant_operands={1: "k"}),
    "Einsum": OpDef(_einsum, _einsum_types),
    "Det": OpDef(_det, _det_types),
    "MatMulInteger": OpDef(_matmul_integer, _matmul_integer_types),
    "ConvInteger": OpDef(_conv_integer, _conv_integer_types),
    "DynamicQuantizeLinear": OpDef(_dynamic_quantize, _dynamic_quantize_types),
}
