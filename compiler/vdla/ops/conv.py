"""VdlaConv: ONNX Conv (2-d, dense or grouped, with its ReLU/Clip) on the GEMM core.

A grouped convolution (depthwise, RegNet's groups of 16, ResNeXt's of 4 to 16) whose groups lie
inside channel blocks runs as the depthwise kernel: output block o reads input block o only,
through weight blocks that hold each group's taps on the diagonal (block-diagonal; one useful
MAC in BLOCK/width). A depthwise one with 3 columns of taps and stride 1 or 2 runs by DEPTHWISE
rows where the config has it (vdla.hw.depthwise; not in VTA-compatible streams): a micro-op per
output and kernel row (two at stride 2), its weights a tile per kernel row with the taps in lanes.

A convolution of the model's input with few channels (an RGB stem) reads it as columns: the
edge's quantization writes each window's taps as channels (im2col), and the convolution runs as a
1x1 one over them, its taps packed into the lanes. ResNet's 7x7 stem over 3 channels takes 10
micro-ops per output block and pixel instead of 49 that used 3 of 16 lanes each.

Placement offloads a convolution the ISA expresses (2-d, undilated, one stride for both axes,
padding the DMA can add, weights known when compiling, group 1 or grouped inside blocks) unless the
board's CPU would be faster: a layer with few input channels wastes most of each BLOCK-wide
micro-op, so the estimate counts GEMM micro-ops with channels padded to BLOCK, at
ACCEL_EFFICIENCY (op.gemm_seconds), against the board CPU's MAC rate."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import conv as semantics
from vdla.driver.runtime.layout import pack_conv_weight
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.depthwise import depthwise_problem

from ...intrin.vdla import row_stride_problem
from ...topi import vdla as V
from ..op import KernelSpec, Tunable, VdlaOp, gemm_seconds
from ..quantizer import GemmForm, quantize_gemm



def macs(graph, node) -> int:
    y = graph.types[node.outputs[0]]
    w = graph.types[node.inputs[1]]
    return int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))


def accel_seconds(graph, node, config) -> float:
    """GEMM micro-ops with channels padded to BLOCK, in seconds (gemm_seconds)."""
    x, y, w = (graph.types[node.inputs[0]], graph.types[node.outputs[0]], graph.types[node.inputs[1]])
    L = config.block
    ceil = lambda c: -(-c // L)           # noqa: E731
    # micro-ops per output block and pixel: the taps times the input blocks each one reads
    if _depthwise(node, w.shape[1], L):
        per = w.shape[2] * w.shape[3]
    else:
        per = _taps_in_blocks(w.shape, L)[_reads_columns(graph, node, config)]
    uops = ceil(y.shape[0] / config.batch) * ceil(y.shape[1]) * y.shape[2] * y.shape[3] * per
    return gemm_seconds(uops, config)


def _taps_in_blocks(w_shape, block: int) -> tuple[int, int]:
    """(micro-ops per output block and pixel read directly, read as columns)."""
    c, kh, kw = w_shape[1:]
    return kh * kw * -(-c // block), -(-(c * kh * kw) // block)


def _reads_columns(graph, node, config) -> bool:
    """Whether the convolution reads the model's input as columns (im2col at the edge): where
    that takes at most 3/4 of the micro-ops of reading it directly (few channels, several
    taps). Only the model's input: a tensor the accelerator made is packed by channels."""
    w = graph.types[node.inputs[1]].shape
    if node.inputs[0] not in graph.inputs or node.attrs.get("group", 1) != 1 or len(w) != 4:
        return False
    direct, columns = _taps_in_blocks(w, config.block)
    return 4 * columns <= 3 * direct


def _isa_problem(graph, node, config) -> str | None:
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
    width = x.shape[1] // group
    if group != 1 and (w.shape[0] != x.shape[1] or (config.block % width and width % config.block)):
        return (f"group={group} of {width} input and {w.shape[0] // group} output channels: the accelerator's grouped "
                f"convolutions take groups inside one block of {config.block} channels or of whole blocks, as many "
                "out as in")
    if group != 1 and width > config.block and x.shape[0] > config.batch:
        return (f"group={group} of whole channel blocks over {x.shape[0]} images: the groups' channels are contiguous "
                f"in the packed layout only for one batch block ({config.batch})")
    return None


