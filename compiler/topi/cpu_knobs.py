"""The knobs of the CPU schedules (conv_schedules.py): one small record per kind of anchor,
the heuristic that picks them when no tuning record applies, and the check that a record fits
a kernel (the schedule refuses knobs that do not, naming the knob and what fits).

Kinds and what their knobs shape:
- conv2d_nchwc, conv2d_nchwc_int8 (DirectConvKnobs): the register tile of the direct
  convolution, `row_tile` output pixels of one row times `oc_blocks` output-channel blocks,
  and (float only) whether the tile's blocks accumulate over the whole image;
- matmul_int8 (DirectConvKnobs): the same tile of the uint8 x int8 matmul, rows for pixels;
- depthwise_conv2d_nchwc (DepthwiseConvKnobs): the same tile, and whether the padded input
  is read through masked loads (`inline_pad`) instead of a padded copy;
- conv2d_nchwc_winograd (WinogradKnobs): the whole-image or per-row-of-tiles structure (and
  rows of tiles per parallel step), and the GEMM's register tile (tiles of a row times
  output-channel blocks);
- conv2d_nchw (NchwConvKnobs): output channels per register tile;
- dense (DenseKnobs): output columns per parallel iteration (each its own accumulator);
- matmul (MatmulKnobs): the register tile of a (batched) float matmul, `row_tile` rows times
  `vectors` vectors of output columns.

The defaults come from the target's register file (RegisterFile: vector registers, lanes):
the register tile of the direct, depthwise and Winograd convolutions is the one with the
fewest loads per FMA that fits the registers (register_tile), so an AVX-512 host gets 5 x 4 or
7 x 2 tiles (its direct convolutions at most 2 blocks: 8 x 2, 7 x 2; 1x1 ones 3: 7 x 3), a
256-bit AVX2 one 2 x 2 or 4 x 1, a 32-bit ARM 2 x 1. Where the target has AMX tile registers
(RegisterFile.amx_tiles) the int8 tile is a tile register's rows by up to 4 blocks instead.

`dims` describe the anchor as conv_schedules.find_anchor reads it: out_w, out_blocks and block
(the output row width, output-channel blocks and lanes per block of a blocked conv; a grouped
conv's out_blocks are one group's, which a register tile's blocks must stay within), with
out_h, taps and groups for conv2d_nchwc (its output's rows, kernel taps, groups), tiles_h,
tiles_w, out_blocks, block and filter_bytes (Winograd: its transformed filter's), out_channels
(NCHW conv), columns (dense), rows and columns (matmul: of one matrix of the batch)."""
from __future__ import annotations

from dataclasses import dataclass

from ..tir.passes.partition import PARALLEL_TAIL_SHARE
from ..tir.tile_gemm import TILE_ROWS

