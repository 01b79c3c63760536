"""Partition a float graph between the VDLA accelerator and the CPU, and quantize the
accelerator's part to int8 (post-training, from calibration ranges).

place_nodes: every node is placed on "vdla" or "cpu"; every CPU node gets the reason. The
accelerator takes convolutions (dense and depthwise) with their ReLU/Clip, residual Adds,
max pooling, global average pooling and fully connected layers; a node goes to the CPU when
the ISA cannot express it or when the board's CPU would be faster (cost estimates below).

quantize_vdla: the accelerator nodes become Vdla* nodes on int8 tensors in the SPEC §7 packed
layout (vdla.driver.host_ops.vdla states their semantics): per-channel symmetric int8
weights, symmetric int8 activations with calibrated scales, int32 biases, requantization by
a per-channel fixed-point multiplier and shifts on the ALU (the rounding folded into the
bias), clipping for ReLU/ReLU6 and the int8 range. Quantize/dequantize (with packing and
unpacking) are inserted only where a tensor crosses between the accelerator and the CPU.

VTA mode (vta_compat=True): VTA's ALU has no MUL and its DMA pads with zeros only, so
activations take zero point 0 and one scale per tensor, weights one power-of-two step of
their output's scale (requantization is a rounded shift), residual Adds and the global
average's 1/(H*W) use int8 factors (the kernels apply them on the GEMM core), and a padded
max pooling is offloaded only when its input is non-negative (zero padding is then exact).
"""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from vdla.driver.machine import same_machine
from vdla.hw.alu_ops import IMM_MAX, SHR_MAX

from ..ir import Graph, Node, TensorType

# Nominal int8 multiply-accumulates per second of the CPUs a VDLA board carries, for the
# placement estimate (a Cortex-A9 with NEON about 1 G, a Cortex-A53 about 4 G).
CPU_MACS_PER_S = {"armv7a-linux-gnueabihf": 1.0e9, "aarch64-linux-gnu": 4.0e9}
DEFAULT_BOARD_CPU = "armv7a-linux-gnueabihf"
ACCEL_EFFICIENCY = 0.8        # GEMM utilization the estimate assumes for the accelerator

_ACTIVATIONS = ("Relu", "Clip")
# functions the tensor ALU (MIN, MAX, ADD, SHR, MUL on integers) cannot compute
_NO_ALU = {"Softmax", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "HardSigmoid", "HardSwish",
           "LeakyRelu", "Div", "Pow", "ReduceMean"}


# ---- placement -----------------------------------------------------------------------------------
def _fused_activation(graph, node, consumers):
    """The Relu / Clip(min >= 0) that alone consumes `node`'s output, or None."""
    users = consumers.get(node.outputs[0], [])
    if len(users) != 1 or node.outputs[0] in graph.outputs:
        return None
    act = users[0]
    if act.op == "Relu" or (act.op == "Clip" and act.attrs.get("min") is not None and act.attrs["min"] >= 0):
        return act
    return None


def _conv_problem(graph, node, config) -> str | None:
    a = node.attrs
    x = graph.types[node.inputs[0]]
    w = graph.types[node.inputs[1]]
    if len(x.shape) != 4:
        return f"{len(x.shape) - 2}-d convolution: the accelerator's convolutions are 2-d"
    if node.inputs[1] not in graph.constants or (len(node.inputs) > 2 and node.inputs[2]
                                                 and node.inputs[2] not in graph.constants):
        return "weights computed at run time: the accelerator's weights are quantized when compiling"
    if any(d != 1 for d in a.get("dilations") or [1, 1]):
        return f"dilation {a.get('dilations')}: the accelerator's convolutions are not dilated"
    strides = a.get("strides") or [1, 1]
    if strides[0] != strides[1]:
        return f"strides {strides}: the accelerator's convolutions use one stride for both axes"
    if max(a.get("pads") or [0]) > config.isa.max_pad:
        return f"pads {a.get('pads')}: the DMA pads at most {config.isa.max_pad} elements"
    group = a.get("group", 1)
    if group != 1 and not (group == x.shape[1] == w.shape[0] and w.shape[1] == 1):
        return f"group={group}: grouped convolutions other than depthwise are not offloaded"
    return None


def _conv_macs(graph, node) -> int:
    y = graph.types[node.outputs[0]]
    w = graph.types[node.inputs[1]]
    return int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))


