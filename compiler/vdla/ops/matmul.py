"""VdlaMatMul: ONNX MatMul of two activations ([..., M, K] x [..., K, N], the leading dims of
the second broadcast) on the GEMM core, as G dense products in one program: attention's Q·Kᵀ
and P·V, one product per batch row and head.

The GEMM core multiplies activations by weights, so the second operand becomes weights at run
time: the CPU quantizes it (one step for the tensor, from calibration) and packs it in the
weight layout (VdlaQuantizeWeights); the first operand is quantized as matrix rows with one
step too, so that every accumulator is the real product times one factor per output column,
which the dense epilogue's multipliers take back to the output's scale. (A MatMul by a constant
2-d weight is a Gemm by then, linear.py: the dense op's.)"""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import matmul as semantics
from vdla.driver.host_ops.vdla.boundary import QUANTIZE
from vdla.driver.runtime.layout import pack_qparams
from vdla.hw import MemType
from vdla.hw.timing import dram_elem_bytes

from ...graph.ir import Node, TensorType
from ...topi import vdla as V
from ..macs import matmul_macs
from ..op import KernelSpec, VdlaOp, gemm_seconds
from ..requant import padded, requant_multiply, requant_writeback, tensor_step


def geometry(a_shape, b_shape, out_shape) -> tuple[int, int, tuple]:
    """(products G, rows M of each, the batch shape the second operand is broadcast to): a
    second operand without batch (rank 2, or leading dims of 1) multiplies all of the first
    one's rows at once."""
    if len(b_shape) == 2 or math.prod(b_shape[:-2]) == 1:
        return 1, math.prod(a_shape[:-1]), (1,)
    return math.prod(out_shape[:-2]), a_shape[-2], tuple(out_shape[:-2])