MAX_REG_TILE = 14
MIN_ACCUMULATORS = 8    # FMA latency (4) x FMA ports (2) on the hosts we tune for
# A row tile that leaves a tail: its tail tile runs its own, shorter code. On a Zen 5 a 7-pixel row
# ran 1.2x faster as one 7 x 2 tile than as 4 x 4 and 3 x 4, whose loads per FMA are 0.83x. That
# is a tail's cost in a row of TAIL_ROW pixels; a longer row spreads it (TAIL_ROW / width of it):
# on a Zen 3 (AVX2) MobileNetV2's 1x1 convs over 196-pixel rows ran 6 x 1 (a 4-pixel tail) in
# 0.26 ms against 0.34 for the tail-free 2 x 2 that the whole 1.25 picked.
TAIL_COST = 1.25
TAIL_ROW = 7
# output-channel blocks a register tile may hold (the defaults pick among them, the tuner searches them)
OC_BLOCKS = (1, 2, 4)
# The direct convolutions (float and int8) and the int8 matmul where a 16-channel block is one of
# 32 vector registers (AVX-512): tiles of at most 2 blocks. On an Intel Xeon (AVX-512, 2 threads) ResNet-18's
# float direct 3x3 convs ran 8 x 2 / 7 x 2 / 7 x 2 (56, 14 and 7 pixels a row, stride 1) in 0.75,
# 0.80, 0.87 ms against 0.87-0.88 for the 5 x 4 the fewest loads per FMA picks, and its stride-2
# ones 0.44-0.45 against 0.44-0.47; the best tile of any shape was within 6% of these. Its int8
# (VNNI) 3x3 convs at 56 and 28 pixels a row ran 7 x 2 in 0.178 and 0.185 ms against 0.192 and
# 0.212 for 4 x 4 (1 thread: 0.343, 0.302 against 0.358, 0.314), and BERT's [128, 768] x
# [768, 3072] int8 matmul 8 x 2 in 0.44 ms against 0.52 for 4 x 4 (1 thread: 0.92 against 1.06).
# (On a Zen 5, 10 x 2 ran as fast as 5 x 4, and a 7-pixel row 1.2x faster as 7 x 2 than as 4 x 4.)
DIRECT_OC_BLOCKS_WIDE_REGISTERS = (1, 2)
# A float 1x1 conv there may hold 3 blocks too (its steps read no taps; the blocks share each
# broadcast): on the Intel Xeon (2 threads, the tuner's best of 16 against the default) MobileNetV2's
# projections to 96 channels over 14x14 ran 7 x 3 in 0.056 and 0.081 ms against 0.071 and 0.103
# for 10 x 2, its 24-channel ones (three 8-lane blocks) 4 x 3 in 0.066 and 0.113 against 0.085 and
# 0.159 for 14 x 1; the whole model, run in turns with onnxruntime, 0.80 -> 0.74-0.76 of its time.
DIRECT_1X1_OC_BLOCKS_WIDE_REGISTERS = (1, 2, 3)
# A float direct conv with taps whose tile's output image (its blocks' accumulators over every
# pixel) fits in this many bytes accumulates in that image, one input-channel block at a time,
# so each weight vector read from memory serves every row tile of the image instead of one.
# On the Intel Xeon (AVX-512, 2 threads; 7 x 2 tiles, alone): ResNet-18's 3x3 convs of 256
# channels at 14x14 (25 KB) 0.835 -> 0.702 ms, 512 at 7x7 (6 KB) 0.879 -> 0.765, 128 at 28x28
# (100 KB) 0.867 -> 0.724; ResNet-18 run whole, in turns with onnxruntime: 0.964-0.991 of its
# time -> 0.908-0.954 (1 thread 0.964-0.974 -> 0.910-0.931); a 128 KB bound (its 28x28 stride-2
# conv too) did no better. A 1x1 conv (16 multiplies per accumulator pass) gets slower: with its
# 1x1 convs so, MobileNetV2 went 0.79 -> 1.05; the int8 (VNNI) conv 2-4x slower, its tensorized
# dot products reading and writing the accumulators in memory.
IMAGE_ACCUMULATOR_BYTES = 64 * 1024
# Where each broadcast sits in a register its FMAs share (AVX2) a tile may also hold 3 (the tuner
# searches these everywhere): 24 output channels are three 8-lane blocks, which tiles of 1, 2 or 4
# blocks could only take one at a time, re-reading the input for each. On a Zen 3 MobileNetV2's
# 1x1 projections to 24 channels over 56x56 ran 3 x 3 in 0.153 and 0.245 ms (96 and 144 input
# channels) against 0.199 and 0.332 as 12 x 1.
OC_BLOCKS_SHARED_BROADCAST = (1, 2, 3, 4)
# Winograd: images of at most this many output tiles get the whole-image schedule (measured
# vs the direct conv: 7x7 outputs, 16 tiles, 1.27x with it, 0.92x without; 14x14, 49 tiles,
# 2.04x without, 1.85x with).
WINOGRAD_WHOLE_IMAGE_TILES = 32
# Per row of tiles, the GEMM reads the whole transformed filter; where that exceeds this many
# bytes (out of L2) each thread's rows of tiles are one parallel step, the GEMM reading each
# (e, u) slice of the filter once for all of them. First two rows a step, on the Intel Xeon
# (AVX-512): F(4x4) of 128 channels at 28x28 (2.4 MB of filter) alone 0.408 -> 0.335 ms with 2
# threads (0.616 -> 0.560 with 1); ResNet-18 run whole, in turns with onnxruntime, 0.912-0.936 of
# its time -> 0.883-0.897 with 2 threads; at 56x56 with 64 channels (0.6 MB) 0.261 -> 0.292, hence
# the bound. Then a thread's share of the rows (ResNet-18's 7 rows of tiles: 4 a step with 2
# threads, where 2 a step read the filter twice a thread and split the rows no better, 4:3; all 7
# with 1), per conv in the model, in turns with onnxruntime: F(2x2) at 14x14 0.75-0.83 -> 0.65-0.73
# ms with 2 threads, 1.55-1.67 -> 1.11-1.22 with 1; F(4x4) at 28x28 0.44-0.59 -> 0.44-0.57 with 2,
# 0.88-1.04 -> 0.78-1.03 with 1 (3 rows a step, 3:3:1 between 2 threads: 0.1-0.25 ms slower).
WINOGRAD_ROW_GROUP_FILTER_BYTES = 1 << 20
# A Winograd GEMM whose register tile is a whole row of tiles takes two rows where that fits the
# registers: its tile runs tile by tile (one broadcast live), so 2 x 7 tiles x 2 blocks hold 28
# accumulators, 2 weight vectors and a broadcast, and each transformed-filter vector serves 14
# FMAs instead of 7. On the Intel Xeon (AVX-512, 2 threads, alone): F(2x2) at 14x14 with 256
# channels 0.621 -> 0.538 ms, F(4x4) at 28x28 with 128 0.454 -> 0.437 (1 thread, 14x14: 0.961 ->
# 0.857); in ResNet-18, run in turns with onnxruntime, its 28x28 layers 0.44-0.52 -> 0.39-0.44 ms
# and the whole model 11.36 -> 11.05. (At 56x56, 14 tiles a row, one row of 14 x 2 ran as fast as
# the 5 x 4 tile: its rows re-read the filter from L2 either way.)
WINOGRAD_TILE_ROWS = 2
DW_INLINE_PAD = True
# A depthwise tile's unrolled taps share the input vectors a kernel row spans, and an FMA reads one
# operand from memory, so its accumulators and those inputs may count up to this many times the
# registers. On a Zen 3 (AVX2, 16-channel blocks as two vectors) with the interior tiles unswitched
# (tir.passes.unswitch), the best tiles of MobileNetV2's 3x3 depthwise layers were 4 at stride 1
# (8 + 12 counted: 144 x 56x56 0.147 ms against 0.190 for the 6 that all 16 registers gave, 32 x
# 112x112 0.132 against 0.221) and 3 at stride 2 (6 + 14: 96 x 112x112 0.153 against 0.175 for 4);
# both are 20 = 1.25 x 16. On 32-register targets it leaves the 14-pixel tiles as they were.
DW_SPAN_BUDGET = 1.25
NCHW_OC_TILE = 8
# a register tile of more accumulators than this spills on every host vdla targets
MAX_ACCUMULATORS = 2 * MAX_REG_TILE
# matmul: 8 rows x 1 vector, a record's row tile when it names none
MATMUL_ROW_TILE = 8
# The default matmul tile holds one or two column vectors and keeps a quarter of the registers
# free (the column tail's masks, the operands' addresses): ViT-Tiny's attention on a Zen 5 ran
# 7 x 2 (23 registers) in 0.042 ms where 7 x 3 (31) took 0.108 and the old 8 x 1 0.053; its
# linear layers (one 16-column vector per packed block) 14 x 1 in 0.152 ms against 0.164.
# With 16 registers and broadcasts in a register (AVX2) it keeps one free: on a Zen 3, ViT-Tiny's
# [197, 192] @ [192, 768] ran 6 x 2 (12 accumulators, 15 registers) in 0.67 ms against 0.83 for
# 4 x 2, 3.8 for 4 x 3 (16 registers) and 2.0 for the 10 x 1 of a quarter-free budget; any tile of
# one 8-column vector ran 2-3.6x slower than 6 x 2 (attention's [197, 64] @ [64, 197] alike).
MATMUL_VECTORS = (1, 2)
# The int8 kernels where broadcasts sit in a register (x86 without AVX-512, hence without the
# VNNI these kernels use): AVX2's dot product spends three vector operations on each broadcast row
# (the offset, its magnitude, the broadcast) against four per accumulator vector, and weight loads
# are cheap beside them; so one row against as many output blocks as OC_BLOCKS allows. On a Zen 3,
# 1 x 4 ran ResNet-18's 3x3 int8 convs 1.0-1.04x and the ViT/BERT int8 linear layers 1.03-1.25x
# faster than the FMA tile rule's choices (5 x 1 for ViT's 200 rows), within 2% of the best tile.
INT8_AVX2_ROW_TILE = 1
# The int8 kernels on an AMX host (intrin/amx.py): a register tile of up to a tile register's
# rows (TILE_ROWS), and of as many 16-lane output blocks (accumulator tiles) as one of these allows.
AMX_OC_BLOCKS = (1, 2, 4)
# A matmul whose rows no tile of at least this many divides keeps the VNNI kernel: ViT-Tiny's 197
# tokens (a prime) would leave tiles of one row, [197, 192] x [192, 576] 0.40 ms against 0.10.
AMX_MIN_MATMUL_ROWS = 8