def _accel_seconds(graph, node, config) -> float:
    """GEMM cycles at ACCEL_EFFICIENCY with channels padded to BLOCK, at the config's clock."""
    x, y, w = (graph.types[node.inputs[0]], graph.types[node.outputs[0]], graph.types[node.inputs[1]])
    L = config.block
    ceil = lambda c: -(-c // L)           # noqa: E731
    depthwise = node.attrs.get("group", 1) > 1
    per = 1 if depthwise else ceil(x.shape[1])
    uops = ceil(y.shape[0] / config.batch) * ceil(y.shape[1]) * y.shape[2] * y.shape[3] * per * w.shape[2] * w.shape[3]
    return uops / ACCEL_EFFICIENCY / (config.clock_mhz * 1e6)


def board_cpu_rate(triple: str) -> float:
    """The board CPU's MAC rate for any spelling of its triple (aarch64-linux-gnu is the
    aarch64-unknown-linux-gnu that a board's llvmlite reports); an unknown CPU counts as the
    slowest board's."""
    rate = next((r for t, r in CPU_MACS_PER_S.items() if same_machine(t, triple)), None)
    return CPU_MACS_PER_S[DEFAULT_BOARD_CPU] if rate is None else rate


def _gemm_macs(graph, node) -> int:
    return int(np.prod(graph.types[node.outputs[0]].shape)) * graph.types[node.inputs[0]].shape[-1]


def _macs(graph, node) -> int:
    return {"Conv": _conv_macs, "Gemm": _gemm_macs}.get(node.op, lambda *_: 0)(graph, node)


def place_nodes(graph: Graph, config, board_cpu: str | None = None, vta_compat: bool = False,
                untileable: dict[str, str] | None = None) -> dict[str, dict]:
    """{node name: {"device": "vdla" | "cpu", "reason": str, "macs": int, "fused_into": name?}}.
    untileable: {node name: reason} of nodes no VDLA schedule fits (lower_vdla.untileable_kernels
    of an earlier placement's quantized graph): they and their fused activations go to the CPU."""
    consumers = graph.consumers()
    cpu_rate = board_cpu_rate(board_cpu or DEFAULT_BOARD_CPU)
    place: dict[str, dict] = {}
    nonneg: set[str] = set()          # tensors known to be >= 0 (ReLU outputs)

    def cpu(node, why, macs=0):
        place[node.name] = {"device": "cpu", "reason": why, "macs": macs}

    def vdla(node, macs=0, act=None):
        place[node.name] = {"device": "vdla", "reason": "", "macs": macs}
        if act is not None:
            place[act.name] = {"device": "vdla", "reason": "", "macs": 0, "fused_into": node.name}
            nonneg.add(act.outputs[0])

    for node in graph.nodes:
        if node.name in place:
            continue
        op = node.op
        if node.name in (untileable or {}):
            cpu(node, untileable[node.name], _macs(graph, node))
            act = _fused_activation(graph, node, consumers) if op in ("Conv", "Gemm", "Add") else None
            if act is not None:
                cpu(act, f"its producer {node.name} runs on the CPU")
            continue
        if op == "Conv":
            macs = _conv_macs(graph, node)
            problem = _conv_problem(graph, node, config)
            if problem:
                cpu(node, problem, macs)
                continue
            accel = _accel_seconds(graph, node, config)
            if accel > macs / cpu_rate:
                cpu(node, f"{graph.types[node.inputs[0]].shape[1]} input channels: cheaper on the CPU "
                          f"(~{accel * 1e3:.2f} ms on the accelerator, ~{macs / cpu_rate * 1e3:.2f} ms on "
                          f"{board_cpu or DEFAULT_BOARD_CPU})", macs)
                continue
            vdla(node, macs, _fused_activation(graph, node, consumers))
        elif op == "Gemm":
            x = graph.types[node.inputs[0]]
            macs = _gemm_macs(graph, node)
            rows = -(-x.shape[0] // config.batch)
            cols = -(-graph.types[node.outputs[0]].shape[1] // config.block)
            if node.attrs.get("transA", 0) or node.inputs[1] not in graph.constants or len(x.shape) != 2:
                cpu(node, "Gemm with a transposed or run-time operand", macs)
            elif rows * cols < 2 and config.timing.acc_raw_min_distance > 1:
                cpu(node, f"Gemm into a single accumulator element ({rows} row block x {cols} column block): "
                          "the accumulator hazard rule serializes it; cheaper on the CPU", macs)
            else:
                vdla(node, macs, _fused_activation(graph, node, consumers))
        elif op == "Add":
            a, b = (graph.types[n] for n in node.inputs)
            if a.shape != b.shape or len(a.shape) != 4 or any(n in graph.constants for n in node.inputs):
                cpu(node, "Add with broadcasting or a constant operand: the ALU adds two tensors of one shape")
            else:
                vdla(node, 0, _fused_activation(graph, node, consumers))
        elif op == "MaxPool":
            a = node.attrs
            if any(d != 1 for d in a.get("dilations") or [1, 1]) or a.get("ceil_mode", 0) \
                    or len(node.outputs) > 1 and node.outputs[1]:
                cpu(node, "MaxPool with dilation, ceil_mode or indices")
            elif (a.get("strides") or [1, 1])[0] != (a.get("strides") or [1, 1])[1]:
                cpu(node, "MaxPool with two different strides")
            elif vta_compat and any(a.get("pads") or [0]) and node.inputs[0] not in nonneg:
                cpu(node, "MaxPool with padding of a tensor that may be negative: VTA's DMA pads with zeros only")
            else:
                vdla(node)
                if node.inputs[0] in nonneg:
                    nonneg.add(node.outputs[0])
        elif op == "GlobalAveragePool":
            if len(graph.types[node.inputs[0]].shape) != 4:
                cpu(node, "GlobalAveragePool of a non-image tensor")
            else:
                vdla(node)
                if node.inputs[0] in nonneg:
                    nonneg.add(node.outputs[0])
        elif op in ("Reshape", "Flatten"):
            x, y = graph.types[node.inputs[0]], graph.types[node.outputs[0]]
            src = _producer_device(graph, place, node.inputs[0])
            if src == "vdla" and len(x.shape) == 4 and x.shape[2:] == (1, 1) and y.shape == x.shape[:2]:
                vdla(node)       # (N, C, 1, 1) -> (N, C): the same bytes in the packed layouts
                if node.inputs[0] in nonneg:
                    nonneg.add(node.outputs[0])
            else:
                cpu(node, "reshape outside the accelerator's layouts")
        elif op in ("Relu", "Clip") and node.inputs[0] in nonneg and node.attrs.get("min", 0) == 0:
            vdla(node)           # the accelerator's tensor is already >= 0: nothing left to do
            nonneg.add(node.outputs[0])
        elif op in ("Relu", "Clip"):
            cpu(node, f"{op} not after a convolution, Gemm or Add: nothing to fuse it into")
        elif op in _NO_ALU:
            cpu(node, f"{op}: no ALU equivalent")
        else:
            cpu(node, f"{op}: not offloaded (runs on the CPU)")
    return place


def _producer_device(graph, place, tensor):
    for node in graph.nodes:
        if tensor in node.outputs:
            return place.get(node.name, {}).get("device")
    return None


def tensors_to_calibrate(graph: Graph, place: dict) -> set[str]:
    """Every tensor an accelerator node reads or writes (its scale), and each conv's output
    before its activation (the accumulator range that sizes the requantization)."""
    out = set()
    for node in graph.nodes:
        if place.get(node.name, {}).get("device") != "vdla":
            continue
        out.update(n for n in node.inputs if n and n not in graph.constants)
        out.update(n for n in node.outputs if n)
    return out


# ---- quantization --------------------------------------------------------------------------------
def _scale(stats, tensor, channels: int) -> np.ndarray:
    """One scale per channel (axis 1): the calibrated per-channel ranges / 127, or the tensor's
    range for every channel where only that is known (a QDQ model's quantizers)."""
    info = stats[tensor]
    per = info.get("channel_range")
    if per is not None and len(per) == channels:
        per = np.asarray(per, np.float64)
        # a channel that stayed (near) zero in calibration gets a sane scale, not a vanishing one
        # that would swamp the fixed-point multipliers of the others
        return np.maximum(per, max(0.01 * float(per.max()), 1e-12)) / 127.0
    return np.full(channels, max(float(info["range"]), 1e-12) / 127.0)


def _channel_peak(stats, tensor, channels: int) -> np.ndarray | None:
    info = stats.get(tensor)
    if info is None:
        return None
    per = info.get("channel_max")
    return np.asarray(per, np.float64) if per is not None and len(per) == channels else \
        np.full(channels, float(info["max"]))


def _fixed_point(m, limit_bits=15, max_shift=31):
    """The largest shift S with max(m) * 2^S < 2^limit_bits; -> (S, integer multipliers)."""
    top = float(np.max(m)) if np.size(m) else 1.0
    s = max_shift if top <= 0 else min(max_shift, int(math.floor(math.log2(((1 << limit_bits) - 1) / top))))
    s = max(s, 0)
    return s, np.rint(np.asarray(m) * (1 << s)).astype(np.int64)


class _Builder:
    def __init__(self, graph: Graph, config, place, stats, vta_compat: bool = False):
        self.g, self.config, self.place, self.stats = graph, config, place, stats
        self.vta_compat = vta_compat
        self.nodes: list[Node] = []
        self.packed: dict[str, tuple[str, float]] = {}   # fp32 tensor -> (packed name, scale)
        self.zp: dict[str, int] = {}                         # packed name -> zero point (0 or -128)
        self.materialized = set(graph.inputs) | set(graph.constants)
        self.count = 0

    def fresh(self, stem):
        self.count += 1
        return f"{stem}.{self.count}"

    def const(self, stem, array):
        name = self.fresh(stem)
        self.g.constants[name] = np.ascontiguousarray(array)
        self.g.types[name] = TensorType.of(self.g.constants[name])
        return name

    def add(self, node: Node, types: dict[str, TensorType]):
        self.g.types.update(types)
        self.nodes.append(node)

    def packed_input(self, tensor) -> tuple[str, float]:
        if tensor in self.packed:
            return self.packed[tensor]
        cfg, t = self.config, self.g.types[tensor]
        n, c = t.shape[:2]
        scale = _padded(_scale(self.stats, tensor, c), cfg.block)
        name = f"{tensor}.q"
        nb, cb = -(-n // cfg.batch), -(-c // cfg.block)
        matrix = len(t.shape) == 2
        shape = (nb, cb, cfg.batch, cfg.block) if matrix else (nb, cb, *t.shape[2:], cfg.batch, cfg.block)
        self.add(Node("VdlaQuantize", self.fresh(f"quantize_{tensor}"), [tensor], [name],
                      {"scale": scale.tolist(), "batch": cfg.batch, "block": cfg.block, "matrix": matrix}),
                 {name: TensorType(shape, "int8")})
        self.packed[tensor] = (name, scale)
        return name, scale

    def float_input(self, tensor):
        """The fp32 value of `tensor` for a CPU node: dequantized once if the accelerator made it."""
        if tensor in self.materialized or tensor not in self.packed:
            return tensor
        q, scale = self.packed[tensor]
        self.add(Node("VdlaDequantize", self.fresh(f"dequantize_{tensor}"), [q], [tensor],
                      {"scale": np.asarray(scale).tolist(), "shape": list(self.g.types[tensor].shape),
                       "zero_point": self.zp.get(q, 0)}), {})
        self.materialized.add(tensor)
        return tensor

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
        s = _scale(self.stats, tensor, channels)
        if act is not None and not self.vta_compat:
            return _padded(s * 127.0 / 255.0, self.config.block), -128
        return _padded(s, self.config.block), 0

    # -- one builder per accelerator op --------------------------------------------------------
    def conv(self, node, act):
        from vdla.compiler.topi.vdla import ConvLayer, pack_bias, pack_depthwise_weight
        from vdla.driver.runtime.layout import pack_conv_weight
        cfg, g = self.config, self.g
        x = node.inputs[0]
        y = (act or node).outputs[0]
        xq, s_x = self.packed_input(x)
        z_x = self.zp.get(xq, 0)
        w = g.constants[node.inputs[1]].astype(np.float64)
        b = g.constants[node.inputs[2]].astype(np.float64) if len(node.inputs) > 2 and node.inputs[2] \
            else np.zeros(w.shape[0])
        depthwise = node.attrs.get("group", 1) > 1
        s_y_padded, z_y = self.out_scale(y, w.shape[0], act)
        s_y = s_y_padded[:w.shape[0]]
        # the input's per-channel scales fold into the weights: acc = sum(w * s_x[c] * x_q)
        s_in = s_x[:g.types[x].shape[1]]
        w = w * (s_in[:, None, None, None] if depthwise else s_in[None, :, None, None])
        if self.vta_compat:
            s_w = _power_of_two_step(w, s_y, node.name)
        else:
            s_w = _weight_step(w, s_y)
        w_q = np.clip(np.rint(w / s_w[:, None, None, None]), -127, 127).astype(np.int8)
        a = node.attrs
        xt, yt = g.types[x], g.types[node.outputs[0]]
        L = cfg.block
        layer = ConvLayer(-(-xt.shape[0] // cfg.batch), -(-xt.shape[1] // L), xt.shape[2], xt.shape[3],
                          -(-yt.shape[1] // L), w.shape[2], w.shape[3], (a.get("strides") or [1, 1])[0],
                          tuple(a.get("pads") or (0, 0, 0, 0)), depthwise, pad_value=z_x)
        peak = _channel_peak(self.stats, node.outputs[0], w.shape[0])   # before the activation
        acc_peak = _acc_peak(peak, s_w, w_q)
        # sum(w * (q - z_x)) = sum(w * q) - z_x * sum(w): the input's zero point joins the bias
        zp_term = -z_x * w_q.astype(np.int64).reshape(w_q.shape[0], -1).sum(axis=1)
        ep, bias_q, mult = self.requant(s_w, s_y, b / s_w + zp_term, acc_peak, act, z_y)
        wp = pack_depthwise_weight(w_q, L) if depthwise else pack_conv_weight(w_q, L)
        inputs = [xq, self.const(f"{node.name}.wq", wp),
                  self.const(f"{node.name}.bias", pack_bias(bias_q, cfg.batch, L))]
        if mult is not None:
            inputs.append(self.const(f"{node.name}.mult", pack_bias(mult, cfg.batch, L)))
        out = self.output(y, (layer.n, layer.o, layer.out_h, layer.out_w, cfg.batch, L), s_y_padded, z_y)
        self.nodes.append(Node("VdlaConv", node.name, inputs, [out],
                               {"layer": _jsonable(asdict(layer)), "epilogue": asdict(ep),
                                "source_ops": [node.op] + ([act.op] if act else [])}))

    def dense(self, node, act):
        from vdla.compiler.topi.vdla import pack_bias
        from vdla.driver.runtime.layout import pack_matrix_rhs
        cfg, g = self.config, self.g
        x = node.inputs[0]
        y = (act or node).outputs[0]
        xq, s_x = self.packed_input(x)
        z_x = self.zp.get(xq, 0)
        w = g.constants[node.inputs[1]].astype(np.float64)          # (N, K): canonical transB=1
        b = g.constants[node.inputs[2]].astype(np.float64) if len(node.inputs) > 2 and node.inputs[2] \
            else np.zeros(w.shape[0])
        s_y_padded, z_y = self.out_scale(y, w.shape[0], act)
        s_y = s_y_padded[:w.shape[0]]
        w = w * s_x[None, :w.shape[1]]
        if self.vta_compat:
            s_w = _power_of_two_step(w, s_y, node.name)
        else:
            s_w = _weight_step(w, s_y)
        w_q = np.clip(np.rint(w / s_w[:, None]), -127, 127).astype(np.int8)
        peak = _channel_peak(self.stats, node.outputs[0], w.shape[0])
        acc_peak = _acc_peak(peak, s_w, w_q)
        zp_term = -z_x * w_q.astype(np.int64).sum(axis=1)
        ep, bias_q, mult = self.requant(s_w, s_y, b / s_w + zp_term, acc_peak, act, z_y)
        L = cfg.block
        m_blocks = g.types[xq].shape[0]
        inputs = [xq, self.const(f"{node.name}.wq", pack_matrix_rhs(w_q.T, L)),
                  self.const(f"{node.name}.bias", pack_bias(bias_q, cfg.batch, L))]
        if mult is not None:
            inputs.append(self.const(f"{node.name}.mult", pack_bias(mult, cfg.batch, L)))
        out = self.output(y, (m_blocks, -(-w.shape[0] // L), cfg.batch, L), s_y_padded, z_y)
        self.nodes.append(Node("VdlaDense", node.name, inputs, [out],
                               {"layer": {"m": m_blocks, "k": g.types[xq].shape[1], "n": -(-w.shape[0] // L)},
                                "epilogue": asdict(ep), "source_ops": [node.op] + ([act.op] if act else [])}))

    def requant(self, s_w, s_y, bias_real, acc_peak, act, z_y):
        """-> (epilogue, int32 bias, per-channel multipliers or None in VTA mode)."""
        if self.vta_compat:
            ep, bias_q = _requant_shift(s_w, s_y, bias_real, act)
            return ep, bias_q, None
        return _requant(s_w / s_y, bias_real, acc_peak, act, s_y, z_y)

    def pool(self, node):
        from vdla.compiler.topi.vdla import Epilogue, PoolLayer
        cfg, g = self.config, self.g
        x = node.inputs[0]
        xq, s_x = self.packed_input(x)
        xt = g.types[xq]
        if node.op == "MaxPool":
            a = node.attrs
            pads = tuple(a.get("pads") or (0, 0, 0, 0))
            # VTA mode offloads a padded max pooling only of a non-negative input (place_nodes):
            # zero padding never wins there either
            layer = PoolLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], *a["kernel_shape"],
                              (a.get("strides") or [1, 1])[0], pads, "max",
                              0 if self.vta_compat and any(pads) else None)
            ep = Epilogue(lo=None, hi=None)           # the max of int8 values is an int8 value
        else:
            hw = xt.shape[2] * xt.shape[3]
            layer = PoolLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], xt.shape[2], xt.shape[3],
                              1, (0, 0, 0, 0), "sum")
            # sum * round(2^shift / (H*W)) >> shift, same scale, with the factor inside the ALU's
            # 16-bit immediate (a 1x1 window: 2^14 >> 14, not 2^15); VTA mode keeps it int8
            largest = 127 if self.vta_compat else IMM_MAX
            shift = min(15, int(math.floor(math.log2(largest * hw))))
            ep = Epilogue(mul=max(1, int(round((1 << shift) / hw))), shift=shift, round=True)
        # max and mean commute with the code shift: the output keeps the input's zero point
        out = self.output(node.outputs[0], (layer.n, layer.c, layer.out_h, layer.out_w, cfg.batch, cfg.block), s_x,
                          self.zp.get(xq, 0))
        self.nodes.append(Node("VdlaPool", node.name, [xq], [out],
                               {"layer": _jsonable(asdict(layer)), "epilogue": asdict(ep), "source_ops": [node.op]}))

    def add_op(self, node, act):
        from vdla.compiler.topi.vdla import Epilogue, pack_bias
        cfg = self.config
        aq, s_a = self.packed_input(node.inputs[0])
        bq, s_b = self.packed_input(node.inputs[1])
        z_a, z_b = self.zp.get(aq, 0), self.zp.get(bq, 0)
        y = (act or node).outputs[0]
        c = self.g.types[node.inputs[0]].shape[1]
        s_y, z_y = self.out_scale(y, c, act)
        # int8 factors in VTA mode: its kernels multiply on the GEMM core (no ALU MUL)
        shift, m = _fixed_point(np.concatenate([s_a / s_y, s_b / s_y]), 7 if self.vta_compat else 15, 15)
        if self.vta_compat and m.max() > 127:
            from vdla.compiler.codegen.vdla import VtaCompatError
            raise VtaCompatError(f"{node.name}: an operand's scale is {float(m.max()):.0f} times the output's, beyond "
                                 "the int8 factors VTA mode multiplies by on the GEMM core")
        ma, mb = m[:len(s_a)], m[len(s_a):]
        # (a - z_a) ma + (b - z_b) mb + z_y 2^S: the zero points make one constant per channel
        offset = (-z_a * ma - z_b * mb + z_y * (1 << shift)).astype(np.int64)
        hi = 127
        if act is not None and act.op == "Clip" and act.attrs.get("max") is not None:
            hi = int(min(127, np.min(np.rint(act.attrs["max"] / s_y[:c]) + z_y)))
        lo = z_y if act is not None else -128         # a ReLU clips at the code of zero
        ep = Epilogue(shift=shift, round=shift > 0, lo=lo, hi=hi)
        out = self.output(y, self.g.types[aq].shape, s_y, z_y)
        pack = lambda v: pack_bias(v.astype(np.int32), cfg.batch, cfg.block)   # noqa: E731
        inputs = [aq, bq, self.const(f"{node.name}.ma", pack(ma)), self.const(f"{node.name}.mb", pack(mb))]
        has_offset = bool(offset.any()) or not self.vta_compat      # zero points 0: no constant to add
        if has_offset:
            inputs.append(self.const(f"{node.name}.offset", pack(offset)))
        self.nodes.append(Node("VdlaAdd", node.name, inputs, [out],
                               {"per_channel": True, "offset": has_offset, "epilogue": asdict(ep),
                                "source_ops": ["Add"] + ([act.op] if act else [])}))

    def identity(self, node):
        """A ReLU of a tensor that is already non-negative: the same int8 values."""
        self.packed[node.outputs[0]] = self.packed_input(node.inputs[0])

    def reshape(self, node):
        xq, s = self.packed_input(node.inputs[0])
        xt = self.g.types[xq]
        shape = (xt.shape[0], xt.shape[1], xt.shape[4], xt.shape[5])
        out = self.output(node.outputs[0], shape, s, self.zp.get(xq, 0))
        self.nodes.append(Node("Reshape", node.name, [xq], [out], {"shape": list(shape)}))


def _worst_acc(w_q) -> float:
    """The largest accumulator any int8 input can produce (no range known for the output)."""
    return 128.0 * float(np.abs(w_q.astype(np.int64)).reshape(w_q.shape[0], -1).sum(axis=1).max())


def unclipped_at_exits(graph: Graph, place: dict, stats: dict) -> None:
    """Tensors that leave the accelerator (read by the CPU or a model output) take their full
    calibrated range: inside the int8 region a clipped outlier is one value among many, but
    at an exit (logits, say) clipping what calibration did not see costs the answer."""
    device = {}
    for node in graph.nodes:
        for out in node.outputs:
            device[out] = place.get(node.name, {}).get("device")
    exits = set(graph.outputs)
    for node in graph.nodes:
        if place.get(node.name, {}).get("device") != "vdla":
            exits.update(n for n in node.inputs if n)
    for t in exits:
        if device.get(t) == "vdla" and t in stats:
            info = stats[t]
            info.update(range=info["max"], method="max (exit)")
            if "channel_range" in info:
                info["channel_range"] = list(info["channel_max"])


def demote_unranged(graph: Graph, place: dict, stats: dict) -> None:
    """Accelerator nodes that read or write a tensor without a quantization range go to the
    CPU (with their fused activation), until every accelerator tensor has one."""
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            info = place.get(node.name, {})
            if info.get("device") != "vdla" or info.get("fused_into"):
                continue
            act = next((n for n, p in place.items() if p.get("fused_into") == node.name), None)
            out = next(n for n in graph.nodes if n.name == act).outputs[0] if act else node.outputs[0]
            needed = [n for n in node.inputs if n and n not in graph.constants]
            if node.op not in ("MaxPool", "GlobalAveragePool", "Reshape", "Flatten"):
                needed.append(out)
            missing = [t for t in needed if t not in stats]
            if missing:
                place[node.name] = {"device": "cpu", "macs": info["macs"],
                                    "reason": f"no quantization range for {missing[0]} (the model quantizes no such "
                                              "tensor); pass --calibrate to measure one"}
                if act:
                    place[act] = {"device": "cpu", "macs": 0, "reason": f"its producer {node.name} runs on the CPU"}
                changed = True


def _acc_peak(peak, s_w, w_q) -> float:
    """The largest accumulator magnitude, in accumulator units: the output's measured peak over
    the weight step, or the worst case the weights allow."""
    return float((np.asarray(peak) / s_w).max()) if peak is not None else _worst_acc(w_q)


def _weight_step(w, s_y) -> np.ndarray:
    """Per output channel, the step of its int8 weights. A channel whose weights are all zero
    (dead, or reading input channels that were never nonzero in calibration) accumulates nothing
    but its bias; its step is the output's, so that bias stays a few hundred accumulator units
    instead of overflowing int32 as it would in steps of the 1e-12 floor."""
    top = np.abs(w).reshape(w.shape[0], -1).max(axis=1)
    return np.where(top > 0, np.maximum(top, 1e-12) / 127.0, np.asarray(s_y, np.float64))


def _requant(m, bias_real, acc_peak, act, s_y, z_y=0):
    """Per-channel requantization: acc + bias >> p, * M[o], >> S, clip. p keeps |acc| >> p
    below 2^16 so that the product with a 15-bit M fits int32; both shifts round to nearest
    through the bias: 2^(p-1) + 2^(p+S-1) / M[o] accumulator units."""
    from vdla.compiler.topi.vdla import Epilogue
    p = max(0, int(math.ceil(math.log2(max(acc_peak, 1.0) * 2))) - 16)
    shift, mult = _fixed_point(np.asarray(m) * (1 << p), 15, 31 - p)
    mult = np.maximum(mult, 0)
    # round both shifts to nearest (half a step of the pre-shift, half an output step) and add
    # the output's zero point, all as accumulator units in the bias
    steps = (2.0 ** (p + shift)) / np.maximum(mult, 1)
    rounding = np.where(mult > 0, steps * (0.5 + z_y), 0.0) + (2.0 ** (p - 1) if p else 0.0)
    bias_q = np.clip(np.rint(bias_real + rounding), -(1 << 31), (1 << 31) - 1).astype(np.int64)
    lo, hi = -128, 127
    if act is not None:
        lo = z_y                                   # the code of a real zero
        if act.op == "Clip" and act.attrs.get("max") is not None:
            hi = int(min(127, np.min(np.rint(act.attrs["max"] / np.asarray(s_y))) + z_y))
    if p > SHR_MAX:
        raise _ShiftRange(f"its accumulator peaks at {acc_peak:.3g} weight steps, which needs a pre-shift of {p}; "
                          f"the ALU shifts by 0..{SHR_MAX} (a bias that dwarfs the weights' products)")
    ep = Epilogue(bias=True, pre_shift=p, scale=True, shift=shift, lo=lo, hi=hi)
    return ep, bias_q.astype(np.int32), mult.astype(np.int32)


def _power_of_two_step(w, s_y, name: str) -> np.ndarray:
    """VTA mode: the weight scale (one per tensor, per output channel for the callers) that
    is the output's scale over a power of two, 2^-k, as fine as int8 weights allow; the
    requantization is then a shift by k. Needs one output scale for every channel."""
    from vdla.compiler.codegen.vdla import VtaCompatError
    s_y = np.asarray(s_y, np.float64)
    if not np.allclose(s_y, s_y[0]):
        raise VtaCompatError(f"{name}: its output has one scale per channel; VTA mode requantizes with one shift, "
                             "so compile without per-channel activation scales")
    top = max(float(np.abs(w).max()), 1e-30)
    k = min(31, int(math.floor(math.log2(127.0 * s_y[0] / top))))
    if k < 0:
        raise VtaCompatError(f"{name}: a single weight times the largest input exceeds the output's range, so the "
                             "weights would need a step coarser than the output's (a left shift), which VTA mode "
                             "does not requantize with")
    return np.full(w.shape[0], s_y[0] / (1 << k))


def _requant_shift(s_w, s_y, bias_real, act):
    """VTA mode's requantization: acc + bias >> k with s_w = s_y / 2^k (_power_of_two_step);
    the rounding (half an output step) and nothing else lives in the bias."""
    from vdla.compiler.topi.vdla import Epilogue
    k = int(round(math.log2(float(s_y[0] / s_w[0]))))
    rounding = 2.0 ** (k - 1) if k else 0.0
    bias_q = np.clip(np.rint(np.asarray(bias_real) + rounding), -(1 << 31), (1 << 31) - 1).astype(np.int64)
    lo, hi = -128, 127
    if act is not None:
        lo = 0
        if act.op == "Clip" and act.attrs.get("max") is not None:
            hi = int(min(127, np.min(np.rint(act.attrs["max"] / np.asarray(s_y)))))
    return Epilogue(bias=True, shift=k, lo=lo, hi=hi), bias_q.astype(np.int32)


def _padded(scale, block: int) -> np.ndarray:
    """A per-channel scale vector padded with ones to a whole number of channel blocks."""
    scale = np.asarray(scale, np.float64)
    return np.concatenate([scale, np.ones((-len(scale)) % block)])


def _jsonable(d):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


class _ShiftRange(ValueError):
    """A requantization shift past the ALU's (raised where the node is not known)."""


class Unquantizable(ValueError):
    """An accelerator node whose requantization the ALU cannot express (a shift past its range:
    an output dominated by a bias millions of weight steps wide); placement moves it to the CPU."""

    def __init__(self, node: str, reason: str):
        super().__init__(f"node {node!r}: {reason}")
        self.node, self.reason = node, reason


def quantize_vdla(graph: Graph, place: dict, stats: dict, config, vta_compat: bool = False) -> Graph:
    """The graph with its accelerator nodes replaced by Vdla* nodes (see the module docstring);
    graph.meta["placement"] keeps `place`."""
    g = graph.copy()
    b = _Builder(g, config, place, stats, vta_compat)
    consumers = g.consumers()
    for node in g.nodes:
        info = place.get(node.name, {"device": "cpu"})
        if info.get("fused_into"):
            continue
        if info["device"] != "vdla":
            node.inputs = [b.float_input(n) if n else n for n in node.inputs]
            b.nodes.append(node)
            b.materialized.update(n for n in node.outputs if n)
            continue
        act = None
        if node.op in ("Conv", "Gemm", "Add"):
            users = consumers.get(node.outputs[0], [])
            if len(users) == 1 and place.get(users[0].name, {}).get("fused_into") == node.name:
                act = users[0]
        if node.op in ("Conv", "Gemm"):
            try:
                (b.conv if node.op == "Conv" else b.dense)(node, act)
            except _ShiftRange as why:
                raise Unquantizable(node.name, str(why)) from None
        elif node.op in ("MaxPool", "GlobalAveragePool"):
            b.pool(node)
        elif node.op == "Add":
            b.add_op(node, act)
        elif node.op in ("Relu", "Clip"):
            b.identity(node)
        else:
            b.reshape(node)
    for out in g.outputs:
        b.float_input(out)
    g.nodes = b.nodes
    g.meta["placement"] = place
    g.meta["vdla_scales"] = {q: (name, np.asarray(scale).tolist(), b.zp.get(q, 0)) for name, (q, scale) in b.packed.items()}
    return g
