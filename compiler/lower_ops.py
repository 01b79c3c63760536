"""IR node -> tensor expression, one rule per op, on vdla.compiler.topi.

`group_to_te` turns a top-level node (a fused group or a single op) into placeholders for its
arguments and the topi expressions of its body. A rule raises NotLowerable when topi has no
form for the node (an op it lacks, a rank or attribute it does not cover); the node then
stays a numpy host step and the message is recorded.
"""
from __future__ import annotations

import functools

import numpy as np

from . import te, topi
from .graph.ir import Graph, Node
from .topi.resize import resize_nchw
from .topi.norm import layer_norm
from .topi import vdla_edge
from .topi.recurrent import recurrent_scan
from .tir.stmt import Buffer
from vdla.driver.host_ops.recurrent import GATES, scan_op
from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE, QUANTIZE
from vdla.driver.host_ops.vdla.matmul import QUANTIZE_WEIGHTS

_FLOAT = {"float32"}
_KERNEL_DTYPES = {"float32", "int32", "int8", "uint8", "int64", "bool"}


# Control flow, not an error: build_or_reason and the CPU tuner catch it and keep the node a
# host step, so it never leaves the compiler and stays off the VdlaError tree (vdla.hw.errors).
class NotLowerable(Exception):
    """This node stays a host step; the message says why."""


def build_or_reason(build, failure: str = "BUILD FAILED"):
    """(build(), None), or (None, why the node stays a host step): NotLowerable says why itself;
    any other exception is a tensor-compiler failure, reported under `failure` so the model
    still runs and the failure is visible in the compile report."""
    try:
        return build(), None
    except NotLowerable as why:
        return None, str(why)
    except Exception as exc:
        return None, f"{failure}: {type(exc).__name__}: {exc}"


def _require(cond: bool, why: str) -> None:
    if not cond:
        raise NotLowerable(why)


def _channel_bias(out, bias):
    """out[N, C, ...] + bias[C]: a per-channel add that the anchor's schedule inlines."""
    return te.compute(out.shape, lambda *i: out(*i) + bias(i[1]), name="bias_add",
                      tag=topi.tags.BROADCAST)


def _conv(node: Node, ins, graph):
    x, w = ins[0], ins[1]
    a = node.attrs
    _require(len(x.shape) == 4, "only 2-D convolutions have kernels")
    _require(x.dtype in _FLOAT, f"conv kernels are float32 (got {x.dtype})")
    y = topi.conv2d_nchw(x, w, strides=a["strides"], pads=a["pads"], dilations=a["dilations"],
                         groups=a["group"])
    return [_channel_bias(y, ins[2]) if len(ins) > 2 and ins[2] is not None else y]


def _gemm(node: Node, ins, graph):
    """Any Gemm: the transposes are injective producers the schedule inlines; alpha and beta
    scale in the epilogue (canonicalize_gemm has already folded them for constant weights)."""
    a = node.attrs
    x, w = ins[0], ins[1]
    if a.get("transA", 0):
        x = topi.transpose(x, [1, 0])
    if not a.get("transB", 0):
        w = topi.transpose(w, [1, 0])
    bias = ins[2] if len(ins) > 2 else None
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if bias is not None and not isinstance(bias, te.Tensor):
        bias = None if bias == 0 else bias  # a 0-d constant bias is a literal
    # topi.dense reads bias[j] for every output column: only a full-length bias may go there
    fold_bias = isinstance(bias, te.Tensor) and tuple(bias.shape) == (w.shape[0],) \
        and alpha == 1.0 and beta == 1.0
    y = topi.dense(x, w, bias if fold_bias else None)
    if alpha != 1.0:
        y = topi.multiply(y, float(alpha))
    if bias is not None and not fold_bias:
        y = topi.add(y, topi.multiply(bias, float(beta)) if beta != 1.0 and isinstance(bias, te.Tensor)
                     else (bias * beta if not isinstance(bias, te.Tensor) else bias))
    return [y]


