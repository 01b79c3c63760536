"""VdlaAdd: ONNX Add of two tensors of one shape (a residual connection, with its ReLU/Clip;
images, or tensors of any other rank held as matrix rows) on the tensor ALU: y = clip((a - z_a) * ma + (b - z_b) * mb + z_y * 2^S >> S), the factors
one per channel (the operands' scales over the output's), the zero points folded into one
constant per channel.

VTA mode: the factors are int8 (its kernels multiply on the GEMM core, having no ALU MUL),
carried by diagonal weight blocks."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import add as semantics

from ...codegen.vdla import VtaCompatError
from ...topi import vdla as V
from ..op import KernelSpec, VdlaOp
from ..requant import fixed_point


def problem(graph, node, ctx) -> str | None:
    a, b = (graph.types[n] for n in node.inputs)
    if any(n in graph.constants for n in node.inputs):
        return "Add of a constant: the ALU adds two tensors computed at run time"
    if a.shape != b.shape:
        return f"Add with broadcasting ({list(a.shape)} + {list(b.shape)}): the ALU adds two tensors of one shape"
    cpu = [n for n in node.inputs if n not in ctx.on_accelerator]
    if len(a.shape) != 4 and cpu:
        # (a transformer's residual stream: the CPU holds it in float for its LayerNorm, and
        # quantizing it to add it would cost the sum's precision and a host round trip)
        return (f"Add of {cpu[0]}, a tensor the CPU computed, to a token sequence: cheaper and exact on the "
                "CPU, which holds it in float")
    return None


def quantize(q, node, act):
    cfg = q.config
    aq, s_a = q.packed_input(node.inputs[0])
    bq, s_b = q.packed_input(node.inputs[1])
    z_a, z_b = q.zp.get(aq, 0), q.zp.get(bq, 0)
    y = (act or node).outputs[0]
    c = q.g.types[node.inputs[0]].shape[1 if len(q.g.types[node.inputs[0]].shape) == 4 else -1]
    s_y, z_y = q.out_scale(y, c, act)
    # int8 factors in VTA mode: its kernels multiply on the GEMM core (no ALU MUL)
    shift, m = fixed_point(np.concatenate([s_a / s_y, s_b / s_y]), 7 if q.vta_compat else 15, 15)
    if q.vta_compat and m.max() > 127:
        raise VtaCompatError(f"{node.name}: an operand's scale is {float(m.max()):.0f} times the output's, beyond "
                             "the int8 factors VTA mode multiplies by on the GEMM core")
    ma, mb = m[:len(s_a)], m[len(s_a):]
    # (a - z_a) ma + (b - z_b) mb + z_y 2^S: the zero points make one constant per channel
    offset = (-z_a * ma - z_b * mb + z_y * (1 << shift)).astype(np.int64)
    hi = 127
    if act is not None and act.op == "Clip" and act.attrs.get("max") is not None:
        hi = int(min(127, np.min(np.rint(act.attrs["max"] / s_y[:c]) + z_y)))
    lo = z_y if act is not None else -128         # a ReLU clips at the code of zero
    ep = V.Epilogue(shift=shift, round=shift > 0, lo=lo, hi=hi)
    out = q.output(y, q.g.types[aq].shape, s_y, z_y)
    pack = lambda v: V.pack_bias(v.astype(np.int32), cfg.batch, cfg.block)   # noqa: E731
    inputs = [aq, bq, q.const(f"{node.name}.ma", pack(ma)), q.const(f"{node.name}.mb", pack(mb))]
    has_offset = bool(offset.any()) or not q.vta_compat      # zero points 0: no constant to add
    if has_offset:
        inputs.append(q.const(f"{node.name}.offset", pack(offset)))
    if q.vta_compat:      # the factors as weight blocks for the GEMM core
        inputs += [q.const(f"{node.name}.vta_wa", V.diagonal_weight(ma, cfg.block), True),
                   q.const(f"{node.name}.vta_wb", V.diagonal_weight(mb, cfg.block), True)]
    q.emit(OP, node, inputs, out, {"per_channel": True, "offset": has_offset, "epilogue": asdict(ep)}, act)


def kernel_args(node, vta_compat: bool) -> list[str]:
    """Buffers a, b, ma, mb, [offset]; VTA mode: a, b, wa, wb, [offset] (quantize appended
    the weight blocks after the node's other inputs)."""
    if not vta_compat:
        return [n for n in node.inputs if n]
    offset = node.inputs[4:5] if node.attrs.get("offset") else []
    return [*node.inputs[:2], *node.inputs[-2:], *offset]


def spec(graph, node) -> KernelSpec:
    a, t = node.attrs, graph.types[node.inputs[0]].shape
    h, w = (t[2], t[3]) if len(t) == 6 else (1, 1)        # a matrix's rows: pixels of a 1x1 image
    return KernelSpec(OP.name, V.AddLayer(t[0], t[1], h, w, a.get("ma", 0), a.get("mb", 0),
                                          a.get("per_channel", False), a.get("offset", False)),
                      V.Epilogue(**a["epilogue"]))


def _tiling_problem(config, s, vta) -> str | None:
    try:
        V.default_add_knobs(config, s.layer, vta)
    except V.NoTilingError as exc:
        return exc.reason
    return None


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("Add",),
    problem=problem,
    fuses_activation=True,
    quantize=quantize,
    spec=spec,
    compile=lambda config, s, knobs, name, vta: V.compile_add(config, s.layer, s.ep, knobs, name=name, vta_compat=vta),
    tiling_problem=_tiling_problem,
    default_choices=lambda config, s, vta: [V.default_add_knobs(config, s.layer, vta)],
    kernel_args=kernel_args)
