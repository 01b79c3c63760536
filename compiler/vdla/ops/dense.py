"""VdlaDense: ONNX Gemm (a fully connected layer: constant weights, transB form, with its
ReLU/Clip) on the GEMM core. A product into a single accumulator element stays on the CPU
where the accumulator hazard rule would serialize it."""
from __future__ import annotations

import numpy as np

from vdla.driver.host_ops.vdla import dense as semantics
from vdla.driver.runtime.layout import pack_matrix_rhs

from ...topi import vdla as V
from ..macs import matmul_macs
from ..op import KernelSpec, Tunable, VdlaOp
from ..quantizer import GemmForm, quantize_gemm


def problem(graph, node, ctx) -> str | None:
    config = ctx.config
    x = graph.types[node.inputs[0]]
    rows = -(-x.shape[0] // config.batch)
    cols = -(-graph.types[node.outputs[0]].shape[1] // config.block)
    if node.attrs.get("transA", 0) or node.inputs[1] not in graph.constants or len(x.shape) != 2:
        return "Gemm with a transposed or run-time operand"
    if rows * cols < 2 and config.timing.acc_raw_min_distance > 1:
        return (f"Gemm into a single accumulator element ({rows} row block x {cols} column block): "
                "the accumulator hazard rule serializes it; cheaper on the CPU")
    return None


def _layer(q, node, xq, w):
    L = q.config.block
    return V.DenseLayer(q.g.types[xq].shape[0], q.g.types[xq].shape[1], -(-w.shape[0] // L))


GEMM_FORM = GemmForm(
    input_channel=lambda node, shape: np.arange(shape[1])[None],     # weights (N, K): canonical transB=1
    layer=_layer,
    layer_doc=lambda layer: {"m": layer.m, "k": layer.k, "n": layer.n},
    out_shape=lambda layer, cfg: (layer.m, layer.n, cfg.batch, cfg.block),
    pack_weight=lambda node, w_q, layer, L: pack_matrix_rhs(w_q.T, L))


def spec(graph, node) -> KernelSpec:
    return KernelSpec(OP.name, V.DenseLayer(**node.attrs["layer"]), V.Epilogue(**node.attrs["epilogue"]))


def probe_shapes(config, lay):
    B, L = config.batch, config.block
    return (lay.m, lay.k, B, L), (lay.n, lay.k, L, L), (lay.m, lay.n, B, L), (lay.n, B, L), lay.k * L


def describe(lay: dict, config) -> str:
    return f"dense {lay['m'] * config.batch}x{lay['k'] * config.block}->{lay['n'] * config.block}"


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("Gemm",),
    problem=problem,
    macs=matmul_macs,
    fuses_activation=True,
    fuses_table=True,
    quantize=lambda q, node, act: quantize_gemm(q, OP, node, act, GEMM_FORM),
    spec=spec,
    compile=lambda config, s, knobs, name, vta: V.compile_dense(config, s.layer, s.ep, knobs, name=name,
                                                                  vta_compat=vta),
    tiling_problem=lambda config, s, vta: V.dense_tiling_problem(config, s.layer, s.ep),
    default_choices=lambda config, s, vta: V.default_dense_choices(config, s.layer, s.ep),
    tuning=Tunable(record_op="dense", layer_type=V.DenseLayer, knobs_type=V.DenseKnobs,
                   knob_space=V.dense_knob_space, cost=V.dense_cost, steps=V.dense_steps,
                   probe_shapes=probe_shapes, describe=describe))
