"""The front half of the VDLA pipeline, from an ONNX model to the quantized graph whose
accelerator nodes lowering compiles: import -> float graph passes -> placement ->
calibration -> int8 quantization of the accelerator part."""
from __future__ import annotations

import copy

from vdla.hw.errors import ConfigError

from ..frontend import import_onnx
from ..graph import optimize
from ..graph.passes.calibrate import calibrate
from ..graph.passes.qdq import has_qdq, strip_qdq
from ..target import check_triple
from .linear import linear_layers_as_gemm
from .lower import Kernels, untileable_kernels
from .placement import place_nodes
from .quantize import quantize_vdla
from .ranges import demote_unranged, one_grid_per_concat, tensors_to_calibrate, unclipped_at_exits
from .requant import Unquantizable
from .residual import residual_adds


class VdlaOptionError(ConfigError, ValueError):
    """Options of a compile for the accelerator that are missing or do not fit together (no
    calibration for a float model, VTA mode with per-channel activation scales)."""


def quantize_for_vdla(model, config, calibration=None, host_triple=None, input_shapes=None, constant_inputs=None,
                      per_channel_activations=False, vta_compat=False, kernels: Kernels | None = None):
    """The front half of the VDLA pipeline: import -> float graph passes -> placement ->
    calibration -> int8 quantization of the accelerator part. -> (quantized graph, float
    graph, placement, ranges). The accelerator nodes of the quantized graph are the kernels
    lower_vdla compiles (and vdla tune tunes). With `kernels` (lower.Kernels), placement also
    keeps on the CPU the nodes whose kernel does not compile and run on this hardware, so
    lowering takes every accelerator node it is given; without, only those no tiling fits."""
    if host_triple:
        check_triple(host_triple, "host triple")
    graph = import_onnx(model, input_shapes=input_shapes, constant_inputs=constant_inputs)
    qdq_ranges = {}
    if has_qdq(graph):              # a quantized model brings its own ranges
        graph, qdq_ranges = strip_qdq(graph)
    graph = linear_layers_as_gemm(optimize(graph, stop_after="infer_types", fuse=False, layout=False))
    if calibration is None and not qdq_ranges:
        raise VdlaOptionError("a float model compiled for vdla needs calibration data: pass --calibrate CALIB.npz "
                         "(one array per model input, named like the input, first axis = samples)")
    if vta_compat and per_channel_activations:
        raise VdlaOptionError("vta_compat requantizes with one shift per layer: it takes no per-channel activation "
                              "scales")
    untileable: dict[str, str] = {}
    apart: set[str] = set()         # convolutions whose kernel did not take their residual Add
    place = place_nodes(graph, config, host_triple, vta_compat=vta_compat, untileable=untileable)
    measured = {} if calibration is None else \
        calibrate(graph, calibration, tensors_to_calibrate(graph, place), per_channel=per_channel_activations)
    while True:
        # a node no schedule fits (or whose kernel does not run on this hardware, or whose
        # requantization the ALU cannot express) goes to the CPU and the graph is placed again;
        # that only shrinks the accelerator's part, so the first calibration covers every
        # placement (and a neighbour's zero point may change, hence the whole graph again)
        stats = copy.deepcopy(measured)
        if calibration is not None:
            unclipped_at_exits(graph, place, stats)
            one_grid_per_concat(graph, place, stats)
        stats.update(qdq_ranges)
        demote_unranged(graph, place, stats)
        # a residual Add runs in its conv's epilogue; where that kernel does not fit or
        # quantize, the two run apart before the conv gives up the accelerator
        fused = residual_adds(graph, place, stats, vta_compat, apart)
        try:
            quantized = quantize_vdla(graph, place, stats, config, vta_compat=vta_compat)
        except Unquantizable as why:
            if why.node in fused:
                apart.add(why.node)
            else:
                untileable[why.node] = why.reason
            place = place_nodes(graph, config, host_triple, vta_compat=vta_compat, untileable=untileable)
            continue
        found = untileable_kernels(quantized, config, vta_compat)
        if not found and kernels is not None:
            found = kernels.unfit(quantized)
        if not found:
            return quantized, graph, place, stats
        if found.keys() & fused.keys():
            apart.update(found.keys() & fused.keys())
        else:
            untileable.update(found)
        place = place_nodes(graph, config, host_triple, vta_compat=vta_compat, untileable=untileable)