def _positive(knobs, *names):
    for name in names:
        v = getattr(knobs, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{type(knobs).__name__}.{name} must be a positive integer, got {v!r}")


@dataclass(frozen=True)
class RegisterFile:
    """What a register tile has to fit in: the target's vector registers and 32-bit lanes per
    register, and whether a broadcast input takes a register of its own that the tile's FMAs
    consume at once (x86 without AVX-512: no broadcast memory operand, and LLVM loads each
    broadcast just before its FMAs) rather than the row tile's broadcasts being loaded ahead."""
    vectors: int
    lanes: int
    broadcast_in_register: bool = False
    amx_tiles: bool = False     # AMX tile registers (the int8 kernels' tiles run as tile GEMMs)

    @staticmethod
    def of(target) -> "RegisterFile":
        """The target's (compiler.target.Target); BASELINE_REGISTERS without one."""
        if target is None:
            return BASELINE_REGISTERS
        from ..intrin.amx import has_amx
        x86 = target.arch.startswith(("x86_64", "amd64"))
        return RegisterFile(target.vector_registers, target.vector_lanes(32),
                            x86 and target.vector_registers < 32, has_amx(target))


# x86-64's SSE2 and 32-bit ARM's NEON: what every target vdla builds for has at least
BASELINE_REGISTERS = RegisterFile(16, 4)


@dataclass(frozen=True)
class DirectConvKnobs:
    row_tile: int           # output pixels per register tile
    oc_blocks: int = 1      # output-channel blocks per register tile
    # (conv2d_nchwc) the tile's output-channel blocks accumulate over the whole image, one
    # input-channel block at a time: its weights are read once from cache per image, not once
    # per row tile
    image_accumulator: bool = False

    def __post_init__(self):
        _positive(self, "row_tile", "oc_blocks")
        if not isinstance(self.image_accumulator, bool):
            raise ValueError(f"DirectConvKnobs.image_accumulator must be true or false, got {self.image_accumulator!r}")


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
    row_group: int = 1      # (per row) rows of tiles per parallel step, inside each transformed-filter slice
    tile_rows: int = 1      # rows of tiles per GEMM register tile (row_tile tiles of each)

    def __post_init__(self):
        _positive(self, "row_tile", "oc_blocks", "row_group", "tile_rows")
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


KNOBS = {"conv2d_nchwc": DirectConvKnobs, "conv2d_nchwc_int8": DirectConvKnobs, "matmul_int8": DirectConvKnobs,
         "depthwise_conv2d_nchwc": DepthwiseConvKnobs, "conv2d_nchwc_winograd": WinogradKnobs,
         "conv2d_nchw": NchwConvKnobs, "dense": DenseKnobs, "matmul": MatmulKnobs}


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


def tile_registers(row_tile: int, oc_blocks: int, vectors_per_block: int, depthwise: bool = False,
                   broadcast_in_register: bool = False, window: tuple[int, int] | None = None) -> int:
    """Vector registers a conv micro-kernel's register tile keeps live: its accumulators, a step's
    weight vectors, and its broadcast inputs (one, folded into the FMA, when a single block uses
    each; all `row_tile` of them when several blocks share each; one when each broadcast goes to a
    register its FMAs consume at once, RegisterFile.broadcast_in_register). A depthwise step
    loads an input and a weight vector per block instead (nothing is broadcast); given its
    `window` (stride, kernel width), the input vectors one kernel row of the tile spans, which
    the unrolled taps of that row share.
    Measured on a Zen 5 (AVX-512): 12 x 2 and 14 x 2 tiles (24 and 28 accumulators) run 1.5x
    slower than 10 x 2 or 5 x 4, which this count keeps within 32 registers, and with 256-bit
    vectors (16 registers, two per 16-channel block) the old 14 x 1 ran 1.5-2x slower than 5 x 1."""
    accumulators = row_tile * oc_blocks * vectors_per_block
    if depthwise:
        if window is None:
            return accumulators + 2 * vectors_per_block
        stride, kernel_w = window
        return accumulators + ((row_tile - 1) * stride + kernel_w) * vectors_per_block
    return accumulators + oc_blocks * vectors_per_block + (row_tile if oc_blocks > 1 and not broadcast_in_register
                                                           else 1)


def register_tile(width: int, blocks: int, block: int, registers: RegisterFile, tails: bool = True,
                  oc_blocks=OC_BLOCKS, depthwise: bool = False, whole_blocks: bool = True,
                  window: tuple[int, int] | None = None) -> tuple[int, int]:
    """(row_tile, oc_blocks) of a default register tile over rows of `width` outputs and `blocks`
    output-channel blocks of `block` lanes: among the tiles whose registers fit the target's (all
    but one where broadcasts sit in a register: on a Zen 3 a 14 x 1 tile of 8-channel blocks, all
    16 registers, ran 1.25-1.4x slower than 13 x 1 or 7 x 1) and that hold at least
    MIN_ACCUMULATORS accumulators, the one with the fewest loads per FMA over a row (a weight
    vector per tile and block, an input per pixel), a tile with a tail counted dearer by TAIL_COST
    spread over the row; `tails` False: only tiles that divide the row; `whole_blocks` False: the
    tile's blocks need not divide `blocks` (a matmul's last column tile is partitioned off); a
    depthwise tile with its `window` counted within DW_SPAN_BUDGET times the registers."""
    per = max(1, -(-block // registers.lanes))
    budget = registers.vectors - 1 if registers.broadcast_in_register and not depthwise else registers.vectors
    if depthwise and window is not None:
        budget = int(registers.vectors * DW_SPAN_BUDGET)
    fits = [(t, b) for b in oc_blocks if (blocks % b == 0 if whole_blocks else b <= blocks)
            for t in range(1, min(width, MAX_REG_TILE) + 1)
            if tile_registers(t, b, per, depthwise, registers.broadcast_in_register, window) <= budget
            and (tails or width % t == 0)]
    pool = [c for c in fits if c[0] * c[1] * per >= MIN_ACCUMULATORS] or fits or [(1, 1)]

    def cost(tile):
        t, b = tile
        loads_per_fma = (-(-width // t) * b * per + width) / (width * b * per)
        # equal costs: the larger tail, then more blocks (fewer tiles stream each weight), then the longer row
        tail = 1 + (TAIL_COST - 1) * min(1.0, TAIL_ROW / width) if width % t else 1.0
        return loads_per_fma * tail, -(width % t), -b, -t
    return min(pool, key=cost)


def default_knobs(kind: str, dims: dict, registers: RegisterFile = BASELINE_REGISTERS, threads: int = 1):
    """The schedule vdla compiles without a tuning record, for a target with `registers`
    (RegisterFile.of(target)) and `threads`."""
    if kind in ("conv2d_nchwc_int8", "matmul_int8") and registers.amx_tiles:
        # a tile register's rows of pixels (or matrix rows) that divide the row, and blocks
        rows = divisor_up_to(dims["out_w"], TILE_ROWS)
        if kind == "conv2d_nchwc_int8" or rows >= AMX_MIN_MATMUL_ROWS:
            return DirectConvKnobs(rows, max(b for b in AMX_OC_BLOCKS if dims["out_blocks"] % b == 0))
    if kind in ("conv2d_nchwc_int8", "matmul_int8") and registers.broadcast_in_register:
        return DirectConvKnobs(INT8_AVX2_ROW_TILE, max(b for b in OC_BLOCKS if dims["out_blocks"] % b == 0))
    if kind in ("conv2d_nchwc", "conv2d_nchwc_int8", "matmul_int8"):
        # the int8 dot product is tensorized over whole tiles (no tail): a divisor of the row,
        # however small, beats the host step a tail would leave (a 17-pixel row: 1-pixel tiles)
        if registers.broadcast_in_register:
            blocks = OC_BLOCKS_SHARED_BROADCAST
        elif registers.vectors >= 32 and registers.lanes >= dims["block"]:
            one_by_one = kind == "conv2d_nchwc" and dims.get("taps", 1) == 1
            blocks = DIRECT_1X1_OC_BLOCKS_WIDE_REGISTERS if one_by_one else DIRECT_OC_BLOCKS_WIDE_REGISTERS
        else:
            blocks = OC_BLOCKS
        tile = register_tile(dims["out_w"], dims["out_blocks"], dims["block"], registers,
                             tails=kind == "conv2d_nchwc", oc_blocks=blocks)
        # (an image per tile's blocks leaves the rows unparallel: at least two images a thread)
        image = kind == "conv2d_nchwc" and image_accumulates(dims, tile[1]) and \
            dims["out_blocks"] // tile[1] >= 2 * threads
        return DirectConvKnobs(*tile, image_accumulator=image)
    if kind == "depthwise_conv2d_nchwc":
        tile, _ = register_tile(dims["out_w"], dims["out_blocks"], dims["block"], registers, oc_blocks=(1,),
                                depthwise=True, window=(dims["stride"], dims["kernel_w"]))
        return DepthwiseConvKnobs(tile, 1, DW_INLINE_PAD)
    if kind == "conv2d_nchwc_winograd":
        tile, blocks = register_tile(dims["tiles_w"], dims["out_blocks"], dims["block"], registers)
        whole = dims["tiles_h"] * dims["tiles_w"] <= WINOGRAD_WHOLE_IMAGE_TILES
        grouped = not whole and dims.get("filter_bytes", 0) > WINOGRAD_ROW_GROUP_FILTER_BYTES
        group = -(-dims["tiles_h"] // threads) if grouped else 1
        step_rows = dims["tiles_h"] if whole else group
        # the GEMM runs its tile tile by tile: one broadcast live, as where broadcasts sit in a register
        per = max(1, -(-dims["block"] // registers.lanes))
        taller = tile * WINOGRAD_TILE_ROWS
        fits = taller * blocks * per <= MAX_ACCUMULATORS and \
            tile_registers(taller, blocks, per, broadcast_in_register=True) <= registers.vectors
        rows = WINOGRAD_TILE_ROWS if tile == dims["tiles_w"] and step_rows >= WINOGRAD_TILE_ROWS and fits else 1
        return WinogradKnobs(whole, tile, blocks, group, rows)
    if kind == "conv2d_nchw":
        return NchwConvKnobs(divisor_up_to(dims["out_channels"], NCHW_OC_TILE))
    if kind == "dense":     # enough independent accumulators to cover the FMA latency
        return DenseKnobs(divisor_up_to(dims["columns"], MIN_ACCUMULATORS))
    if kind == "matmul":    # register_tile keeps one more free where broadcasts sit in a register
        budget = RegisterFile(registers.vectors if registers.broadcast_in_register else registers.vectors * 3 // 4,
                              registers.lanes, registers.broadcast_in_register)
        vectors = -(-dims["columns"] // registers.lanes)
        rows = dims["rows"]
        tile = register_tile(rows, vectors, registers.lanes, budget, oc_blocks=MATMUL_VECTORS, whole_blocks=False)
        if rows % tile[0] and rows // tile[0] < PARALLEL_TAIL_SHARE:
            # the row tiles are the parallel loop, whose tail is split off only when short
            # (tir.passes.partition): a longer one keeps its guards in every tile. BERT's 32 rows ran
            # 0.81 ms as 6 x 2 against 0.53 as 4 x 2 on a Zen 3.
            tile = register_tile(rows, vectors, registers.lanes, budget, tails=False, oc_blocks=MATMUL_VECTORS,
                                 whole_blocks=False)
        return MatmulKnobs(*tile)
    raise ValueError(f"no CPU schedule knobs for {kind!r} kernels; kinds with knobs: {', '.join(KNOBS)}")


def image_accumulates(dims: dict, oc_blocks: int, limit: int | None = None) -> bool:
    """Whether a direct conv2d_nchwc of `dims` with tiles of `oc_blocks` blocks accumulates over
    its whole output image: one with taps, ungrouped, whose tile's image fits in `limit` bytes
    (IMAGE_ACCUMULATOR_BYTES)."""
    image = dims.get("out_h", 0) * dims["out_w"] * oc_blocks * dims["block"] * 4
    limit = IMAGE_ACCUMULATOR_BYTES if limit is None else limit
    return dims.get("taps", 1) > 1 and dims.get("groups", 1) == 1 and 0 < image <= limit


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
    if kind in ("conv2d_nchwc_int8", "matmul_int8") and dims["out_w"] % knobs.row_tile:
        # the int8 dot-product instruction is tensorized over whole tiles: a tail needs bounds checks
        return (f"row_tile {knobs.row_tile} does not divide the {dims['out_w']} pixels of a row (int8 tiles have no "
                "tail)")
    if isinstance(knobs, WinogradKnobs) and knobs.row_group > 1:
        if knobs.whole_image:
            return "row_group groups rows of tiles of the per-row structure, not the whole image's"
        if knobs.row_group > dims["tiles_h"]:
            return f"row_group {knobs.row_group} exceeds the {dims['tiles_h']} rows of tiles"
    if isinstance(knobs, WinogradKnobs):
        step_rows = dims["tiles_h"] if knobs.whole_image else knobs.row_group
        if knobs.tile_rows > step_rows:
            return (f"tile_rows {knobs.tile_rows} exceeds the {step_rows} rows of tiles a GEMM step has "
                    f"({'the image' if knobs.whole_image else 'row_group'})")
        if knobs.row_tile * knobs.tile_rows * knobs.oc_blocks > MAX_ACCUMULATORS:
            return (f"a register tile of {knobs.tile_rows} x {knobs.row_tile} tiles x {knobs.oc_blocks} blocks holds "
                    f"more than {MAX_ACCUMULATORS} accumulators")
    if getattr(knobs, "image_accumulator", False) and kind != "conv2d_nchwc":
        return f"image_accumulator is a float direct conv's (conv2d_nchwc) knob, not {kind}'s"
    if hasattr(knobs, "oc_blocks") and dims["out_blocks"] % knobs.oc_blocks:
        return f"oc_blocks {knobs.oc_blocks} does not divide the {dims['out_blocks']} output-channel blocks"
    if isinstance(knobs, NchwConvKnobs) and dims["out_channels"] % knobs.oc_tile:
        return f"oc_tile {knobs.oc_tile} does not divide the {dims['out_channels']} output channels"
    if isinstance(knobs, DenseKnobs) and dims["columns"] % knobs.columns:
        return f"columns {knobs.columns} does not divide the {dims['columns']} output columns"
    return None