def problem(graph, node, ctx) -> str | None:
    why = _isa_problem(graph, node, ctx.config)
    if why:
        return why
    accel, cpu = accel_seconds(graph, node, ctx.config), macs(graph, node) / ctx.cpu_rate
    if accel > cpu:
        return (f"{graph.types[node.inputs[0]].shape[1]} input channels: cheaper on the CPU "
                f"(~{accel * 1e3:.2f} ms on the accelerator, ~{cpu * 1e3:.2f} ms on {ctx.board_cpu})")
    return None


def _layer(q, node, xq, w):
    g, cfg, a = q.g, q.config, node.attrs
    xt, yt = g.types[node.inputs[0]], g.types[node.outputs[0]]
    L = cfg.block
    pads, h, w_ = tuple(a.get("pads") or (0, 0, 0, 0)), xt.shape[2], xt.shape[3]
    if xq in q.prepadded:            # its quantization wrote the padding (Quantizer.asymmetric)
        pads, h, w_ = (0, 0, 0, 0), g.types[xq].shape[2], g.types[xq].shape[3]
    groups = _groups(node, w.shape[1], L)
    c, o = (w.shape[1] // L, w.shape[1] // L) if groups else (-(-xt.shape[1] // L), -(-yt.shape[1] // L))
    stride = (a.get("strides") or [1, 1])[0]
    depthwise = _depthwise(node, w.shape[1], L)
    # a depthwise 1 x TAPS row filter per kernel row (DEPTHWISE), where the hardware has it
    rows = (depthwise and w.shape[1] == 1 and w.shape[3] == DEPTHWISE_TAPS and not q.vta_compat
            and depthwise_problem(cfg) is None and row_stride_problem(cfg, stride) is None)
    layer = V.ConvLayer(-(-xt.shape[0] // cfg.batch), c, h, w_, o, w.shape[2], w.shape[3], stride, pads, depthwise,
                        pad_value=q.zp.get(xq, 0), rows=rows)
    return V.GroupedConvLayer(groups, layer) if groups else layer


def _columns_layer(q, node, xq, w):
    """A convolution over columns (_reads_columns): 1x1 over the packed taps."""
    nb, cb, oh, ow = q.g.types[xq].shape[:4]
    o = -(-q.g.types[node.outputs[0]].shape[1] // q.config.block)
    return V.ConvLayer(nb, cb, oh, ow, o, 1, 1, 1, (0, 0, 0, 0), False, pad_value=q.zp.get(xq, 0))


def _columns(q, node):
    a = node.attrs
    w = q.g.types[node.inputs[1]].shape
    return q.im2col_input(node.inputs[0], w[2:], (a.get("strides") or [1, 1])[0], a.get("pads") or (0, 0, 0, 0))


def _out_shape(layer, cfg):
    conv = _single(layer)
    return (conv.n, getattr(layer, "groups", 1) * conv.o, conv.out_h, conv.out_w, cfg.batch, cfg.block)


def _pack_weight(node, w_q, layer, L):
    width = w_q.shape[1]
    if _single(layer).rows:
        return V.pack_depthwise_rows(w_q, L, _single(layer).row_tiles)
    if _depthwise(node, width, L):
        return V.pack_grouped_weight(w_q, L)
    groups = _groups(node, width, L)
    if not groups:
        return pack_conv_weight(w_q, L)
    # groups of whole blocks: each group's (width, width) conv packed, one group after another
    return np.concatenate([pack_conv_weight(w_q[g * width:(g + 1) * width], L) for g in range(groups)])


def _layer_doc(layer) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(layer).items()} \
        if isinstance(layer, V.ConvLayer) else {"groups": layer.groups, "conv": _layer_doc(layer.conv)}


def _conv_layer(doc: dict):
    if "groups" in doc:
        return V.GroupedConvLayer(doc["groups"], _conv_layer(doc["conv"]))
    return V.ConvLayer(**dict(doc, pads=tuple(doc["pads"])))


def _compile(config, s, knobs, name, vta):
    if isinstance(s.layer, V.GroupedConvLayer):
        return V.compile_grouped_conv(config, s.layer, s.ep, knobs, name=name, vta_compat=vta)
    return V.compile_conv2d(config, s.layer, s.ep, knobs, name=name, vta_compat=vta)


def _single(layer):
    """The one conv kernel a layer compiles (a grouped conv's: one group's)."""
    return layer.conv if isinstance(layer, V.GroupedConvLayer) else layer


def _depthwise(node, width: int, block: int) -> bool:
    """Grouped inside blocks (depthwise the narrowest): each output block reads its own input
    block only. (Groups of whole blocks are a dense conv per group, _groups.)"""
    return node.attrs.get("group", 1) > 1 and width <= block


def _groups(node, width: int, block: int) -> int:
    """The groups of a grouped conv whose groups are whole channel blocks (`width` input
    channels each), else 0."""
    group = node.attrs.get("group", 1)
    return group if group > 1 and width > block else 0


def _input_channel(shape):
    """Weights (O, O/G, KH, KW) of a grouped conv: the input channel each one reads."""
    o, width = shape[:2]
    return ((np.arange(o) // width * width)[:, None] + np.arange(width)[None, :])[:, :, None, None]


GEMM_FORM = GemmForm(
    input_channel=lambda node, shape: _input_channel(shape) if node.attrs.get("group", 1) > 1 else
    np.arange(shape[1])[:, None, None],
    layer=_layer,
    layer_doc=_layer_doc,
    out_shape=_out_shape,
    pack_weight=_pack_weight)


# the weights (O, C, KH, KW) as (O, C*KH*KW, 1, 1): input channel c*KH*KW + i*KW + j is tap (i, j)
# of channel c, as boundary.im2col lays the columns out
COLUMNS_FORM = GemmForm(
    input_channel=lambda node, shape: np.arange(shape[1])[:, None, None],
    layer=_columns_layer,
    layer_doc=_layer_doc,
    out_shape=_out_shape,
    pack_weight=lambda node, w_q, layer, L: pack_conv_weight(w_q.reshape(w_q.shape[0], -1, 1, 1), L),
    packed_input=_columns)


def _quantize(q, node, act):
    form = COLUMNS_FORM if _reads_columns(q.g, node, q.config) else GEMM_FORM
    return quantize_gemm(q, OP, node, act, form)


def spec(graph, node) -> KernelSpec:
    return KernelSpec(OP.name, _conv_layer(node.attrs["layer"]), V.Epilogue(**node.attrs["epilogue"]))


def probe_shapes(config, lay):
    """(x, w, out, per-channel vector) shapes and the products summed per output."""
    B, L = config.batch, config.block
    w = ((lay.c, lay.row_tiles, L, L) if lay.rows else (lay.c, lay.kh, lay.kw, L, L) if lay.depthwise
         else (lay.o, lay.c, lay.kh, lay.kw, L, L))
    taps = lay.kh * lay.kw * (1 if lay.depthwise else lay.c * L)
    return (lay.n, lay.c, lay.h, lay.w, B, L), w, (lay.n, lay.o, lay.out_h, lay.out_w, B, L), (lay.o, B, L), taps


def describe(lay: dict, config) -> str:
    dw = (" depthwise by rows" if lay.get("rows") else " depthwise") if lay["depthwise"] else ""
    return (f"conv{dw} {lay['c'] * config.block}->{lay['o'] * config.block} {lay['kh']}x{lay['kw']}/{lay['stride']} "
            f"{lay['h']}x{lay['w']}")


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("Conv",),
    problem=problem,
    macs=macs,
    fuses_activation=True,
    fuses_table=True,
    quantize=_quantize,
    spec=spec,
    compile=_compile,
    tiling_problem=lambda config, s, vta: V.conv_tiling_problem(config, _single(s.layer), s.ep),
    default_choices=lambda config, s, vta: V.default_conv_choices(config, _single(s.layer), s.ep),
    tuning=Tunable(record_op="conv2d", layer_type=V.ConvLayer, knobs_type=V.ConvKnobs,
                   knob_space=V.conv_knob_space, cost=V.conv_cost, steps=V.conv_steps,
                   probe_shapes=probe_shapes, describe=describe))
