"""Layer descriptions and the default choice of schedule knobs.

The default comes from the candidates with the fewest estimated cycles among those whose
buffers fit the SRAMs: per tile, GEMM micro-op steps and the epilogue's ALU passes, DMA
cycles (vdla.hw.timing's costs: bus beats, padding, a latency per DMA) and stores; with
two virtual threads the tiles run as a pipeline at the rate of the slowest of their load,
compute and store streams, with one they add up (conv_cost says how). Tiles need not divide
the image (the extra rows are computed from padding and not stored), but over-computed
work counts in the estimate."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.errors import CompileError
from vdla.hw.requantizer import REGISTERS

from ...intrin.vdla import ROW_STRIDES, row_stride_problem
from .epilogue import Epilogue, alu_passes
from .ops import conv_out_hw
from .schedule import ConvKnobs, DenseKnobs


# How much above the lowest estimate a conv schedule with other tiles may be estimated and
# still be measured against it (default_conv_choices).
RUNNER_UP_RATIO = 1.05
# Cost-model overheads in cycles, rough: per requantizer register set up (SETQ, with its
# instruction's setup), per tile (its DMA and ALU instructions' setup, token hand-offs).
_SETQ_CYCLES = 4
_TILE_CYCLES = 40
# A dense's virtual threads split its column tiles or its row tiles (DenseKnobs.vthread_axis).
DENSE_THREAD_AXES = ("n", "m")


class SlidingWindow:
    """The output size of a layer that slides a kh x kw window with `stride` and `pads` over
    an h x w image (convolutions and pooling). Layers are frozen, so it is computed once: the
    schedule search asks for it for every candidate."""

    @cached_property
    def out_h(self) -> int:
        return conv_out_hw(self.h, self.w, self.kh, self.kw, (self.stride,) * 2, self.pads)[0]

    @cached_property
    def out_w(self) -> int:
        return conv_out_hw(self.h, self.w, self.kh, self.kw, (self.stride,) * 2, self.pads)[1]


@dataclass(frozen=True)
class ConvLayer(SlidingWindow):
    """A conv in SPEC §7 element units: n batch blocks, c/o channel blocks, h/w pixels."""
    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int = 3
    kw: int = 3
    stride: int = 1
    pads: tuple = (1, 1, 1, 1)      # top, left, bottom, right
    depthwise: bool = False
    pad_value: int = 0              # the code of a real zero: 0, or -128 for zero point -128
    # a depthwise conv by DEPTHWISE rows (vdla.hw.depthwise): kw = TAPS, stride 1 or 2, weights
    # (C/L, row_tiles, L, L) with the taps in lanes; one micro-op per output and kernel row, or
    # two at stride 2 (ops.depthwise_rows)
    rows: bool = False

    def __post_init__(self):
        if self.rows and not (self.depthwise and self.kw == DEPTHWISE_TAPS and self.stride in ROW_STRIDES):
            raise ValueError(f"{self}: DEPTHWISE rows take a depthwise conv of {DEPTHWISE_TAPS} columns of taps "
                             f"and stride {' or '.join(map(str, ROW_STRIDES))}")

    @property
    def row_tiles(self) -> int:
        """Weight tiles per channel block of a conv by rows: one per kernel row, and at stride 2
        as many zero tiles after them (ops.depthwise_rows)."""
        return self.kh * self.stride

    def macs(self, config) -> int:
        """Useful multiply-accumulates (a depthwise block does BLOCK of its BLOCK^2)."""
        per = 1 if self.depthwise else self.c * config.block
        return (self.n * config.batch * self.o * config.block * self.out_h * self.out_w
                * per * self.kh * self.kw)

    def gemm_bound(self, config) -> int:
        """Cycles at one micro-op per cycle doing only useful micro-ops."""
        per = 1 if self.depthwise else self.c
        return self.n * self.o * self.out_h * self.out_w * per * self.kh * self.kw


@dataclass(frozen=True)
class DenseLayer:
    m: int        # rows in BATCH units
    k: int        # reduction in blocks
    n: int        # outputs in blocks

    def gemm_bound(self, config) -> int:
        return self.m * self.k * self.n


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


class NoTilingError(CompileError, ValueError):
    """No schedule of a layer fits the hardware. `reason` names the constraint; placement
    puts such a layer on the CPU with it (vdla.compiler.vdla.lower.untileable_kernels)."""

    def __init__(self, layer, config, reason: str):
        self.layer, self.reason = layer, reason
        super().__init__(f"no VDLA tiling of {layer} fits {config.name}: {reason}")


def _ceil(a, b):
    return -(-a // b)


def _load_cycles(config, rows, row_elems, elem_bytes):
    t = config.timing
    return t.dma_setup_cycles + t.dram_read_latency + rows * _ceil(row_elems * elem_bytes, config.bus_bytes)


def _store_cycles(config, rows, row_elems, elem_bytes):
    t = config.timing
    return t.dma_setup_cycles + rows * _ceil(row_elems * elem_bytes, config.bus_bytes) + t.dram_write_latency


def conv_knob_problem(config, layer: ConvLayer, k: ConvKnobs, ep: Epilogue | None = None) -> str | None:
    """Why `k` cannot schedule `layer` on `config` (the first reason), or None."""
    ep = ep or Epilogue()
    t = k.vthreads
    chunk = 1 if layer.depthwise else (k.ic_chunk or layer.c)
    if layer.o % k.tile_oc:
        return f"tile_oc={k.tile_oc} does not divide the {layer.o} output channel blocks"
    if not layer.depthwise and layer.c % chunk:
        return f"ic_chunk={chunk} does not divide the {layer.c} input channel blocks"
    if k.vthreads > 1 and k.vthread_axis == "oc" and (layer.o // k.tile_oc) % k.vthreads:
        return (f"{layer.o // k.tile_oc} output channel tiles cannot be shared by {k.vthreads} virtual threads; "
                "use vthread_axis='h' or another tile_oc")
    if layer.rows and (problem := row_stride_problem(config, layer.stride)):
        return problem
    if layer.rows and layer.stride == 2 and k.tile_w == 2:
        return ("a DEPTHWISE row of 2 outputs at stride 2 has no output its skipped window may add zero to "
                "(timing.acc_raw_min_distance); use another tile_w")
    if k.tile_h * k.tile_w == 1 and k.tile_oc == 1:
        return ("a tile of one pixel and one channel block updates the same accumulator on consecutive "
                "micro-ops (timing.acc_raw_min_distance); use a larger tile")
    rows = (k.tile_h - 1) * layer.stride + layer.kh
    cols = (k.tile_w - 1) * layer.stride + layer.kw
    resident = not layer.depthwise and chunk == layer.c
    shared = k.vthread_axis == "h" and k.order == "oc_outer"    # weights/bias allocated outside the threads
    wslots = 1 if resident and shared else t
    in_blocks = k.tile_oc if layer.depthwise else chunk       # a depthwise tile reads its own channels
    need = {"input": (in_blocks * rows * cols * t, config.inp_depth),
            "weight": (k.tile_oc * (1 if layer.depthwise else chunk) * _weight_taps(layer) * wslots,
                       config.wgt_depth),
            "accumulator": (k.tile_oc * k.tile_h * k.tile_w * t * (2 if ep.residual else 1)
                            + k.tile_oc * (1 if shared else t) * channel_operands(ep),
                            config.acc_depth)}
    if layer.rows:           # a DEPTHWISE row is its instruction's micro-ops
        need["micro-op"] = (cols, config.uop_depth // 4)
    for name, (used, depth) in need.items():
        if used > depth:
            return f"the tiles need {used} {name} SRAM elements but there are {depth}"
    h_mult = k.tile_h * (k.vthreads if k.vthreads > 1 and k.vthread_axis == "h" else 1)
    bottom = (_ceil(layer.out_h, h_mult) * h_mult - 1) * layer.stride + layer.kh - layer.h - layer.pads[0]
    right = (_ceil(layer.out_w, k.tile_w) * k.tile_w - 1) * layer.stride + layer.kw - layer.w - layer.pads[1]
    if max(bottom, right, *layer.pads) > config.isa.max_pad:
        return (f"the input window reaches {max(bottom, right, *layer.pads)} elements past the image, more than "
                f"the DMA's {config.isa.max_pad}-element padding")
    row_tiles = _ceil(layer.out_h, h_mult) * h_mult // k.tile_h
    if (row_tiles - 1) * k.tile_h * layer.stride - layer.pads[0] >= layer.h:
        # threads over rows round the rows up to whole tiles for every thread
        return (f"the last of {row_tiles} row tiles of {k.tile_h} lies wholly below the image, and a DMA "
                "moves at least one element of data; use another tile_h")
    return None


def _weight_taps(layer: ConvLayer) -> int:
    """Weight tiles per channel block (and input chunk): one per tap, or ConvLayer.row_tiles."""
    return layer.row_tiles if layer.rows else layer.kh * layer.kw


def conv_fits(config, layer: ConvLayer, k: ConvKnobs, ep: Epilogue | None = None) -> bool:
    return conv_knob_problem(config, layer, k, ep) is None


def _conv_tiles(layer: ConvLayer, k: ConvKnobs) -> tuple[int, int, int, int]:
    """(output-channel tiles, row tiles, column tiles, input-channel chunks per tile)."""
    chunk = 1 if layer.depthwise else (k.ic_chunk or layer.c)
    h_mult = k.tile_h * (k.vthreads if k.vthreads > 1 and k.vthread_axis == "h" else 1)
    h_tiles, w_tiles = _ceil(layer.out_h, h_mult) * h_mult // k.tile_h, _ceil(layer.out_w, k.tile_w)
    return layer.o // k.tile_oc, h_tiles, w_tiles, 1 if layer.depthwise else layer.c // chunk


def conv_steps(layer: ConvLayer, k: ConvKnobs) -> int:
    """Tile steps (a chunk's loads and GEMM): the size of the instruction stream, and so of the
    time compiling and simulating it takes."""
    oc_tiles, h_tiles, w_tiles, chunks = _conv_tiles(layer, k)
    return layer.n * oc_tiles * h_tiles * w_tiles * chunks


def dense_steps(layer: DenseLayer, k: DenseKnobs) -> int:
    return _ceil(layer.m, k.tile_m) * (layer.n // k.tile_n) * (layer.k // (k.k_chunk or layer.k))


def channel_operands(ep: Epilogue) -> int:
    """Accumulator elements an epilogue's per-channel operands take per output-channel block:
    bias, multiplier and residual factor, or the requantizer's three registers."""
    return (len(REGISTERS) if ep.requantizer else int(ep.bias) + int(ep.scale)) + int(ep.residual_scale)


def _epilogue_cycles(config, ep: Epilogue) -> int:
    """Compute cycles per output vector after a tile's GEMMs: the epilogue's ALU passes, and
    without the requantizer's pass (which leaves the accumulators zero) the next tile's reset."""
    t = config.timing
    cycles = sum(t.alu_tensor_cycles_per_uop if tensor else t.alu_imm_cycles_per_uop for _, tensor in alu_passes(ep))
    return cycles + (0 if ep.requantizer else 1)


def conv_cost(config, layer: ConvLayer, k: ConvKnobs, ep: Epilogue | None = None) -> float:
    """Estimated cycles of `layer` scheduled by `k`. Per tile: its loads (input and, unless
    they stay resident across pixel tiles, weights; a residual), its compute (GEMM micro-ops
    per input-channel chunk, then the epilogue's ALU passes) and its store. With one virtual
    thread a tile's compute waits for its loads and the next tile's compute for its store, while
    the next loads overlap the store; several make a pipeline whose rate is its slowest
    stream's, after filling it (the first chunk's loads, resident weights included) and before
    draining it (the last tile's epilogue and store). Resident weights shared by threads that
    split rows are reloaded per output-channel tile with nothing to hide behind."""
    ep = ep or Epilogue()
    chunk = 1 if layer.depthwise else (k.ic_chunk or layer.c)
    oc_tiles, h_tiles, w_tiles, chunks = _conv_tiles(layer, k)
    tiles = layer.n * oc_tiles * h_tiles * w_tiles
    rows = (k.tile_h - 1) * layer.stride + layer.kh
    cols = (k.tile_w - 1) * layer.stride + layer.kw
    taps = _weight_taps(layer)
    ib, wb = config.batch * config.block, config.block * config.block * config.wgt_bits // 8
    if layer.rows:    # per channel block one instruction of kh x tile_h rows of cols micro-ops
        gemm = k.tile_oc * (layer.kh * k.tile_h * cols + 10)
    else:
        gemm = k.tile_oc * chunk * taps * k.tile_h * k.tile_w + 10
    pixels = k.tile_h * k.tile_w
    epilogue = k.tile_oc * (pixels * _epilogue_cycles(config, ep) + _SETQ_CYCLES * len(REGISTERS) * ep.requantizer)
    load_in = (k.tile_oc if layer.depthwise else chunk) * _load_cycles(config, rows, cols, ib)
    load_w = _load_cycles(config, 1, k.tile_oc * (1 if layer.depthwise else chunk) * taps, wb)
    resident = not layer.depthwise and chunks == 1
    whole_rows = k.tile_w == layer.out_w      # the tile's rows are one contiguous DRAM row
    store = k.tile_oc * _store_cycles(config, 1 if whole_rows else k.tile_h, pixels if whole_rows else k.tile_w, ib)
    residual = k.tile_oc * _load_cycles(config, 1, pixels, ib) if ep.residual else 0
    load_step = load_in + (0 if resident else load_w)
    load = chunks * load_step + residual
    t = config.timing
    compute = chunks * (gemm + t.gemm_setup_cycles + t.gemm_pipeline_depth) + epilogue
    resident_loads = load_w * layer.n * oc_tiles if resident else 0
    if k.vthreads == 1:      # the next tile's loads may start once the compute has read this one's
        return tiles * (compute + max(load, store) + _TILE_CYCLES) + min(load, store) + resident_loads
    shared = k.vthread_axis == "h" and k.order == "oc_outer"    # one weight slot for all threads
    hidden = resident_loads / tiles if resident and not shared else 0
    exposed = (layer.n * oc_tiles - 1) * load_w if resident and shared else 0
    fill = load_step + (load_w if resident else 0)
    return tiles * (max(load + hidden, compute, store) + _TILE_CYCLES) + fill + epilogue + store + exposed


def _conv_candidates(config, layer: ConvLayer, ep, threads, orders):
    """Every ConvKnobs over the given thread counts and loop orders that fits, in a fixed order
    (the default's tie-breaking depends on it)."""
    chunks = [1] if layer.depthwise else _divisors(layer.c)
    widths = sorted({layer.out_w, *[d for d in _divisors(layer.out_w)], *range(1, min(layer.out_w, 16) + 1)})
    for vt in threads:
        for axis in (("oc", "h") if vt > 1 else ("oc",)):
            for toc in _divisors(layer.o):
                for chunk in chunks:
                    for tw in widths:
                        for th in range(1, layer.out_h + 1):
                            for order in orders:
                                k = ConvKnobs(toc, th, tw, 0 if chunk == layer.c else chunk, vt, axis, order)
                                if conv_fits(config, layer, k, ep):
                                    yield k


def conv_knob_space(config, layer: ConvLayer, ep: Epilogue | None = None) -> list[ConvKnobs]:
    """Every schedule a tuner may measure: the default's candidates plus three and four
    virtual threads and the pixel-outer tile order, which the cost model does not tell apart
    but the simulator does."""
    return list(_conv_candidates(config, layer, ep, threads=(1, 2, 3, 4), orders=("oc_outer", "pixel_outer")))


def _default_conv_candidates(config, layer: ConvLayer, ep):
    return _conv_candidates(config, layer, ep, threads=(2, 1), orders=("oc_outer",))


def _cheapest(config, layer, candidates, cost, no_tiling_reason, n: int | None = 1) -> list:
    """The n candidates (None: all) of the fewest estimated cycles, cheapest first (of equals,
    the first: the candidates' order breaks ties); NoTilingError with `no_tiling_reason()`
    when there is none."""
    ranked = sorted(enumerate(candidates), key=lambda ik: (cost(ik[1]), ik[0]))[:n]
    if not ranked:
        raise NoTilingError(layer, config, no_tiling_reason())
    return [k for _, k in ranked]


def default_conv_choices(config, layer: ConvLayer, ep: Epilogue | None = None) -> list[ConvKnobs]:
    """The schedule of the lowest estimate and, where one with other tiles is estimated
    within RUNNER_UP_RATIO of it, the cheapest such: the compiler measures both (and their
    one-thread twins) on the simulator and keeps the fastest, since the estimate ranks close
    candidates less well than it finds them."""
    def cost(k):
        return conv_cost(config, layer, k, ep)
    best, *rest = _cheapest(config, layer, _default_conv_candidates(config, layer, ep), cost,
                            lambda: _conv_no_tiling_reason(config, layer, ep), n=None)
    tiles = (best.tile_oc, best.tile_h, best.tile_w, best.ic_chunk)
    runner_up = next((k for k in rest if (k.tile_oc, k.tile_h, k.tile_w, k.ic_chunk) != tiles), None)
    if runner_up is not None and cost(runner_up) <= RUNNER_UP_RATIO * cost(best):
        return [best, runner_up]
    return [best]


def default_conv_knobs(config, layer: ConvLayer, ep: Epilogue | None = None) -> ConvKnobs:
    """The schedule of the lowest estimate."""
    return default_conv_choices(config, layer, ep)[0]


def conv_tiling_problem(config, layer: ConvLayer, ep: Epilogue | None = None) -> str | None:
    """None when default_conv_knobs finds a schedule, else why none fits (cheap: it stops at
    the first schedule that fits)."""
    if next(_default_conv_candidates(config, layer, ep), None) is not None:
        return None
    return _conv_no_tiling_reason(config, layer, ep)


def _conv_no_tiling_reason(config, layer: ConvLayer, ep) -> str:
    """The problem of the smallest tiles. A one-element tile never fits (it updates one
    accumulator on consecutive micro-ops), so the smallest that may are the two-element ones;
    SRAM needs only grow from there."""
    chunk = 0 if layer.depthwise or layer.c == 1 else 1
    pairs = []
    if layer.out_w > 1:
        pairs.append(("1x2 pixels of 1 channel block", ConvKnobs(1, 1, 2, chunk, 1)))
    if layer.out_h > 1:
        pairs.append(("2x1 pixels of 1 channel block", ConvKnobs(1, 2, 1, chunk, 1)))
    two = next((d for d in _divisors(layer.o) if d > 1), None)
    if two is not None:
        pairs.append((f"1 pixel of {two} channel blocks", ConvKnobs(two, 1, 1, chunk, 1)))
    if not pairs:
        return ("its output is one pixel of one channel block, so every tile updates the same accumulator "
                "on consecutive micro-ops (timing.acc_raw_min_distance)")
    what, knobs = pairs[0]
    return f"the smallest tile ({what}): {conv_knob_problem(config, layer, knobs, ep)}"


def dense_knob_problem(config, layer: DenseLayer, k: DenseKnobs, ep: Epilogue | None = None) -> str | None:
    """Why `k` cannot schedule `layer` on `config` (the first reason), or None. The accumulator
    budget reserves room for a residual tile and two per-channel operands whatever the epilogue
    (three with a scaled residual's factors)."""
    kc = k.k_chunk or layer.k
    for what, whole, part in (("tile_n", layer.n, k.tile_n), ("k_chunk", layer.k, kc)):
        if whole % part:
            return f"{what}={part} does not divide {whole}"
    # rows need not divide: the last row tile overhangs, its rows past the matrix read the DMA's
    # padding and are never stored (a prime number of tokens, ViT's 197, has no other tiles)
    overhang = _ceil(layer.m, k.tile_m) * k.tile_m - layer.m
    if overhang > config.isa.max_pad:
        return (f"tile_m={k.tile_m} leaves the last row tile {overhang} rows past the matrix, more than the "
                f"DMA's {config.isa.max_pad}-element padding")
    split = (layer.n // k.tile_n, "column") if k.vthread_axis == "n" else (_ceil(layer.m, k.tile_m), "row")
    if split[0] % k.vthreads:
        return f"{split[0]} {split[1]} tiles cannot be shared by {k.vthreads} virtual threads"
    if k.tile_m * k.tile_n < 2:
        return ("a tile of one block updates the same accumulator on consecutive micro-ops "
                "(timing.acc_raw_min_distance); use a larger tile")
    vt = k.vthreads
    wgt_copies = 1 if _shared_weights(layer, k) else vt
    need = {"input": (k.tile_m * kc * vt, config.inp_depth), "weight": (k.tile_n * kc * wgt_copies, config.wgt_depth),
            "accumulator": (k.tile_m * k.tile_n * vt * 2 + k.tile_n * vt * max(2, channel_operands(ep or Epilogue())),
                            config.acc_depth),
            "micro-op": (k.tile_m * k.tile_n, config.uop_depth // 4)}
    for name, (used, depth) in need.items():
        if used > depth:
            return f"the tiles need {used} {name} SRAM elements but the budget is {depth}"
    return None


def _shared_weights(layer: DenseLayer, k: DenseKnobs) -> bool:
    """Whether a column tile's weights are loaded once for all its row tiles, one copy that
    the threads share (schedule_dense: threads over rows, the whole reduction at once)."""
    return k.vthread_axis == "m" and (k.k_chunk or layer.k) == layer.k


def dense_cost(config, layer: DenseLayer, k: DenseKnobs, ep: Epilogue | None = None) -> float:
    kc = k.k_chunk or layer.k
    gemm = k.tile_m * k.tile_n * kc + 10
    # one DMA row per matrix row (input) / output block (weights), kc elements each
    x_load = _load_cycles(config, k.tile_m, kc, config.batch * config.block)
    w_load = _load_cycles(config, k.tile_n, kc, config.block * config.block)
    tiles = _ceil(layer.m, k.tile_m) * (layer.n // k.tile_n)
    if _shared_weights(layer, k):      # the column tile's weights first, then its row tiles
        per = max(gemm, x_load) if k.vthreads > 1 else gemm + x_load
        return (layer.n // k.tile_n) * w_load + tiles * (per + _TILE_CYCLES)
    load = x_load + w_load
    per = (layer.k // kc) * (max(gemm, load) if k.vthreads > 1 else gemm + load) + _TILE_CYCLES
    return tiles * per


def _dense_candidates(config, layer: DenseLayer, ep, threads, axes=DENSE_THREAD_AXES):
    for axis in axes:
        for vt in threads:
            for tn in _divisors(layer.n):
                for tm in _row_tiles(layer.m):
                    for kc in _divisors(layer.k):
                        k = DenseKnobs(tm, tn, 0 if kc == layer.k else kc, vt, axis)
                        if dense_knob_problem(config, layer, k, ep) is None:
                            yield k


def _row_tiles(m: int) -> list[int]:
    """Row tile heights worth trying: the divisors of m, and where none of them is a middling
    height (8..64 rows: a prime m such as ViT's 197 tokens) the heights that cut m into up to 64
    tiles, the last one overhanging. (Where divisors serve, the cost model does not tell the
    overhanging heights apart well enough to offer them.)"""
    divisors = _divisors(m)
    if any(8 <= d <= 64 for d in divisors):
        return divisors
    return sorted(set(divisors) | {_ceil(m, t) for t in range(1, min(m, 64) + 1)})


def dense_knob_space(config, layer: DenseLayer, ep: Epilogue | None = None) -> list[DenseKnobs]:
    """Every dense schedule a tuner may measure (one to four virtual threads, over columns or rows)."""
    return list(_dense_candidates(config, layer, ep, threads=(1, 2, 3, 4)))


def default_dense_knobs(config, layer: DenseLayer, ep: Epilogue | None = None) -> DenseKnobs:
    return default_dense_choices(config, layer, ep)[0]


def default_dense_choices(config, layer: DenseLayer, ep: Epilogue | None = None) -> list[DenseKnobs]:
    """Per thread axis its cheapest schedule, the lowest estimate first: the compiler measures
    both, since the estimate does not tell them apart well enough (over rows, the weights that
    stay loaded and the stores that overlap the other thread's GEMMs gave ViT's and BERT's
    layers 2-7% fewer cycles than over columns; an attention head's few or prime number of
    column blocks, 13 for ViT's 197 tokens, may leave no two column tiles to share)."""
    cost = lambda k: dense_cost(config, layer, k, ep)  # noqa: E731
    cheapest = (min(_dense_candidates(config, layer, ep, (2, 1), (axis,)), key=cost, default=None)
                for axis in DENSE_THREAD_AXES)         # (of equals, the first)
    choices = [k for k in cheapest if k is not None]
    if not choices:
        raise NoTilingError(layer, config, _dense_no_tiling_reason(config, layer, ep))
    return sorted(choices, key=cost)


def dense_tiling_problem(config, layer: DenseLayer, ep: Epilogue | None = None) -> str | None:
    """None when default_dense_choices finds a schedule, else why none fits."""
    if next(_dense_candidates(config, layer, ep, (2, 1)), None) is not None:
        return None
    return _dense_no_tiling_reason(config, layer, ep)


def _dense_no_tiling_reason(config, layer: DenseLayer, ep) -> str:
    """The problem of the smallest tiles that may fit (two blocks, one reduction block at a time)."""
    chunk = 0 if layer.k == 1 else 1
    pairs = []
    two_m = next((d for d in _divisors(layer.m) if d > 1), None)
    two_n = next((d for d in _divisors(layer.n) if d > 1), None)
    if two_n is not None:
        pairs.append((f"1 row block x {two_n} column blocks", DenseKnobs(1, two_n, chunk, 1)))
    if two_m is not None:
        pairs.append((f"{two_m} row blocks x 1 column block", DenseKnobs(two_m, 1, chunk, 1)))
    if not pairs:
        return ("its output is one block, so every tile updates the same accumulator on consecutive "
                "micro-ops (timing.acc_raw_min_distance)")
    what, knobs = pairs[0]
    return f"the smallest tile ({what}): {dense_knob_problem(config, layer, knobs, ep)}"