def _batch_norm(node: Node, ins, graph):
    _require(all(isinstance(t, te.Tensor) for t in ins[:5]), "BatchNormalization with literal params")
    return [topi.batch_norm_inference(*ins[:5], epsilon=node.attrs.get("epsilon", 1e-5), axis=1)]


def _matmul(node: Node, ins, graph):
    _require(len(ins[0].shape) >= 2 and len(ins[1].shape) >= 2, "MatMul of 1-D operands")
    return [topi.matmul(ins[0], ins[1])]


def _matmul_panels(node: Node, ins, graph):
    return [topi.matmul_panels(ins[0], ins[1])]


def _layout(node: Node) -> str:
    return "NCHWc" if node.op.endswith("NCHWc") else "NCHW"


def _pool(node: Node, ins, graph):
    a, x, layout = node.attrs, ins[0], _layout(node)
    _require(len(x.shape) == (5 if layout == "NCHWc" else 4), "only 2-D pooling has kernels")
    if node.op.startswith("MaxPool"):
        return [topi.max_pool2d(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"],
                                bool(a.get("ceil_mode", 0)), layout=layout)]
    _require(all(d == 1 for d in a["dilations"]), "dilated AveragePool")
    return [topi.avg_pool2d(x, a["kernel_shape"], a["strides"], a["pads"],
                            bool(a.get("count_include_pad", 0)), bool(a.get("ceil_mode", 0)),
                            layout=layout)]


def _global_pool(node: Node, ins, graph):
    layout = _layout(node)
    _require(len(ins[0].shape) == (5 if layout == "NCHWc" else 4), "only 2-D global pooling has kernels")
    fn = topi.global_avg_pool2d if node.op.startswith("GlobalAverage") else topi.global_max_pool2d
    return [fn(ins[0], layout=layout)]


SOFTMAX_LANES = 16   # the CPU's softmax reduces rows in vectors (topi.softmax's `lanes`)


def _softmax(node: Node, ins, graph, lanes: int | None = SOFTMAX_LANES):
    x = ins[0]
    axis = node.attrs.get("axis", -1) % len(x.shape)
    _require(not node.attrs.get("coerce_2d") or axis == len(x.shape) - 1,
             f"opset < 13 {node.op} over several axes")
    _require(x.dtype in _FLOAT, f"{node.op} kernels are float32 (got {x.dtype})")
    return [topi.softmax(x, axis=axis, lanes=lanes, log=node.op == "LogSoftmax")]


def _reduce(fn, float_only: bool = False):
    """ReduceMean/Sum/Max/Min and the norms; axes already an attribute (absorb_constant_operands)."""
    def rule(node: Node, ins, graph):
        x, a = ins[0], node.attrs
        axes = np.atleast_1d(a["axes"]).tolist() if a.get("axes") is not None else []
        _require(axes or not a.get("noop_with_empty_axes"), f"no-op {node.op}")
        _require(x.dtype != "bool", f"{node.op} of bool")
        _require(not float_only or x.dtype in _FLOAT, f"{node.op} kernels are float32 (got {x.dtype})")
        axes = sorted({int(v) % len(x.shape) for v in axes}) or None    # an axis named twice is reduced once
        return [fn(x, axes, bool(a.get("keepdims", 1)))]
    return rule


def _layer_norm(node: Node, ins, graph):
    x, a = ins[0], node.attrs
    _require(x.dtype in _FLOAT, f"LayerNormalization kernels are float32 (got {x.dtype})")
    _require(a["axis"] % len(x.shape) == len(x.shape) - 1, "LayerNormalization over more than the last axis")
    _require(all(node.outputs), "LayerNormalization with a skipped optional output")
    bias = ins[2] if len(ins) > 2 else None
    return list(layer_norm(x, ins[1], bias, a["epsilon"]))[:len(node.outputs)]


def _binary(fn):
    def rule(node: Node, ins, graph):
        tensors = [t for t in ins if isinstance(t, te.Tensor)]
        _require(bool(tensors), f"{node.op} of two literals")
        _require(tensors[0].dtype in _FLOAT or node.op != "Div", "integer Div (ONNX truncates)")
        return [fn(ins[0], ins[1])]
    return rule


