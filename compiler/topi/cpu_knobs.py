"""The knobs of the CPU schedules (conv_schedules.py): one small record per kind of anchor,
the heuristic that picks them when no tuning record applies, and the check that a record fits
a kernel (the schedule refuses knobs that do not, naming the knob and what fits).

Kinds and what their knobs shape:
- conv2d_nchwc, conv2d_nchwc_int8 (DirectConvKnobs): the register tile of the direct
  convolution, `row_tile` output pixels of one row times `oc_blocks` output-channel blocks;
- depthwise_conv2d_nchwc (DepthwiseConvKnobs): the same tile, and whether the padded input
  is read through masked loads (`inline_pad`) instead of a padded copy;
- conv2d_nchwc_winograd (WinogradKnobs): the whole-image or per-row-of-tiles structure and
  the GEMM's register tile (tiles of a row times output-channel blocks);
- conv2d_nchw (NchwConvKnobs): output channels per register tile;
- dense (DenseKnobs): output columns per parallel iteration (each its own accumulator);
- matmul (MatmulKnobs): the register tile of a (batched) float matmul, `row_tile` rows times
  `vectors` vectors of output columns.

`dims` describe the anchor as conv_schedules.find_anchor reads it: out_w and out_blocks
(the output row width and output-channel blocks of a blocked conv), tiles_h, tiles_w and
out_blocks (Winograd), out_channels (NCHW conv), columns (dense), rows and columns (matmul: of
one matrix of the batch)."""
from __future__ import annotations

from dataclasses import dataclass

MAX_REG_TILE = 14
MIN_ACCUMULATORS = 8    # FMA latency (4) x FMA ports (2) on the hosts we tune for
# Winograd: images of at most this many output tiles get the whole-image schedule (measured
# vs the direct conv: 7x7 outputs, 16 tiles, 1.27x with it, 0.92x without; 14x14, 49 tiles,
# 2.04x without, 1.85x with).
WINOGRAD_WHOLE_IMAGE_TILES = 32
DW_INLINE_PAD = True
NCHW_OC_TILE = 8
# a register tile of more accumulators than this spills on every host vdla targets
MAX_ACCUMULATORS = 2 * MAX_REG_TILE
# matmul: 8 rows x 1 vector measured as fast as 4-6 x 2-3 on a Zen 4 (ViT-Tiny's GEMMs and
# attention, 2 threads: ~55 GMAC/s) and is the tile with the smallest column tail
MATMUL_ROW_TILE = 8