def problem(graph, node, ctx) -> str | None:
    a, b, y = (graph.types[t] for t in (*node.inputs[:2], node.outputs[0]))
    if any(t in graph.constants for t in node.inputs[:2]):
        return ("MatMul by a constant of more than 2 dims: the accelerator takes 2-d weights (a Gemm) or two "
                "activations")
    if len(a.shape) < 2 or len(b.shape) < 2 or not np.issubdtype(np.dtype(a.dtype), np.floating):
        return f"MatMul of {a.dtype} tensors of ranks {len(a.shape)} and {len(b.shape)}: needs float matrices"
    if ctx.vta_compat:
        return ("MatMul of two activations in VTA mode: its requantization needs the per-column multipliers "
                "of an ALU MUL, which VTA lacks")
    groups, rows, _ = geometry(a.shape, b.shape, y.shape)
    if groups > 1 and tuple(a.shape[:-2]) != tuple(y.shape[:-2]):
        return (f"MatMul whose first operand {list(a.shape)} is broadcast to {list(y.shape[:-2])}: the "
                "accelerator reads each product's rows in place")
    if groups > 1 and rows % ctx.config.batch:
        return (f"batched MatMul of {rows} rows per product: the packed rows of the products must start at "
                f"whole blocks of BATCH={ctx.config.batch}")
    cfg = ctx.config
    cols = -(-y.shape[-1] // cfg.block)
    if -(-rows // cfg.batch) * cols < 2 and cfg.timing.acc_raw_min_distance > 1:
        return (f"MatMul into a single accumulator element per product ({rows} rows x {y.shape[-1]} columns): "
                "the accumulator hazard rule serializes it; cheaper on the CPU")
    # each micro-op multiplies BATCH rows by a BLOCK x BLOCK weight block, padded lanes included
    accel = gemm_seconds(groups * -(-rows // cfg.batch) * -(-a.shape[-1] // cfg.block) * cols, cfg)
    cpu = matmul_macs(graph, node) / ctx.cpu_rate
    if accel > cpu:
        return (f"MatMul of {a.shape[-1]}-long products into {y.shape[-1]} columns: cheaper on the CPU "
                f"(~{accel * 1e6:.1f} us on the accelerator, ~{cpu * 1e6:.1f} us on {ctx.board_cpu})")
    return None


def quantize(q, node, act):
    cfg, g = q.config, q.g
    a, b = node.inputs[:2]
    y = node.outputs[0]
    a_shape, b_shape, y_shape = (g.types[t].shape for t in (a, b, y))
    groups, rows, batch_shape = geometry(a_shape, b_shape, y_shape)
    k, n = a_shape[-1], y_shape[-1]
    B, L = cfg.batch, cfg.block
    s_a, s_b, s_y = (tensor_step(q.stats, t) for t in (a, b, y))
    padded_to = -(-rows // B) * B        # (the kernel's last row tile may overhang them)
    grouped = [groups, rows, padded_to]
    # the first operand: the rows of every product, one step for all (re-quantized from fp32
    # when the accelerator made it with other steps)
    a_rows = f"{a}.rows"
    q.add(Node(QUANTIZE.name, q.fresh(f"quantize_{a}"), [q.float_input(a)], [a_rows],
               {"scale": [s_a], "batch": B, "block": L, "matrix": True, "group_rows": grouped}),
          {a_rows: TensorType((groups * padded_to // B, -(-k // L), B, L), "int8")})
    b_weights = f"{b}.weights"
    q.add(Node(semantics.QUANTIZE_WEIGHTS.name, q.fresh(f"quantize_weights_{b}"), [q.float_input(b)], [b_weights],
               {"scale": [s_b], "block": L, "batch_shape": list(batch_shape)}),
          {b_weights: TensorType((groups, -(-n // L), -(-k // L), L, L), "int8")})
    g.meta.setdefault("alignment", {})[b_weights] = dram_elem_bytes(cfg, MemType.WGT)   # (memory_plan)
    # acc = (a / s_a)(b / s_b): the output in steps of s_y is acc * s_a s_b / s_y
    info = q.stats.get(y, {})
    acc_peak = float(info["max"]) / (s_a * s_b) if "max" in info else 127.0 * 127.0 * k
    m, steps_y = np.full(n, s_a * s_b / s_y), np.full(n, s_y)
    layer = V.BatchedDenseLayer(groups, padded_to // B, -(-k // L), -(-n // L))
    if q.vta_compat:               # the ALU's chain: bias, shifts and a multiply per element
        ep, bias_q, mult = requant_multiply(m, np.zeros(n), acc_peak, None, steps_y)
        params = [q.const(f"{node.name}.bias", V.pack_bias(bias_q, B, L)),
                  q.const(f"{node.name}.mult", V.pack_bias(mult, B, L))]
    else:                          # OUT's write-back requantizer: one ALU pass a vector instead of ~6
        ep, bias_q, mult = requant_writeback(m, np.zeros(n), None, steps_y)
        params = [q.const(f"{node.name}.qparams", pack_qparams(bias_q, mult, ep.shift, ep.zero, ep.lo, ep.hi, B, L))]
    inputs = [a_rows, b_weights, *params]
    out = q.output(y, (groups * layer.m, layer.n, B, L), padded(np.full(n, s_y), L))
    q.group_rows[out] = grouped
    q.emit(OP, node, inputs, out, {"layer": asdict(layer), "epilogue": asdict(ep)})


def spec(graph, node) -> KernelSpec:
    return KernelSpec(OP.name, V.BatchedDenseLayer(**node.attrs["layer"]), V.Epilogue(**node.attrs["epilogue"]))


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("MatMul",),
    problem=problem,
    macs=matmul_macs,
    rows_output=True,
    quantize=quantize,
    spec=spec,
    compile=lambda config, s, knobs, name, vta: V.compile_batched_dense(config, s.layer, s.ep, knobs, name=name,
                                                                          vta_compat=vta),
    tiling_problem=lambda config, s, vta: V.dense_tiling_problem(config, s.layer.dense, s.ep),
    default_choices=lambda config, s, vta: V.default_dense_choices(config, s.layer.dense, s.ep))
