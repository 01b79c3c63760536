"""The int8 graph being built by quantization (quantize.py): each float tensor's packed int8
twin with its scale and zero point, the quantize/dequantize nodes at the accelerator's edges,
and the quantization shared by the GEMM-core ops (quantize_gemm), which the op records call."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Callable

import numpy as np

from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE, QUANTIZE
from vdla.driver.runtime.layout import pack_qparams

from ..graph.ir import Graph, Node, TensorType
from ..topi.vdla import pack_bias
from .requant import (TINY, ShiftRange, accumulator_peak, channel_peak, channel_scale, padded,
                      power_of_two_step, qdq_grid, requant_multiply, requant_residual, requant_shift,
                      requant_writeback, requant_writeback_residual, tensor_step, weight_step)
from .table import activation_table, clip_as_table, clip_table, input_grid


class KeepOnCpu(Exception):
    # (never escapes: quantize.py catches it and places the node on the CPU)
    """Raised by an op's quantize before it emits anything: the node runs on the CPU after all,
    for the reason given."""


# CPU ops whose output holds some of their input's values in the same channels (MaxPool's
# indices output aside): an accelerator tensor's codes pass through them unchanged
CHANNEL_MOVES = frozenset({"MaxPool", "Identity"})


class Quantizer:
    """The int8 graph being built: the nodes so far, and each float tensor's packed int8
    twin with its scale and zero point. The op records' quantize functions call it."""

    def __init__(self, graph: Graph, config, place, stats, vta_compat: bool = False):
        self.g, self.config, self.place, self.stats = graph, config, place, stats
        self.vta_compat = vta_compat
        self.nodes: list[Node] = []
        self.packed: dict[str, tuple[str, float]] = {}   # fp32 tensor -> (packed name, scale)
        self.zp: dict[str, int] = {}                         # packed name -> zero point (asymmetric)
        self.group_rows: dict[str, list] = {}    # packed name -> [G, M, Mp]: G groups of M rows padded to Mp
        self.plain_rows: dict[str, tuple[str, float]] = {}   # such a tensor quantized as plain rows
        self._consumers = graph.consumers()   # (before CPU nodes' inputs are renamed to their QDQ values)
        self._producer = {o: n for n in graph.nodes for o in n.outputs if o}
        self.prepadded: dict[str, tuple] = {}    # packed name -> the pads its quantization wrote
        self.im2col: dict[tuple, tuple[str, np.ndarray]] = {}   # (tensor, kernel, stride, pads) -> im2col_input
        self.fake_quantized: dict[str, str] = {}  # tensor -> its value through a QDQ model's pair
        self.materialized = set(graph.inputs) | set(graph.constants)
        self._tables: dict | None = None         # table_chain's index
        self.count = 0

    def fresh(self, stem):
        self.count += 1
        return f"{stem}.{self.count}"

    def const(self, stem, array, exact_name: bool = False):
        """A new constant named stem.N (exact_name: named `stem` itself)."""
        name = stem if exact_name else self.fresh(stem)
        self.g.constants[name] = np.ascontiguousarray(array)
        self.g.types[name] = TensorType.of(self.g.constants[name])
        return name

    def add(self, node: Node, types: dict[str, TensorType]):
        self.g.types.update(types)
        self.nodes.append(node)

    def emit(self, op, node, inputs, out, attrs, *fused):
        """The int8 node of accelerator op `op` standing for float `node` (and the nodes fused
        into it: an activation, a residual Add)."""
        self.nodes.append(Node(op.name, node.name, inputs, [out],
                               {**attrs, "source_ops": [node.op] + [f.op for f in fused if f is not None]}))

    def fused_activation(self, node):
        """The node placement fused into `node` (its activation, or a residual Add), or None."""
        users = self._consumers.get(node.outputs[0], [])
        info = self.place.get(users[0].name, {}) if len(users) == 1 else {}
        if info.get("fused_into") == node.name and not info.get("table"):
            return users[0]
        return None

    def table_chain(self, node) -> list:
        """The elementwise chain placement fused into `node` as its lookup table (table.py), in
        graph order; [] if none, or if a QDQ model quantizes the chain's output on a grid its
        readers cannot pad (a zero point other than 0 and -128, read by a padded convolution):
        then the chain goes back to the CPU, whose output the accelerator's edge quantizes and
        pads, so that the model's own grid holds (a symmetric one flips codes everywhere)."""
        if self._tables is None:        # owner -> its chain, gathered once in graph order
            self._tables = {}
            for n in self.g.nodes:
                info = self.place.get(n.name, {})
                if info.get("table"):
                    self._tables.setdefault(info["fused_into"], []).append(n)
        chain = self._tables.get(node.name, [])
        y = chain[-1].outputs[0] if chain else None
        pair = self.stats.get(y, {}).get("qdq") if chain else None
        if pair is not None and self.asymmetric(y) is None:
            why = (f"{node.name}'s activation ends on the QDQ model's grid of zero point {pair['zero_point']}, which "
                   "its padded readers need written as padding: the accelerator's edge does that, after the CPU")
            for n in chain:
                self.place[n.name] = {"device": "cpu", "reason": why, "macs": 0}
            return []
        return chain

    def lost_qdq_grid(self, inputs, outputs) -> str | None:
        """Why the accelerator would hold one of these tensors on another grid than its QDQ
        model's own (the zero point of the model's pair), or None: an input as it is packed or
        would be quantized at the edge, an output as out_scale would write it."""
        for t in [*inputs, *outputs]:
            pair = self.stats.get(t, {}).get("qdq")
            if pair is None:
                continue
            zp = qdq_grid(pair)[1]
            if t in inputs and t in self.packed:
                held = self.zp.get(self.packed[t][0], 0)
            else:
                skewed = self.asymmetric(t, boundary=t in inputs)
                held = skewed[1] if skewed is not None else 0
            if held != zp:
                return (f"{t} would be held on zero point {held} where the model's grid has {zp} (an average "
                        "pool's input, or a padded convolution's that only the accelerator's edge can pad)")
        return None

    def packed_input(self, tensor) -> tuple[str, float]:
        if tensor not in self.packed:
            self.packed[tensor] = self._quantized(tensor, f"{tensor}.q")
        elif self.packed[tensor][0] in self.group_rows:
            # rows in padded groups (a batched MatMul's output): an op of plain rows takes them
            # quantized afresh from fp32
            if tensor not in self.plain_rows:
                self.plain_rows[tensor] = self._quantized(self.float_input(tensor), self.fresh(f"{tensor}.q"))
            return self.plain_rows[tensor]
        return self.packed[tensor]

    def im2col_input(self, tensor, kernel, stride: int, pads) -> tuple[str, np.ndarray]:
        """(packed name, per-channel scale of `tensor`) of the columns a (kh, kw)/stride
        convolution reads from `tensor`, quantized at the accelerator's edge: channel
        c*kh*kw + i*kw + j holds tap (i, j) of channel c (boundary.im2col), so a convolution with
        few input channels runs as a 1x1 one over the taps packed into the lanes."""
        key = (tensor, tuple(kernel), stride, tuple(pads))
        if key in self.im2col:
            return self.im2col[key]
        cfg, t = self.config, self.g.types[tensor]
        n, c, h, w = t.shape
        scale = padded(channel_scale(self.stats, tensor, c), cfg.block)
        attrs = {"scale": scale.tolist(), "batch": cfg.batch, "block": cfg.block, "matrix": False,
                 "im2col": {"kernel": list(kernel), "stride": stride, "pads": list(pads)}}
        name = self.fresh(f"{tensor}.cols")
        skewed = self.asymmetric(tensor, boundary=True)
        if skewed is not None:       # (the columns hold the padding: any zero point reads it right)
            scale = padded(np.full(c, skewed[0]), cfg.block)
            attrs.update(scale=scale.tolist(), zero_point=skewed[1])
            self.zp[name] = skewed[1]
        oh = (h + pads[0] + pads[2] - kernel[0]) // stride + 1
        ow = (w + pads[1] + pads[3] - kernel[1]) // stride + 1
        shape = (-(-n // cfg.batch), -(-(c * kernel[0] * kernel[1]) // cfg.block), oh, ow, cfg.batch, cfg.block)
        self.add(Node(QUANTIZE.name, self.fresh(f"quantize_{tensor}"), [tensor], [name], attrs),
                 {name: TensorType(shape, "int8")})
        self.im2col[key] = (name, scale)
        return self.im2col[key]

    def _quantized(self, tensor, name) -> tuple[str, float]:
        cfg, t = self.config, self.g.types[tensor]
        matrix = len(t.shape) != 4           # held as the rows of its last dim (SPEC §7 matrix)
        n, c = (math.prod(t.shape[:-1]), t.shape[-1]) if matrix else t.shape[:2]
        scale = padded(channel_scale(self.stats, tensor, c), cfg.block)
        attrs = {"scale": scale.tolist(), "batch": cfg.batch, "block": cfg.block, "matrix": matrix}
        hw = tuple(t.shape[2:])
        moved = None if matrix else self._moved_grid(tensor)
        skewed = None if moved is not None else self.asymmetric(tensor, boundary=not matrix)
        if moved is not None:
            scale, zp = moved
            attrs.update(scale=scale.tolist(), zero_point=zp)
            self.zp[name] = zp
        elif skewed is not None:
            step, zp, pads = skewed
            scale = padded(np.full(c, step), cfg.block)
            attrs.update(scale=scale.tolist(), zero_point=zp)
            self.zp[name] = zp
            if pads is not None:
                attrs["pads"] = list(pads)
                self.prepadded[name] = pads
                hw = (hw[0] + pads[0] + pads[2], hw[1] + pads[1] + pads[3])
        nb, cb = -(-n // cfg.batch), -(-c // cfg.block)
        shape = (nb, cb, cfg.batch, cfg.block) if matrix else (nb, cb, *hw, cfg.batch, cfg.block)
        self.add(Node(QUANTIZE.name, self.fresh(f"quantize_{tensor}"), [tensor], [name], attrs),
                 {name: TensorType(shape, "int8")})
        return name, scale

    def _moved_grid(self, tensor) -> tuple[np.ndarray, int] | None:
        """(scale per channel, zero point) of the accelerator tensor whose codes the CPU moved
        into `tensor` (a ceil-mode MaxPool, say): quantized on that grid its values come back
        exactly, where a grid of its own rounds each again (SqueezeNet's three CPU max pools
        requantized into finer, clipped grids cost each next squeeze conv 1.5-3 dB). None where
        no such tensor exists, its zero point needs padding the DMA cannot write, or a QDQ model
        quantizes `tensor` on a grid of its own (the model says so)."""
        if self.stats.get(tensor, {}).get("qdq") is not None:
            return None
        source = tensor
        while source not in self.packed:
            node = self._producer.get(source)
            if node is None or node.op not in CHANNEL_MOVES or self.place.get(node.name, {}).get("device") == "vdla" \
                    or (len(node.outputs) > 1 and node.outputs[1]):
                return None
            source = node.inputs[0]
        packed, scale = self.packed[source]
        zp = self.zp.get(packed, 0)
        if source == tensor or packed in self.group_rows or np.ndim(scale) == 0:
            return None
        readers = [n for n in self._consumers.get(tensor, []) if self.place.get(n.name, {}).get("device") == "vdla"]
        if zp not in (0, -128) and any(any(n.attrs.get("pads") or ()) for n in readers):
            return None
        return np.asarray(scale, np.float64), zp

    def _joined(self, tensor) -> bool:
        """Whether a packed move reads the tensor's codes, directly or through accelerator ops that
        keep their input's grid (an upsampling or max pooling before a Concat)."""
        from .registry import op_for_source      # (the ops' modules import this one)
        for n in self._consumers.get(tensor, []):
            info = self.place.get(n.name, {})
            if info.get("packed"):
                return True
            op = op_for_source(n.op) if info.get("device") == "vdla" and not info.get("fused_into") else None
            if op is not None and not op.scales_output and self._joined(n.outputs[0]):
                return True
        return False

    def asymmetric(self, tensor, boundary: bool = False) -> tuple[float, int, tuple | None] | None:
        """(step, zero point, pads) spreading the tensor's calibrated [lo, hi] (within its chosen
        range) over all 256 codes, where that is at least 10% finer than the symmetric step: a
        SiLU or HardSwish output (>= -0.28, -0.375) used half the codes symmetrically, one bit
        lost at every such quantization. None in VTA mode (zero points only), with per-channel
        scales, or without a signed range.

        The DMA pads with zeros or the lanes' minimum (-128) only, and a padded window must read
        the code of a real zero: with another zero point, a tensor that convolutions read through
        padding takes it only at the accelerator's edge (`boundary`) and only if they all pad
        alike; the quantization then writes the padding (`pads`) and they read it unpadded."""
        info = self.stats.get(tensor, {})
        if self.vta_compat or "lo" not in info or info.get("channel_range") is not None:
            return None
        pair = info.get("qdq")
        if pair is not None:         # a QDQ model's own grid, whatever its skew: the model says so
            step, zp = qdq_grid(pair)
        else:
            r = max(float(info["range"]), TINY)
            lo, hi = min(max(float(info["lo"]), -r), 0.0), max(min(float(info["hi"]), r), 0.0)   # zero has a code
            step = max(hi - lo, TINY) / 255.0
            if step > 0.9 * r / 127.0:
                return None
            zp = int(np.clip(np.rint(-128.0 - lo / step), -128, 127))
        if pair is None and self._joined(tensor):
            return None        # a Concat joins codes of one zero point, a Split's parts may join one
        readers = [n for n in self._consumers.get(tensor, []) if self.place.get(n.name, {}).get("device") == "vdla"]
        pads = {tuple(n.attrs.get("pads") or (0, 0, 0, 0)) for n in readers}
        if zp in (0, -128) or not any(any(p) for p in pads):
            return step, zp, None
        if boundary and len(pads) == 1 and all(n.op == "Conv" for n in readers):
            return step, zp, pads.pop()
        return None

    def float_input(self, tensor):
        """The fp32 value of `tensor` for a CPU node: dequantized once if the accelerator made it."""
        if tensor in self.materialized or tensor not in self.packed:
            return tensor
        q, scale = self.packed[tensor]
        grouped = {"group_rows": self.group_rows[q]} if q in self.group_rows else {}
        self.add(Node(DEQUANTIZE.name, self.fresh(f"dequantize_{tensor}"), [q], [tensor],
                      {"scale": np.asarray(scale).tolist(), "shape": list(self.g.types[tensor].shape),
                       "zero_point": self.zp.get(q, 0), **grouped}), {})
        self.materialized.add(tensor)
        return tensor

    def cpu_input(self, tensor):
        """What a CPU node reads for `tensor`: its fp32 value (float_input), through the
        quantize-dequantize pair a QDQ model puts on it (its range's "qdq"), so that the CPU
        computes what the model says: ONNX runs those pairs, and without them the CPU's part is
        another model (closer to the float one, further from the QDQ model's own run)."""
        value = self.float_input(tensor)
        pair = self.stats.get(tensor, {}).get("qdq")
        if pair is None:
            return value
        if tensor not in self.fake_quantized:
            codes, out = self.fresh(f"{tensor}.qdq_codes"), self.fresh(f"{tensor}.qdq")
            scale = self.const(f"{tensor}.qdq_scale", np.array(pair["scale"], np.float32))
            zp = self.const(f"{tensor}.qdq_zero_point", np.array(pair["zero_point"], pair["dtype"]))
            shape = self.g.types[tensor].shape
            self.add(Node("QuantizeLinear", self.fresh(f"qdq_{tensor}"), [value, scale, zp], [codes], {}),
                     {codes: TensorType(shape, pair["dtype"])})
            self.add(Node("DequantizeLinear", self.fresh(f"dqd_{tensor}"), [codes, scale, zp], [out], {}),
                     {out: TensorType(shape, self.g.types[tensor].dtype)})
            self.fake_quantized[tensor] = out
        return self.fake_quantized[tensor]

    def output(self, tensor, shape, scale, zero_point=0):
        name = f"{tensor}.q"
        self.g.types[name] = TensorType(tuple(shape), "int8")
        self.packed[tensor] = (name, scale)
        self.zp[name] = zero_point
        return name

    def out_scale(self, tensor, channels, act):
        """(scale per channel padded to blocks, zero point) of an output. A ReLU'd output is
        non-negative: zero point -128 spreads [0, range] over all 256 codes (a scale of
        range / 255, one bit finer than symmetric); its consumers subtract the zero point and
        pad with it (LOAD pad_min)."""
        s = channel_scale(self.stats, tensor, channels)
        if act is not None and not self.vta_compat:
            return padded(s * 127.0 / 255.0, self.config.block), -128
        skewed = self.asymmetric(tensor) if act is None else None
        if skewed is not None:
            return padded(np.full(channels, skewed[0]), self.config.block), skewed[1]
        return padded(s, self.config.block), 0

    def table_out_scale(self, tensor, channels):
        """(scale padded to blocks, zero point) of a lookup table's output: one grid for every
        channel (the one table maps them all), spread over all 256 codes where that is finer."""
        skewed = self.asymmetric(tensor)
        step, zp = (skewed[0], skewed[1]) if skewed is not None else (tensor_step(self.stats, tensor), 0)
        return padded(np.full(channels, step), self.config.block), zp

    def requant(self, s_w, s_y, bias_real, acc_peak, act, z_y):
        """-> (epilogue, int32 bias, per-channel multipliers or None in VTA mode)."""
        if self.vta_compat:
            ep, bias_q = requant_shift(s_w, s_y, bias_real, act)
            return ep, bias_q, None
        return requant_multiply(s_w / s_y, bias_real, acc_peak, act, s_y, z_y)

    def identity(self, node):
        """A ReLU of a tensor that is already non-negative: the same int8 values."""
        self.packed[node.outputs[0]] = self.packed_input(node.inputs[0])

    def reshape(self, node):
        """A view (placement.pixel_view, row_view): the same bytes in the packed layouts."""
        xq, s = self.packed_input(node.inputs[0])
        xt = self.g.types[xq]
        if len(xt.shape) == 4:       # a matrix holds the rows of every view of them
            return self.identity(node)
        shape = (xt.shape[0], xt.shape[1], xt.shape[4], xt.shape[5])
        out = self.output(node.outputs[0], shape, s, self.zp.get(xq, 0))
        self.nodes.append(Node("Reshape", node.name, [xq], [out], {"shape": list(shape)}))


@dataclass(frozen=True)
class GemmForm:
    """What tells the GEMM-core ops (convolutions, dense) apart in quantization: the axis of
    the weights that meets the input's channels, the layer they compile, and how the int8
    weights are packed (SPEC §7)."""
    input_channel: Callable    # (node, weights' shape) -> the input channel of each weight (broadcastable)
    layer: Callable            # (quantizer, node, packed input name, weights) -> layer
    layer_doc: Callable        # (layer) -> its JSON form in the node's attributes
    out_shape: Callable        # (layer, config) -> the packed output's shape
    pack_weight: Callable      # (node, int8 weights, layer, block) -> packed weights
    # (quantizer, node) -> (packed input, its scale): the input as it is, or another view of it
    packed_input: Callable = lambda q, node: q.packed_input(node.inputs[0])      # noqa: E731


def quantize_gemm(q: Quantizer, op, node, act, form: GemmForm):
    """A GEMM-core node and its fused activation -> op's int8 node: the input's per-channel
    scales fold into the weights, the input's zero point into the bias, and the epilogue
    requantizes to the output's scale (requant.py). `act` may be a residual Add fused into the
    node (residual.py), with its own activation."""
    g, cfg = q.g, q.config
    x = node.inputs[0]
    residual = act if act is not None and act.op == "Add" else None
    if residual is not None:
        act = q.fused_activation(residual)
    chain = q.table_chain(node)
    y = chain[-1].outputs[0] if chain else (act or residual or node).outputs[0]
    xq, s_x = form.packed_input(q, node)
    z_x = q.zp.get(xq, 0)
    w = g.constants[node.inputs[1]].astype(np.float64)
    b = g.constants[node.inputs[2]].astype(np.float64) if len(node.inputs) > 2 and node.inputs[2] \
        else np.zeros(w.shape[0])
    s_y_padded, z_y = q.table_out_scale(y, w.shape[0]) if chain else q.out_scale(y, w.shape[0], act)
    s_y = s_y_padded[:w.shape[0]]
    if chain:      # the epilogue requantizes to the chain input's grid; the table does the rest
        s_mid, z_mid = input_grid(q.stats, node.outputs[0])
        s_acc = np.full(s_y.shape, s_mid)
    else:
        s_acc = s_y
    # the input's per-channel scales fold into the weights: acc = sum(w * s_x[c] * x_q)
    w = w * s_x[form.input_channel(node, w.shape)]
    s_w = power_of_two_step(w, s_acc, node.name) if q.vta_compat else weight_step(w, s_acc)
    per_row = (-1,) + (1,) * (w.ndim - 1)
    w_q = np.clip(np.rint(w / s_w.reshape(per_row)), -127, 127).astype(np.int8)
    layer = form.layer(q, node, xq, w)
    peak = channel_peak(q.stats, node.outputs[0], w.shape[0])   # before the activation
    # sum(w * (q - z_x)) = sum(w * q) - z_x * sum(w): the input's zero point joins the bias
    zp_term = -z_x * w_q.astype(np.int64).reshape(w_q.shape[0], -1).sum(axis=1)
    acc_peak = accumulator_peak(peak, s_w, w_q)
    L = cfg.block
    tail = []
    if residual is not None:           # the other operand, scaled to the output's grid
        rq, s_r = q.packed_input(next(t for t in residual.inputs if t != node.outputs[0]))
        s_r = np.broadcast_to(np.asarray(s_r, np.float64).reshape(-1)[:w.shape[0]], s_y.shape)
        args = (s_w / s_y, b / s_w + zp_term, acc_peak, act, s_y, z_y, s_r / s_y, q.zp.get(rq, 0))
        found = None
        if not q.vta_compat:
            try:
                found = requant_writeback_residual(*args)
            except ShiftRange:      # a residual too fine for int32's headroom: the ALU chain
                pass
        ep, bias_q, mult, rmult = found or requant_residual(*args)
        tail = [q.const(f"{node.name}.rmult", pack_bias(rmult, cfg.batch, L)), rq]
    elif chain:        # requantized to the chain's input grid, the table does the rest
        if q.vta_compat:
            ep, bias_q, mult = q.requant(s_w, s_acc, b / s_w + zp_term, acc_peak, None, z_mid)
            ep = replace(ep, lo=None, hi=None, table=True)
        else:          # on the requantizer, whose table bit looks the codes up on the way out
            ep, bias_q, mult = requant_writeback(s_w / s_acc, b / s_w + zp_term, None, s_acc, z_mid)
            ep = replace(ep, table=True)
        table = activation_table(g, chain, node.outputs[0], (s_mid, z_mid), (float(s_y[0]), z_y), q.stats)
        tail = [q.const(f"{node.name}.table", table.reshape(cfg.lut_depth, cfg.batch, L))]
    elif not q.vta_compat:
        ep, bias_q, mult = requant_writeback(s_w / s_y, b / s_w + zp_term, act, s_y, z_y)
    else:
        ep, bias_q, mult = q.requant(s_w, s_y, b / s_w + zp_term, acc_peak, act, z_y)
    out_shape = form.out_shape(layer, cfg)
    if not chain and not ep.requantizer and clip_as_table(cfg, ep, out_shape, q.vta_compat):
        tail = tail + [q.const(f"{node.name}.clip", clip_table(ep).reshape(cfg.lut_depth, cfg.batch, L))]
        ep = replace(ep, lo=None, hi=None, table=True)
    inputs = [xq, q.const(f"{node.name}.wq", form.pack_weight(node, w_q, layer, L))]
    if ep.requantizer:
        inputs.append(q.const(f"{node.name}.qparams", pack_qparams(bias_q, mult, ep.shift, ep.zero, ep.lo, ep.hi,
                                                                   cfg.batch, L, table=ep.table)))
        mult = None
    else:
        inputs.append(q.const(f"{node.name}.bias", pack_bias(bias_q, cfg.batch, L)))
    if mult is not None:
        inputs.append(q.const(f"{node.name}.mult", pack_bias(mult, cfg.batch, L)))
    out = q.output(y, out_shape, s_y_padded, z_y)
    q.emit(op, node, inputs + tail, out, {"layer": form.layer_doc(layer), "epilogue": asdict(ep)}, residual, act,
           *chain)