def _pad(node: Node, ins, graph):
    a, rank = node.attrs, len(ins[0].shape)
    _require(a.get("mode", "constant") == "constant", f"Pad mode {a.get('mode')!r}")
    _require(a.get("axes") is None, "Pad with axes")
    pads = a["pads"]
    _require(min(pads) >= 0, "negative Pad (crop)")
    value = a.get("constant_value", 0) or 0
    return [topi.pad(ins[0], pads[:rank], pads[rank:], value)]


def _slice(node: Node, ins, graph):
    a = node.attrs
    return [topi.strided_slice(ins[0], a["starts"], a["ends"], a.get("axes"), a.get("steps"))]


def _split(node: Node, ins, graph):
    from vdla.driver.host_ops.shape import split_sizes
    x = ins[0]
    axis = node.attrs.get("axis", 0) % len(x.shape)
    sizes = split_sizes(x.shape[axis], node.attrs.get("split"), node.attrs["num_outputs"])
    return topi.split(x, sizes, axis)


def _unary(fn):
    return lambda node, ins, graph: [fn(ins[0])]


def _clip(node: Node, ins, graph):
    return [topi.clip(ins[0], node.attrs.get("min"), node.attrs.get("max"))]


def _conv_nchwc(node: Node, ins, graph):
    a = node.attrs
    if a.get("depthwise"):
        return [topi.depthwise_conv2d_nchwc(ins[0], ins[1], strides=a["strides"], pads=a["pads"],
                                            dilations=a["dilations"])]
    return [topi.conv2d_nchwc(ins[0], ins[1], strides=a["strides"], pads=a["pads"], dilations=a["dilations"],
                              groups=a.get("groups", 1))]


def _conv_winograd_nchwc(node: Node, ins, graph):
    return [topi.conv2d_nchwc_winograd(ins[0], ins[1], pads=node.attrs["pads"])]


def _scalar_quant_params(node: Node, ins):
    scale = ins[1]
    zero = ins[2] if len(ins) > 2 and ins[2] is not None else 0
    _require(not isinstance(scale, te.Tensor) and not isinstance(zero, te.Tensor),
             f"{node.op} with per-axis or runtime scale/zero point")
    return float(scale), zero


def _quantize(node: Node, ins, graph):
    scale, zero = _scalar_quant_params(node, ins)
    _require(ins[0].dtype in _FLOAT, f"QuantizeLinear of {ins[0].dtype}")
    return [topi.quantize(ins[0], scale, zero, graph.types[node.outputs[0]].dtype)]


def _dequantize(node: Node, ins, graph):
    scale, zero = _scalar_quant_params(node, ins)
    _require(ins[0].dtype in ("int8", "uint8"), f"DequantizeLinear of {ins[0].dtype}")
    return [topi.dequantize(ins[0], scale, zero, graph.types[node.outputs[0]].dtype)]


def _qconv_int8(node: Node, ins, graph, signed: bool = False):
    """signed: products of x - 128 where the node has its weight sums (cpu_rules)."""
    a = node.attrs
    p = a["pads"]
    x = topi.pad(ins[0], [0, 0, p[0], p[1], 0], [0, 0, p[2], p[3], 0], a.get("pad_value", 0))
    return [topi.conv2d_nchwc_int8(x, ins[1], strides=a["strides"], pads=0, dilations=a["dilations"],
                                   weight_sums=ins[2] if signed and len(ins) > 2 else None)]


def _qmatmul_int8(node: Node, ins, graph, signed: bool = False):
    return [topi.matmul_int8_panels(ins[0], ins[1], weight_sums=ins[2] if signed and len(ins) > 2 else None)]


def _requantize_channels(node: Node, ins, graph):
    """saturate(round((acc + correction) * multiplier) + zero_point), in float32."""
    acc, correction, multiplier = ins[:3]
    info = np.iinfo(node.attrs["dtype"])
    scaled = topi.multiply(topi.cast(topi.add(acc, correction), "float32"), multiplier)
    y = topi.add(topi.round(scaled), float(node.attrs.get("zero_point", 0)))
    return [topi.cast(topi.clip(y, float(info.min), float(info.max)), node.attrs["dtype"])]