def _positive(knobs, *names):
    for name in names:
        v = getattr(knobs, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{type(knobs).__name__}.{name} must be a positive integer, got {v!r}")


@dataclass(frozen=True)
class DirectConvKnobs:
    row_tile: int           # output pixels per register tile
    oc_blocks: int = 1      # output-channel blocks per register tile

    def __post_init__(self):
        _positive(self, "row_tile", "oc_blocks")


@dataclass(frozen=True)
class DepthwiseConvKnobs:
    row_tile: int
    oc_blocks: int = 1
    inline_pad: bool = DW_INLINE_PAD    # masked loads of the input instead of a padded copy

    def __post_init__(self):
        _positive(self, "row_tile", "oc_blocks")
        if not isinstance(self.inline_pad, bool):
            raise ValueError(f"DepthwiseConvKnobs.inline_pad must be true or false, got {self.inline_pad!r}")


@dataclass(frozen=True)
class WinogradKnobs:
    whole_image: bool       # transform and GEMM the whole image at once, not per row of tiles
    row_tile: int           # tiles of a row per GEMM register tile
    oc_blocks: int = 1      # output-channel blocks per GEMM register tile

    def __post_init__(self):
        _positive(self, "row_tile", "oc_blocks")
        if not isinstance(self.whole_image, bool):
            raise ValueError(f"WinogradKnobs.whole_image must be true or false, got {self.whole_image!r}")


@dataclass(frozen=True)
class NchwConvKnobs:
    oc_tile: int            # output channels per register tile

    def __post_init__(self):
        _positive(self, "oc_tile")


@dataclass(frozen=True)
class DenseKnobs:
    columns: int = 1        # output columns per parallel iteration

    def __post_init__(self):
        _positive(self, "columns")


@dataclass(frozen=True)
class MatmulKnobs:
    row_tile: int = MATMUL_ROW_TILE     # output rows per register tile
    vectors: int = 1                    # vectors of output columns per register tile

    def __post_init__(self):
        _positive(self, "row_tile", "vectors")


KNOBS = {"conv2d_nchwc": DirectConvKnobs, "conv2d_nchwc_int8": DirectConvKnobs,
         "depthwise_conv2d_nchwc": DepthwiseConvKnobs, "conv2d_nchwc_winograd": WinogradKnobs,
         "conv2d_nchw": NchwConvKnobs, "dense": DenseKnobs, "matmul": MatmulKnobs}


def row_tile(width: int, limit: int = MAX_REG_TILE) -> int:
    """Output pixels per register tile: the largest divisor of the width up to `limit` (no
    tail) unless that is small, then `limit` with a tail tile (partition_loops keeps the
    bounds checks out of the full tiles)."""
    for t in range(min(width, limit), 0, -1):
        if width % t == 0:
            return t if t >= limit // 2 else min(width, limit)
    return min(width, limit)


def divisor_up_to(n: int, limit: int) -> int:
    for t in range(min(n, limit), 0, -1):
        if n % t == 0:
            return t
    return 1


def vector_factor(extent: int, lanes: int) -> int | None:
    """The widest vector (lanes, lanes/2, ... down to 4) that divides the extent, or None:
    narrower vectors cost more in shuffles than they save."""
    f = lanes
    while f >= 4:
        if extent % f == 0:
            return f
        f //= 2
    return None


def default_knobs(kind: str, dims: dict):
    """The schedule vdla compiles without a tuning record."""
    if kind == "conv2d_nchwc":
        return DirectConvKnobs(row_tile(dims["out_w"]))
    if kind == "conv2d_nchwc_int8":
        # the int8 dot product is tensorized over whole tiles (no tail): a divisor of the row,
        # however small, beats the host step a tail would leave (a 17-pixel row: 1-pixel tiles)
        return DirectConvKnobs(divisor_up_to(dims["out_w"], MAX_REG_TILE))
    if kind == "depthwise_conv2d_nchwc":
        return DepthwiseConvKnobs(row_tile(dims["out_w"]), 1, DW_INLINE_PAD)
    if kind == "conv2d_nchwc_winograd":
        tile = row_tile(dims["tiles_w"])
        # A row of few tiles gives few independent accumulators: take two output-channel blocks
        # per register tile then, so the FMA pipeline has enough chains in flight.
        blocks = 2 if tile < MIN_ACCUMULATORS and dims["out_blocks"] % 2 == 0 else 1
        return WinogradKnobs(dims["tiles_h"] * dims["tiles_w"] <= WINOGRAD_WHOLE_IMAGE_TILES, tile, blocks)
    if kind == "conv2d_nchw":
        return NchwConvKnobs(divisor_up_to(dims["out_channels"], NCHW_OC_TILE))
    if kind == "dense":
        return DenseKnobs(1)
    if kind == "matmul":
        return MatmulKnobs(min(MATMUL_ROW_TILE, dims["rows"]), 1)
    raise ValueError(f"no CPU schedule knobs for {kind!r} kernels; kinds with knobs: {', '.join(KNOBS)}")


def knobs_problem(kind: str, dims: dict, knobs) -> str | None:
    """None if `knobs` fit a `kind` anchor of `dims`, else what does not fit."""
    want = KNOBS.get(kind)
    if want is None:
        return f"{kind!r} kernels have no schedule knobs"
    if type(knobs) is not want:
        return f"a {kind} kernel takes {want.__name__}, got {type(knobs).__name__}"
    width, unit, whole = {"conv2d_nchwc_winograd": ("tiles_w", "tiles", "row"),
                          "matmul": ("rows", "rows", "matrix")}.get(kind, ("out_w", "pixels", "row"))
    if hasattr(knobs, "row_tile") and knobs.row_tile > dims[width]:
        return f"row_tile {knobs.row_tile} exceeds the {dims[width]} {unit} of a {whole}"
    if isinstance(knobs, MatmulKnobs) and knobs.row_tile * knobs.vectors > MAX_ACCUMULATORS:
        return f"a {knobs.row_tile} x {knobs.vectors} register tile holds more than {MAX_ACCUMULATORS} accumulators"
    if kind == "conv2d_nchwc_int8" and dims["out_w"] % knobs.row_tile:
        # the int8 dot-product instruction is tensorized over whole tiles: a tail needs bounds checks
        return (f"row_tile {knobs.row_tile} does not divide the {dims['out_w']} pixels of a row (int8 tiles have no "
                "tail)")
    if hasattr(knobs, "oc_blocks") and dims["out_blocks"] % knobs.oc_blocks:
        return f"oc_blocks {knobs.oc_blocks} does not divide the {dims['out_blocks']} output-channel blocks"
    if isinstance(knobs, NchwConvKnobs) and dims["out_channels"] % knobs.oc_tile:
        return f"oc_tile {knobs.oc_tile} does not divide the {dims['out_channels']} output channels"
    if isinstance(knobs, DenseKnobs) and dims["columns"] % knobs.columns:
        return f"columns {knobs.columns} does not divide the {dims['columns']} output columns"
    return None
