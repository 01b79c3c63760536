"""Run a compiled VDLA operator on host arrays: pack the operands into the SPEC §7 layouts,
compile (default or given knobs), run on a device through the runtime, unpack the result.
For tests, benchmarks, `vdla demo` and a tuner's measurements."""
from __future__ import annotations

import numpy as np

from vdla.driver.runtime import run_program
from vdla.driver.runtime.layout import (pack_activation, pack_conv_weight, pack_matrix_lhs, pack_matrix_rhs,
                                        pack_qparams,
                                        unpack_activation, unpack_matrix)

from .build import compile_conv2d, compile_dense
from .eltwise import AddLayer, compile_add
from .epilogue import Epilogue
from .plan import ConvLayer, DenseLayer
from .pool import PoolLayer, compile_pool2d, window_factor
from .vta_mode import diagonal_weight, scaled_identity


def pack_bias(bias, batch, block):
    """A per-output-channel int32 vector (bias, requant multiplier) as accumulator elements
    (O/L, B, L), the same value in every batch row."""
    o = -(-bias.shape[0] // block) * block
    b = np.zeros(o, np.int32)
    b[:bias.shape[0]] = bias
    return np.ascontiguousarray(np.broadcast_to(b.reshape(-1, 1, block), (o // block, batch, block)))


def pack_grouped_weight(w, block):
    """(C, C/G, KH, KW) of a conv whose groups lie inside blocks -> (C/L, KH, KW, L, L): output
    channel o's taps in row o % L of block o // L, at the lanes of its group's input channels
    (depthwise, C/G = 1: on the diagonal)."""
    c, width, kh, kw = w.shape
    out = np.zeros((-(-c // block), kh, kw, block, block), np.int8)
    o = np.arange(c)[:, None]
    cin = o // width * width + np.arange(width)[None, :]
    out[o // block, :, :, o % block, cin % block] = w
    return out


def pack_depthwise_rows(w, block, tiles=None):
    """(C, 1, KH, KW) depthwise weights -> (C/L, tiles, L, L) for DEPTHWISE rows: channel o's
    taps of kernel row ky in row o % L of tile (o // L, ky), lanes 0..KW-1 (the other lanes
    zero); the tiles past KH (ConvLayer.row_tiles: the zero tiles of stride 2) zero."""
    c, width, kh, kw = w.shape
    if width != 1:
        raise ValueError(f"DEPTHWISE rows take one input channel per group, got weights {list(w.shape)}")
    out = np.zeros((-(-c // block), tiles or kh, block, block), np.int8)
    o = np.arange(c)
    out[o // block, :kh, o % block, :kw] = w[:, 0]
    return out


def pack_table(table, config):
    """A TABLE_ENTRIES int8 lookup table (entry i for code i - 128) as LOAD LUT's elements."""
    table = np.asarray(table, np.int8)
    return np.ascontiguousarray(table.reshape(config.lut_depth, config.batch, config.block))


def _epilogue_operands(ep, batch, block, bias, scale, residual, pack_residual, rscale=None, table=None,
                       config=None) -> list:
    """The epilogue's buffers in kernel order: [bias], [scale], [rscale], [residual], [table];
    on the requantizer its qparams (bias and the multipliers `scale` with ep's constants)."""
    out = []
    if ep.requantizer:
        out.append(pack_qparams(bias, scale, ep.shift, ep.zero, ep.lo, ep.hi, batch, block, table=ep.table))
    if ep.bias:
        out.append(pack_bias(bias, batch, block))
    if ep.scale:
        out.append(pack_bias(scale, batch, block))
    if ep.residual_scale:
        out.append(pack_bias(rscale, batch, block))
    if ep.residual:
        out.append(pack_residual(residual, batch, block))
    if ep.table:
        out.append(pack_table(table, config))
    return out


def run_conv(device, x, w, stride=1, pad=1, ep=None, knobs=None, bias=None, residual=None, depthwise=False,
             check_races=False, runner=None, scale=None, vta_compat=False, rscale=None, table=None, rows=False):
    """Compile and run a conv of x (N, C, H, W) int8 with w (O, C, KH, KW) (depthwise: (C, 1, KH, KW);
    rows: by DEPTHWISE rows). Returns (y (N, O, OH, OW) int8, LaunchResult, KernelProgram)."""
    config = device.config
    ep = ep or Epilogue()
    L = config.block
    pads = pad if isinstance(pad, tuple) else (pad,) * 4
    n, c, h, wd = x.shape
    o = c if depthwise else w.shape[0]
    kh, kw = w.shape[2:]
    layer = ConvLayer(-(-n // config.batch), -(-c // L), h, wd, -(-o // L), kh, kw, stride, pads, depthwise,
                      rows=rows)
    prog, knobs = compile_conv2d(config, layer, ep, knobs, vta_compat=vta_compat)
    y, result = run_conv_program(device, prog, layer, x, w, ep, bias, residual, scale, check_races, runner, rscale,
                                 table)
    return y, result, prog


def run_conv_program(device, prog, layer: ConvLayer, x, w, ep=None, bias=None, residual=None, scale=None,
                     check_races=False, runner=None, rscale=None, table=None):
    """Run `prog`, compile_conv2d's kernel of `layer` (and `ep`), on x (N, C, H, W) int8 and w
    (O, C, KH, KW) (depthwise: (C, 1, KH, KW)). Returns (y (N, O, OH, OW) int8, LaunchResult)."""
    B, L = device.config.batch, device.config.block
    ep = ep or Epilogue()
    if layer.rows:
        weight = pack_depthwise_rows(w, L, layer.row_tiles)
    else:
        weight = (pack_grouped_weight if layer.depthwise else pack_conv_weight)(w, L)
    inputs = [pack_activation(x, B, L), weight]
    inputs += _epilogue_operands(ep, B, L, bias, scale, residual, pack_activation, rscale, table, device.config)
    raw, result = run_program(device, prog, inputs, check_races=check_races, runner=runner)
    out_shape = (layer.n, layer.o, layer.out_h, layer.out_w, B, L)
    o = x.shape[1] if layer.depthwise else w.shape[0]
    return unpack_activation(raw.view(np.int8).reshape(out_shape), x.shape[0], o), result


def run_dense(device, a, b, ep=None, knobs=None, bias=None, residual=None, check_races=False, runner=None,
              scale=None, vta_compat=False, table=None):
    """Compile and run a (M, K) int8 @ b (K, N) int8. Returns (c (M, N) int8, LaunchResult, KernelProgram)."""
    config = device.config
    ep = ep or Epilogue()
    B, L = config.batch, config.block
    ap, bp = pack_matrix_lhs(a, B, L), pack_matrix_rhs(b, L)
    layer = DenseLayer(ap.shape[0], ap.shape[1], bp.shape[0])
    prog, _ = compile_dense(config, layer, ep, knobs, vta_compat=vta_compat)
    inputs = [ap, bp] + _epilogue_operands(ep, B, L, bias, scale, residual, pack_matrix_lhs, table=table,
                                           config=config)
    raw, result = run_program(device, prog, inputs, check_races=check_races, runner=runner)
    c = unpack_matrix(raw.view(np.int8).reshape(layer.m, layer.n, B, L), a.shape[0], b.shape[1])
    return c, result, prog


def run_pool(device, x, kernel, stride=1, pad=0, mode="max", ep=None, knobs=None, check_races=False, runner=None,
             vta_compat=False, pad_value=None):
    """Compile and run pooling of x (N, C, H, W) int8 over a kernel (KH, KW) window ("max", or
    "sum" with the epilogue's mul/shift for an average). Returns (y int8 NCHW, LaunchResult,
    KernelProgram)."""
    config = device.config
    B, L = config.batch, config.block
    pads = pad if isinstance(pad, tuple) else (pad,) * 4
    n, c, h, w = x.shape
    xp = pack_activation(x, B, L)
    layer = PoolLayer(xp.shape[0], xp.shape[1], h, w, kernel[0], kernel[1], stride, pads, mode, pad_value)
    prog, _ = compile_pool2d(config, layer, ep, knobs, vta_compat=vta_compat)
    factor = window_factor(layer, ep or Epilogue(lo=None, hi=None)) if vta_compat else 1
    inputs = [xp, scaled_identity(L, factor)]
    raw, result = run_program(device, prog, inputs, check_races=check_races, runner=runner)
    out_shape = (layer.n, layer.c, layer.out_h, layer.out_w, B, L)
    return unpack_activation(raw.view(np.int8).reshape(out_shape), n, c), result, prog


def run_add(device, a, b, ma, mb, ep, offset=None, knobs=None, check_races=False, runner=None, vta_compat=False):
    """Compile and run y = epilogue(a * ma + b * mb [+ offset]) for a, b (N, C, H, W) int8; the
    factors are immediates (ints) or one per channel (arrays of C; then `offset`, C int32
    values, may be given). Returns (y int8 NCHW, LaunchResult, KernelProgram)."""
    config = device.config
    B, L = config.batch, config.block
    n, c, h, w = a.shape
    pa, pb = pack_activation(a, B, L), pack_activation(b, B, L)
    per_channel = np.ndim(ma) > 0
    layer = AddLayer(pa.shape[0], pa.shape[1], h, w, 0 if per_channel else int(ma), 0 if per_channel else int(mb),
                     per_channel, offset is not None)
    prog, _ = compile_add(config, layer, ep, knobs, vta_compat=vta_compat)
    if vta_compat:
        factors = ([diagonal_weight(m, L) for m in (ma, mb)] if per_channel
                   else [scaled_identity(L, ma), scaled_identity(L, mb)])
    else:
        factors = [pack_bias(np.asarray(m, np.int32), B, L) for m in (ma, mb)] if per_channel else []
    extra = [pack_bias(np.asarray(offset, np.int32), B, L)] if offset is not None else []
    raw, result = run_program(device, prog, [pa, pb, *factors, *extra], check_races=check_races, runner=runner)
    return unpack_activation(raw.view(np.int8).reshape(pa.shape), n, c), result, prog