def _float_unary(fn):
    """A rule for a float-only math function: other dtypes stay host steps."""
    def rule(node: Node, ins, graph):
        _require(ins[0].dtype in _FLOAT, f"{node.op} kernels are float32 (got {ins[0].dtype})")
        return [fn(ins[0], node.attrs)]
    return rule


def _pow(node: Node, ins, graph):
    base, exponent = ins
    _require(isinstance(base, te.Tensor) and base.dtype in _FLOAT, "Pow kernels raise a float32 tensor")
    if isinstance(exponent, te.Tensor) and exponent.dtype != base.dtype:
        _require(exponent.dtype in _KERNEL_DTYPES - {"bool"}, f"Pow exponent of {exponent.dtype}")
        exponent = topi.cast(exponent, base.dtype)
    return [topi.power(base, exponent)]


def _variadic(fn):
    """Min/Max of one or more inputs, folded left."""
    def rule(node: Node, ins, graph):
        present = [t for t in ins if t is not None]
        _require(any(isinstance(t, te.Tensor) for t in present[:2]), f"{node.op} whose first operands are literals")
        if len(present) == 1:
            return [topi.identity(present[0])]
        out = present[0]
        for t in present[1:]:
            out = fn(out, t)
        return [out]
    return rule


def _gather(node: Node, ins, graph):
    """Gather of one constant index (a ViT's q/k/v and class-token picks, BERT's pooler token);
    runtime indices (an embedding lookup) stay host steps."""
    _require(not isinstance(ins[1], te.Tensor), "Gather by a runtime or non-scalar index")
    return [topi.take(ins[0], int(ins[1]), node.attrs.get("axis", 0))]


def _sum(node: Node, ins, graph):
    """Sum and Mean of one or more inputs (broadcast), added left to right."""
    present = [t for t in ins if t is not None]
    _require(isinstance(present[0], te.Tensor), f"{node.op} whose first operand is a literal")
    _require(node.op == "Sum" or present[0].dtype in _FLOAT, f"{node.op} of {present[0].dtype}")
    out = topi.identity(present[0]) if len(present) == 1 else present[0]
    for t in present[1:]:
        out = topi.add(out, t)
    return [topi.multiply(out, 1.0 / len(present)) if node.op == "Mean" else out]


def _block_move(node: Node, ins, graph):
    _require(len(ins[0].shape) == 4, f"{node.op} of a {len(ins[0].shape)}-D tensor")
    b, mode = int(node.attrs["blocksize"]), node.attrs.get("mode", "DCR")
    if node.op == "DepthToSpace":
        return [topi.depth_to_space(ins[0], b, mode)]
    return [topi.space_to_depth(ins[0], b, mode)]


def _where(node: Node, ins, graph):
    _require(isinstance(ins[0], te.Tensor), "Where with a literal condition")
    return [topi.where(*ins)]


def _edge_steps(node: Node, ins):
    """A conversion's steps operand (vdla.compiler.vdla.edge_steps made it one)."""
    _require(len(ins) > 1 and isinstance(ins[1], te.Tensor) and ins[1].dtype == "float32",
             f"{node.op} with its steps as an attribute (edge_steps makes them an operand)")
    return ins[1]


def _vdla_quantize(node: Node, ins, graph):
    a = node.attrs
    x, zp, steps = ins[0], a.get("zero_point", 0), _edge_steps(node, ins)
    _require(x.dtype in _FLOAT, f"{node.op} of {x.dtype}")
    if a.get("im2col"):
        cols = a["im2col"]
        return [vdla_edge.quantize_im2col(x, steps, a["batch"], a["block"], cols["kernel"], cols["stride"],
                                          cols["pads"], zp)]
    if a.get("matrix"):
        return [vdla_edge.quantize_matrix(x, steps, a["batch"], a["block"], zp, a.get("group_rows"))]
    _require(len(x.shape) == 4, f"{node.op} of a {len(x.shape)}-D tensor that is no matrix")
    return [vdla_edge.quantize_activation(x, steps, a["batch"], a["block"], zp, a.get("pads"))]


