"""The schedules of one CPU kernel that a search may measure (topi.cpu_knobs), and the order
it measures them in.

The spaces are small (tens of settings), so a search walks them in a fixed order rather
than sampling: the default first, then per structure (the knobs other than the tile size:
output-channel blocks of a register tile, masked-load padding, the whole-image Winograd)
the tile sizes nearest GOOD_ACCUMULATORS accumulators, structures taking turns, so that a
small budget sees every structure's best guess before any structure's second."""
from __future__ import annotations

from dataclasses import fields

from ..topi.cpu_knobs import (IMAGE_ACCUMULATOR_BYTES, MAX_ACCUMULATORS, MIN_ACCUMULATORS,
                              OC_BLOCKS_SHARED_BROADCAST, DenseKnobs, DepthwiseConvKnobs, DirectConvKnobs, MatmulKnobs,
                              NchwConvKnobs, WinogradKnobs, image_accumulates, knobs_problem)
from .errors import TuningError

MAX_NCHW_OC_TILE = 16
MAX_DENSE_COLUMNS = 8
MATMUL_TUNED_VECTORS = (1, 2, 3)
# The fastest register tiles of ResNet-18's convolutions on a Zen 5 hold 8 to 24 accumulators
# (benchmarks/tune_cpu.py): twice the FMA pipeline's chains, with registers left for operands.
GOOD_ACCUMULATORS = 2 * MIN_ACCUMULATORS
_SIZE_KNOBS = ("row_tile", "oc_tile", "columns")


def _tiles(width: int, blocks_total: int):
    """(row_tile, oc_blocks) register tiles of at most MAX_ACCUMULATORS accumulators."""
    for b in OC_BLOCKS_SHARED_BROADCAST:
        if blocks_total % b == 0:
            for t in range(1, min(width, MAX_ACCUMULATORS // b) + 1):
                yield t, b


def _candidates(kind: str, dims: dict) -> list:
    if kind == "conv2d_nchwc":     # each tile also accumulating over the image, where it fits 4x the default's
        return [DirectConvKnobs(t, b, image) for t, b in _tiles(dims["out_w"], dims["out_blocks"])
                for image in (False, True) if not image or image_accumulates(dims, b, 4 * IMAGE_ACCUMULATOR_BYTES)]
    if kind in ("conv2d_nchwc_int8", "matmul_int8"):
        return [DirectConvKnobs(t, b) for t, b in _tiles(dims["out_w"], dims["out_blocks"])]
    if kind == "depthwise_conv2d_nchwc":
        return [DepthwiseConvKnobs(t, b, pad) for pad in (True, False)
                for t, b in _tiles(dims["out_w"], dims["out_blocks"])]
    if kind == "conv2d_nchwc_winograd":
        # per row of tiles also two rows a step, half of them (a step per thread of two), all
        rows = dims["tiles_h"]
        structures = [(True, 1), (False, 1)] + [(False, g) for g in sorted({2, -(-rows // 2), rows}) if 1 < g <= rows]
        # and a register tile of one row of tiles or two (of whole rows)
        return [WinogradKnobs(whole, t, b, group, tile_rows) for whole, group in structures
                for t, b in _tiles(dims["tiles_w"], dims["out_blocks"])
                for tile_rows in ((1, 2) if t == dims["tiles_w"] and (rows if whole else group) > 1 else (1,))]
    if kind == "conv2d_nchw":
        oc = dims["out_channels"]
        return [NchwConvKnobs(t) for t in range(1, min(oc, MAX_NCHW_OC_TILE) + 1) if oc % t == 0]
    if kind == "dense":
        n = dims["columns"]
        return [DenseKnobs(c) for c in range(1, min(n, MAX_DENSE_COLUMNS) + 1) if n % c == 0]
    if kind == "matmul":
        return [MatmulKnobs(t, v) for v in MATMUL_TUNED_VECTORS
                for t in range(1, min(dims["rows"], MAX_ACCUMULATORS // v) + 1)]
    raise TuningError(f"{kind} kernels have no CPU schedule knobs")


def _rank(knobs, width) -> tuple:
    """Smaller is measured earlier: nearer GOOD_ACCUMULATORS, then a row tile without a tail."""
    acc = 1
    for name in ("row_tile", "tile_rows", "oc_blocks", "oc_tile", "columns", "vectors"):
        acc *= getattr(knobs, name, 1)
    tail = hasattr(knobs, "row_tile") and width % knobs.row_tile != 0
    return abs(acc - GOOD_ACCUMULATORS), tail, acc


class CpuKnobSpace:
    """The knob settings of one kernel worth measuring, default first, in measuring order."""

    def __init__(self, kind: str, dims: dict, default):
        self.kind, self.dims, self.default = kind, dict(dims), default
        points = [k for k in _candidates(kind, dims) if k != default and knobs_problem(kind, dims, k) is None]
        width = dims.get({"conv2d_nchwc_winograd": "tiles_w", "matmul": "rows"}.get(kind, "out_w"), 1)
        turns: dict[tuple, int] = {}
        keyed = []
        for k in sorted(points, key=lambda k: _rank(k, width)):
            structure = tuple(getattr(k, f.name) for f in fields(k) if f.name not in _SIZE_KNOBS)
            turns[structure] = turns.get(structure, -1) + 1
            keyed.append(((turns[structure], _rank(k, width)), k))
        self.points = [default] + [k for _, k in sorted(keyed, key=lambda tk: tk[0])]

    def __len__(self) -> int:
        return len(self.points)

    def __contains__(self, knobs) -> bool:
        return knobs in self.points
