"""SPEC §7 DRAM layouts: numpy tensors to and from the blocked layouts the DMA reads.

Activations NCHW -> (N/BATCH, C/BLOCK, H, W, BATCH, BLOCK); conv weights OIHW ->
(O/BLOCK, I/BLOCK, KH, KW, BLOCK_OUT, BLOCK_IN). Counts that are not multiples of the
block are zero-padded. A matrix is an activation with H = W = 1.
"""
from __future__ import annotations

import numpy as np

from vdla.hw.requantizer import BIAS, CTRL, MUL, REGISTERS, pack_ctrl


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _pad_axis(x: np.ndarray, axis: int, multiple: int) -> np.ndarray:
    extra = _ceil(x.shape[axis], multiple) * multiple - x.shape[axis]
    if not extra:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return np.pad(x, widths)


def pack_activation(x: np.ndarray, batch: int, block: int) -> np.ndarray:
    x = _pad_axis(_pad_axis(np.asarray(x, dtype=np.int8), 0, batch), 1, block)
    n, c, h, w = x.shape
    return np.ascontiguousarray(
        x.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_activation(packed: np.ndarray, n: int, c: int) -> np.ndarray:
    nb, cb, h, w, batch, block = packed.shape
    x = packed.transpose(0, 4, 1, 5, 2, 3).reshape(nb * batch, cb * block, h, w)
    return np.ascontiguousarray(x[:n, :c])


def pack_conv_weight(w: np.ndarray, block: int) -> np.ndarray:
    w = _pad_axis(_pad_axis(np.asarray(w, dtype=np.int8), 0, block), 1, block)
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(
        w.reshape(o // block, block, i // block, block, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_matrix_lhs(a: np.ndarray, batch: int, block: int) -> np.ndarray:
    """A (M, K) as an activation (M/BATCH, K/BLOCK, BATCH, BLOCK)."""
    packed = pack_activation(np.asarray(a)[:, :, None, None], batch, block)
    return packed.reshape(packed.shape[0], packed.shape[1], batch, block)


def pack_matrix_rhs(b: np.ndarray, block: int) -> np.ndarray:
    """B (K, N) as weights of shape (N/BLOCK, K/BLOCK, BLOCK_OUT, BLOCK_IN) (B transposed)."""
    packed = pack_conv_weight(np.asarray(b).T[:, :, None, None], block)
    return packed.reshape(packed.shape[0], packed.shape[1], block, block)


def unpack_matrix(packed: np.ndarray, m: int, n: int) -> np.ndarray:
    """(M/BATCH, N/BLOCK, BATCH, BLOCK) -> (M, N)."""
    mb, nb, batch, block = packed.shape
    return np.ascontiguousarray(packed.transpose(0, 2, 1, 3).reshape(mb * batch, nb * block)[:m, :n])


def pack_qparams(bias, mult, shift: int, zero: int, lo: int, hi: int, batch: int, block: int,
                 table: bool = False) -> np.ndarray:
    """The requantizer's registers for every output channel (vdla.hw.requantizer), as SETQ
    loads them from the accumulators: (O/L, 3, B, L) int32, per channel block its BIAS, MUL and
    CTRL rows (the registers' order; CTRL's table bit from `table`), the same in every batch
    row; padded channels are zeros."""
    bias, mult = np.asarray(bias), np.asarray(mult)
    o = _ceil(bias.shape[0], block) * block
    rows = np.zeros((len(REGISTERS), o), np.int32)
    rows[BIAS, :bias.shape[0]] = bias
    rows[MUL, :mult.shape[0]] = mult
    rows[CTRL] = pack_ctrl(shift, zero, lo, hi, table)
    per_block = rows.reshape(len(REGISTERS), o // block, 1, block).transpose(1, 0, 2, 3)
    return np.ascontiguousarray(np.broadcast_to(per_block, (o // block, len(REGISTERS), batch, block)))