def _vdla_dequantize(node: Node, ins, graph):
    a = node.attrs
    return [vdla_edge.dequantize(ins[0], _edge_steps(node, ins), a["shape"], a.get("zero_point", 0),
                                 a.get("group_rows"))]


def _vdla_quantize_weights(node: Node, ins, graph):
    _require(ins[0].dtype in _FLOAT, f"{node.op} of {ins[0].dtype}")
    return [vdla_edge.quantize_weights(ins[0], _edge_steps(node, ins), node.attrs["batch_shape"],
                                       node.attrs["block"])]


RULES = {
    QUANTIZE.name: _vdla_quantize, DEQUANTIZE.name: _vdla_dequantize, QUANTIZE_WEIGHTS.name: _vdla_quantize_weights,
    "Resize": lambda n, ins, g: [resize_nchw(ins[0], n.attrs)],
    "QConvNCHWcInt8": _qconv_int8, "QMatMulInt8": _qmatmul_int8, "RequantizeChannels": _requantize_channels,
    "QuantizeLinear": _quantize, "DequantizeLinear": _dequantize,
    "ConvNCHWc": _conv_nchwc, "ConvWinogradNCHWc": _conv_winograd_nchwc,
    "LayoutPack": lambda n, ins, g: [topi.nchw_to_nchwc(ins[0], n.attrs["block"])],
    "LayoutUnpack": lambda n, ins, g: [topi.nchwc_to_nchw(ins[0])],
    "Conv": _conv, "Gemm": _gemm, "BatchNormalization": _batch_norm, "MatMul": _matmul, "MatMulPanels": _matmul_panels,
    "MaxPool": _pool, "AveragePool": _pool,
    "GlobalAveragePool": _global_pool, "GlobalMaxPool": _global_pool,
    "MaxPoolNCHWc": _pool, "AveragePoolNCHWc": _pool,
    "GlobalAveragePoolNCHWc": _global_pool, "GlobalMaxPoolNCHWc": _global_pool,
    "Softmax": _softmax, "LogSoftmax": _softmax, "ReduceMean": _reduce(topi.reduce_mean),
    # Swin-V2's cosine attention normalizes by ReduceL2; the other norms of the same family
    "ReduceL2": _reduce(lambda x, axes, keep: topi.sqrt(topi.reduce_sum(topi.multiply(x, x), axes, keep)),
                        float_only=True),
    "ReduceSumSquare": _reduce(lambda x, axes, keep: topi.reduce_sum(topi.multiply(x, x), axes, keep)),
    "ReduceL1": _reduce(lambda x, axes, keep: topi.reduce_sum(topi.abs(x), axes, keep)),
    "ReduceLogSum": _reduce(lambda x, axes, keep: topi.log(topi.reduce_sum(x, axes, keep)), float_only=True),
    "ReduceSum": _reduce(topi.reduce_sum), "ReduceMax": _reduce(topi.reduce_max),
    "ReduceMin": _reduce(topi.reduce_min), "LayerNormalization": _layer_norm,
    "Add": _binary(topi.add), "Sub": _binary(topi.subtract), "Mul": _binary(topi.multiply),
    "Div": _binary(topi.divide),
    "Relu": _unary(topi.relu), "Sigmoid": _unary(topi.sigmoid), "Tanh": _unary(topi.tanh),
    "Exp": _unary(topi.exp), "HardSwish": _unary(topi.hard_swish), "Clip": _clip,
    "LeakyRelu": lambda n, ins, g: [topi.leaky_relu(ins[0], n.attrs.get("alpha", 0.01))],
    "HardSigmoid": lambda n, ins, g: [topi.hard_sigmoid(ins[0], n.attrs.get("alpha", 0.2),
                                                        n.attrs.get("beta", 0.5))],
    "Cast": lambda n, ins, g: (_require(n.attrs["to"] in _KERNEL_DTYPES and ins[0].dtype != "bool",
                                        f"Cast to {n.attrs['to']}") or [topi.cast(ins[0], n.attrs["to"])]),
    "Pad": _pad, "Slice": _slice, "Split": _split,
    "Transpose": lambda n, ins, g: [topi.transpose(ins[0], n.attrs.get("perm"))],
    "Concat": lambda n, ins, g: [topi.concat([t for t in ins if t is not None],
                                             n.attrs["axis"] % len(ins[0].shape))],
    "Neg": _unary(topi.negative), "Abs": _unary(topi.abs), "Sqrt": _float_unary(lambda x, a: topi.sqrt(x)),
    "Reciprocal": _float_unary(lambda x, a: topi.reciprocal(x)), "Erf": _float_unary(lambda x, a: topi.erf(x)),
    "Pow": _pow, "Where": _where, "Gather": _gather, "Min": _variadic(topi.minimum), "Max": _variadic(topi.maximum),
    "Equal": _binary(topi.equal), "Less": _binary(topi.less), "Greater": _binary(topi.greater),
    "LessOrEqual": _binary(topi.less_equal), "GreaterOrEqual": _binary(topi.greater_equal),
    "Gelu": _float_unary(lambda x, a: topi.gelu(x, a["approximate"])),
    "Softplus": _float_unary(lambda x, a: topi.softplus(x)),
    "Elu": _float_unary(lambda x, a: topi.elu(x, a["alpha"])),
    "Swish": _float_unary(lambda x, a: topi.swish(x, a["alpha"])),
    "PRelu": lambda n, ins, g: [topi.prelu(ins[0], ins[1])],
    "Floor": _float_unary(lambda x, a: topi.floor(x)), "Ceil": _float_unary(lambda x, a: topi.ceil(x)),
    "Round": _float_unary(lambda x, a: topi.round(x)), "Log": _float_unary(lambda x, a: topi.log(x)),
    "Softsign": _float_unary(lambda x, a: topi.softsign(x)), "Mish": _float_unary(lambda x, a: topi.mish(x)),
    "Selu": _float_unary(lambda x, a: topi.selu(x, a["alpha"], a["gamma"])),
    "Celu": _float_unary(lambda x, a: topi.celu(x, a["alpha"])),
    "ThresholdedRelu": _float_unary(lambda x, a: topi.thresholded_relu(x, a["alpha"])),
    "Sign": lambda n, ins, g: (_require(ins[0].dtype != "bool", "Sign of bool") or [topi.sign(ins[0])]),
    "Not": lambda n, ins, g: [topi.logical_not(ins[0])],
    **{op: (lambda n, ins, g: (_require(all(isinstance(t, te.Tensor) for t in ins), f"{n.op} of a literal")
                               or [topi.logical(n.op, ins[0], ins[1])])) for op in ("And", "Or", "Xor")},
    "Sum": _sum, "Mean": _sum,
    "Expand": lambda n, ins, g: [topi.broadcast_to(ins[0], n.attrs["shape"])],
    "Tile": lambda n, ins, g: [topi.tile(ins[0], [int(r) for r in n.attrs["repeats"]])],
    "DepthToSpace": _block_move, "SpaceToDepth": _block_move,
}


