"""VdlaUpsample: ONNX Resize in nearest mode by whole factors of the height and width (YOLO's 2x
upsampling) on the accelerator: the input tile loaded into the accumulators, each pixel copied
into its block by the ALU (topi.vdla.upsample). The output keeps the input's codes and grid.

Which Resizes: an image of the accelerator's (4-d, packed), constant scales or sizes that keep
the batch and channels, and a pixel map (the Resize host op run on pixel numbers, as the packed
host move computes it) that is exactly (i // fh, j // fw): ONNX's default half_pixel /
round_prefer_floor and asymmetric / floor both give it for whole factors. Others stay the host's
packed gather (moves.py). VTA mode has no LOAD ACC_8BIT, so it keeps the host copy too."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import upsample as semantics

from ...topi import vdla as V
from ...topi.vdla.upsample import UpsampleLayer, compile_upsample, default_upsample_knobs, upsample_tiling_problem
from ..moves import source_pixels
from ..op import KernelSpec, VdlaOp


def factors(graph, node) -> tuple[int, int] | None:
    """(fh, fw) when the Resize copies each input pixel into an fh x fw block, else None."""
    x, y = graph.types[node.inputs[0]].shape, graph.types[node.outputs[0]].shape
    if len(x) != 4 or len(y) != 4 or y[2] % x[2] or y[3] % x[3]:
        return None
    fh, fw = y[2] // x[2], y[3] // x[3]
    want = np.arange(x[2])[:, None].repeat(fh, 0) * x[3] + np.arange(x[3])[None, :].repeat(fw, 1)
    return (fh, fw) if np.array_equal(source_pixels(graph, node), want) else None


def problem(graph, node, ctx) -> str | None:
    ins = [t for t in node.inputs if t]
    x = graph.types[ins[0]]
    if len(x.shape) != 4:
        return f"Resize of a {len(x.shape)}-d tensor: the accelerator copies the pixels of images"
    if node.attrs.get("mode", "nearest") != "nearest":
        return f"Resize in mode {node.attrs['mode']!r}: the accelerator copies pixels (nearest) only"
    if any(t not in graph.constants for t in ins[1:]):
        return "Resize by scales or sizes computed at run time"
    if graph.types[node.outputs[0]].shape[:2] != x.shape[:2]:
        return "Resize of the batch or channel axis"
    if ins[0] not in ctx.on_accelerator:
        return "Resize of a tensor the CPU holds: a copy there"
    if ctx.vta_compat:
        return "Resize in VTA mode: VTA has no LOAD ACC_8BIT to bring int8 pixels into the accumulators"
    if factors(graph, node) is None:
        return "Resize whose pixel map is not a whole-factor upsampling (each input pixel an fh x fw block)"
    return None


def quantize(q, node, act):
    xq, scale = q.packed_input(node.inputs[0])
    xt = q.g.types[xq]
    fh, fw = factors(q.g, node)
    layer = UpsampleLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], fh, fw)
    out = q.output(node.outputs[0], (layer.n, layer.c, layer.out_h, layer.out_w, *xt.shape[4:]), scale,
                   q.zp.get(xq, 0))
    q.emit(OP, node, [xq], out, {"layer": asdict(layer), "epilogue": asdict(V.Epilogue(lo=None, hi=None))})


def spec(graph, node) -> KernelSpec:
    return KernelSpec(OP.name, UpsampleLayer(**node.attrs["layer"]), V.Epilogue(**node.attrs["epilogue"]))


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("Resize",),
    problem=problem,
    keeps_sign=True,
    scales_output=False,
    quantize=quantize,
    spec=spec,
    compile=lambda config, s, knobs, name, vta: compile_upsample(config, s.layer, knobs, name=name, vta_compat=vta),
    tiling_problem=lambda config, s, vta: upsample_tiling_problem(config, s.layer),
    default_choices=lambda config, s, vta: [default_upsample_knobs(config, s.layer)])