# The GPU's forms where they differ from the CPU's: its schedules run each reduction stage of a
# softmax as a kernel of its own, one row per block.
GPU_RULES = {op: (lambda n, ins, g: _softmax(n, ins, g, lanes=None)) for op in ("Softmax", "LogSoftmax")}


def cpu_rules(target) -> dict:
    """RULES' forms for a CPU target where its kernels differ: on x86 with AVX2 and without VNNI
    the int8 kernels multiply x - 128 as a signed byte (intrin.cpu.signed_products)."""
    from .intrin.cpu import signed_products
    if not signed_products(target):
        return {}
    return {"QConvNCHWcInt8": functools.partial(_qconv_int8, signed=True),
            "QMatMulInt8": functools.partial(_qmatmul_int8, signed=True)}


def group_to_te(graph: Graph, node: Node, args: list[str], rules: dict | None = None):
    """-> (placeholders for args then the outputs, the outputs). `rules` replace RULES' for
    their ops in this group (the GPU path's Winograd convolution)."""
    rules = {**RULES, **(rules or {})}
    body = node.body if node.op == "Fused" else [node]
    env = {}
    placeholders = []
    for i, name in enumerate(args[:len(args) - len([o for o in node.outputs if o])]):
        t = graph.types[name]
        _require(t.dtype in _KERNEL_DTYPES,
                 f"dtype {t.dtype} has no kernels")
        _require(len(t.shape) >= 1, "0-d runtime tensors have no kernels")
        _require(t.size > 0, "empty tensors need no kernel")
        env[name] = te.placeholder(t.shape, t.dtype, name=f"arg{i}")
        placeholders.append(env[name])
    for name in (n for inner in body for n in inner.inputs if n):
        if name not in env and name in graph.constants and graph.constants[name].ndim == 0:
            env[name] = graph.constants[name].item()  # a literal in the kernel
    for inner in body:
        rule = rules.get(inner.op)
        _require(rule is not None, f"no kernel rule for {inner.op}")
        ins = [env[n] if n else None for n in inner.inputs]
        try:
            outs = rule(inner, ins, graph)
        except NotLowerable:
            raise
        except (ValueError, TypeError) as exc:  # topi refused the shapes/dtypes: say so
            raise NotLowerable(f"topi rejected {inner.op}: {exc}") from exc
        for name, t in zip(inner.outputs, outs):
            if isinstance(t, te.Tensor) and any(t is p for p in placeholders):
                # topi hands an argument back for an op that changes nothing (a Pad of zeros):
                # the kernel must still write its output buffer
                t = topi.identity(t)
            want = graph.types[name]
            _require(tuple(t.shape) == want.shape and t.dtype == want.dtype,
                     f"{inner.op} kernel gives {t.dtype}{list(t.shape)}, graph has {want}")
            env[name] = t
    _require(all(graph.types[o].size > 0 for o in node.outputs if o), "empty tensors need no kernel")
    outputs = [env[o] for o in node.outputs if o]
    return placeholders + outputs, outputs


def _recurrent_scan(op: str):
    def rule(graph: Graph, node: Node, params: dict, target, name: str):
        roles = ["xw", "rt", "rb", "h0", "c0", "p", "lens"] if op == "LSTM" else ["xw", "rt", "rb", "h0", "lens"]
        bufs = {role: params.get(n) if n else None for role, n in zip(roles, node.inputs)}
        bufs.update({role: params[n] for role, n in zip(["y", "yh", "yc"], node.outputs) if n})
        _require(all(bufs.get(r) is not None for r in ("y", "yh") + (("yc",) if op == "LSTM" else ())),
                 f"{node.op} without its state outputs (the kernel keeps its state there)")
        _require(all(b.dtype == "float32" for r, b in bufs.items() if b is not None and r != "lens"),
                 f"{node.op} kernels are float32")
        return recurrent_scan(op, node.attrs, bufs, list(params.values()), target, name)
    return rule


# Ops whose kernel is loop IR built by topi directly (no tensor expression states them):
# rule(graph, node, {argument name: Buffer}, target, kernel name) -> PrimFunc.
LOOP_RULES = {scan_op(op): _recurrent_scan(op) for op in GATES}


def group_to_func(graph: Graph, node: Node, args: list[str], target, name: str):
    """The loop IR of a node in LOOP_RULES, its parameters named by `args` (kernel ABI order)."""
    params = {}
    for i, a in enumerate(args):
        t = graph.types[a]
        _require(t.size > 0, "empty tensors need no kernel")
        params[a] = Buffer(f"arg{i}", t.shape, t.dtype)
    return LOOP_RULES[node.op](graph, node, params, target, name)


def schedule(outputs, target, knobs=None):
    """The group's CPU schedule; `knobs` (a tuning record's) shape its anchor's, None: the default."""
    return topi.schedule_for(outputs, target, knobs)
