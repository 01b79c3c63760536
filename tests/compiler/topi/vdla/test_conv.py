"""Compiled VDLA conv2d / depthwise conv2d against numpy, bit for bit, on the simulator:
random shapes with odd sizes and channel counts that are not multiples of BLOCK, strides 1
and 2, kernels 1x1 to 5x5, padding, every epilogue step, the pynq config and two others."""
from dataclasses import replace

import numpy as np
import pytest

from vdla.compiler.topi.vdla import ConvKnobs, Epilogue
from vdla.driver.devices import SimulatorDevice
from vdla.hw import HwConfig, MemType, load_config

from vdla_kernels import conv_reference, run_conv

SMALL_BLOCK = {"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 14,
               "LOG_ACC_BUFF_SIZE": 14, "LOG_UOP_BUFF_SIZE": 13}
BIG_BLOCK = {"LOG_BLOCK": 5, "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17}
CONFIGS = {"pynq": load_config("pynq"), "b2x8": HwConfig.from_dict(SMALL_BLOCK),
           "b1x32": HwConfig.from_dict(BIG_BLOCK)}


def _conv(config, x, w, stride, pads, ep, depthwise=False, knobs=None, bias=None, residual=None):
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    return run_conv(dev, x, w, stride, pads, ep, knobs, bias, residual, depthwise, check_races=True)


def reference(x, w, stride, pads, ep, depthwise=False, bias=None, residual=None):
    return conv_reference(x, w, stride, pads, ep, bias, residual, depthwise)


def random_case(rng, config, c, o, h, w, k, depthwise=False):
    x = rng.integers(-128, 128, (config.batch if config.batch > 1 else 1, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (c if depthwise else o, 1 if depthwise else c, k, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, (c if depthwise else o,), dtype=np.int32)
    return x, wt, bias


CASES = [
    # (c, o, h, w, k, stride, pads)
    (16, 16, 6, 6, 3, 1, (1, 1, 1, 1)),
    (20, 12, 9, 10, 3, 1, (1, 1, 1, 1)),       # channels not multiples of BLOCK, odd sizes
    (35, 40, 7, 7, 1, 1, (0, 0, 0, 0)),        # 1x1
    (24, 33, 11, 13, 3, 2, (1, 1, 1, 1)),      # stride 2, odd
    (8, 16, 9, 9, 5, 1, (2, 2, 2, 2)),         # 5x5
    (16, 32, 10, 8, 1, 2, (0, 0, 0, 0)),       # 1x1 stride 2 (ResNet downsample)
    (3, 16, 13, 13, 3, 2, (0, 1, 1, 0)),       # asymmetric pads, 3 input channels
]


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("case", CASES, ids=lambda c: "c{}o{}_{}x{}_k{}s{}".format(*c[:6]))
def test_conv_matches_numpy(cfg, case, rng):
    config = CONFIGS[cfg]
    c, o, h, w, k, stride, pads = case
    x, wt, bias = random_case(rng, config, c, o, h, w, k)
    ep = Epilogue(bias=True, shift=9, round=True, lo=0)
    y, _, prog = _conv(config, x, wt, stride, pads, ep, bias=bias)
    np.testing.assert_array_equal(y, reference(x, wt, stride, pads, ep, bias=bias))


@pytest.mark.parametrize("ep", [
    Epilogue(lo=None, hi=None),                                  # raw truncation of the accumulator
    Epilogue(shift=8),                                           # requant: shift + clip
    Epilogue(mul=77, shift=14, round=True, lo=-20, hi=100),      # fixed-point multiply, clip
    Epilogue(bias=True, shift=9, residual=True, lo=0),           # ResNet block tail: bias, residual, ReLU
], ids=["truncate", "shift", "mul_round_clip", "bias_residual_relu"])
def test_conv_epilogues(ep, rng):
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 32, 32, 8, 8, 3)
    res = rng.integers(-128, 128, (1, 32, 8, 8), dtype=np.int8)
    y, _, _ = _conv(config, x, wt, 1, (1, 1, 1, 1), ep, bias=bias, residual=res)
    np.testing.assert_array_equal(y, reference(x, wt, 1, (1, 1, 1, 1), ep, bias=bias, residual=res))


def test_per_channel_requantization(rng):
    """Per-channel weight scales: bias, a pre-shift that keeps the product in 32 bits, one
    fixed-point multiplier per output channel (a tensor operand), rounding shift, ReLU."""
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 48, 40, 7, 9, 3)
    scale = rng.integers(1000, 32767, (40,), dtype=np.int32)
    ep = Epilogue(bias=True, pre_shift=5, scale=True, shift=15, round=True, lo=0)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, _, _ = run_conv(dev, x, wt, 1, 1, ep, bias=bias, scale=scale, check_races=True)
    np.testing.assert_array_equal(y, conv_reference(x, wt, 1, 1, ep, bias=bias, scale=scale))
    assert len(np.unique(y)) > 50                      # the requantized values span the range


def test_a_residual_on_another_grid_is_scaled_and_added_before_the_shift(rng):
    """A residual Add fused into the conv that makes its later operand: the residual (int8,
    loaded into the accumulators) times its per-channel factor joins the requantized sum before
    the one rounding shift, then ReLU; across virtual threads (the residual tile and the three
    per-channel operands share the accumulator SRAM)."""
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 48, 40, 7, 9, 3)
    scale = rng.integers(100, 600, (40,), dtype=np.int32)          # the conv's part: ~16 codes
    rscale = rng.integers(4096, 30000, (40,), dtype=np.int32)     # the residual's: 0.06 to 0.5 of it
    res = rng.integers(-128, 128, (1, 40, 7, 9), dtype=np.int8)
    ep = Epilogue(bias=True, pre_shift=5, scale=True, shift=16, residual=True, residual_scale=True, lo=-128)
    for knobs in (None, ConvKnobs(tile_oc=1, tile_h=4, tile_w=9, ic_chunk=0, vthreads=2, vthread_axis="h")):
        dev = SimulatorDevice(config, dram_bytes=1 << 24)
        y, _, _ = run_conv(dev, x, wt, 1, 1, ep, knobs, bias=bias, scale=scale, residual=res, rscale=rscale,
                           check_races=True)
        want = conv_reference(x, wt, 1, 1, ep, bias=bias, scale=scale, residual=res, rscale=rscale)
        np.testing.assert_array_equal(y, want)
    alone = conv_reference(x, wt, 1, 1, replace(ep, residual=False, residual_scale=False), bias=bias, scale=scale)
    assert np.mean(y != alone) > 0.5 and len(np.unique(y)) > 50      # the residual moved most outputs


@pytest.mark.parametrize("cfg,knobs", [
    ("pynq", None), ("b2x8", None), ("b1x32", None),
    ("pynq", ConvKnobs(tile_oc=2, tile_h=3, tile_w=9, ic_chunk=1, vthreads=2, vthread_axis="oc")),
    ("pynq", ConvKnobs(tile_oc=1, tile_h=2, tile_w=9, ic_chunk=0, vthreads=2, vthread_axis="h"))],
    ids=["pynq", "b2x8", "b1x32", "pynq-oc-threads", "pynq-h-threads"])
def test_the_write_back_requantizer(cfg, knobs, rng):
    """The epilogue on OUT's requantizer: per channel a bias and a 17-bit multiplier, one
    rounding shift, a zero point and a clip, one SETQ per channel block and one ALU pass; across
    virtual threads over channels and over rows (which take turns with the one register file)."""
    config = CONFIGS[cfg]
    o = 3 * config.block + 5
    x, wt, bias = random_case(rng, config, 2 * config.block + 3, o, 8, 9, 3)
    mult = rng.integers(1 << 12, 1 << 17, (o,), dtype=np.int32)
    ep = Epilogue(requantizer=True, shift=26, zero=-7, lo=-100, hi=120)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, _, prog = run_conv(dev, x, wt, 1, 1, ep, knobs, bias=bias, scale=mult, check_races=True)
    np.testing.assert_array_equal(y, conv_reference(x, wt, 1, 1, ep, bias=bias, scale=mult))
    assert len(np.unique(y)) > 100 and (y == -100).any() and (y == 120).any()   # rounding and both clips
    alu = {k.alu_op.name for k in prog.kernels if k.alu_op is not None}
    assert alu == {"SETQ", "FLUSH"} and all(k.requant for k in prog.kernels if k.alu_op is not None and
                                            k.alu_op.name == "FLUSH")


def test_the_write_back_requantizer_after_a_scaled_residual(rng):
    """A residual fused into the conv on the requantizer: the accumulator times 2^k (headroom),
    plus the residual times its per-channel factor, then the one rounding of the requantizer."""
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 48, 40, 7, 9, 3)
    mult = rng.integers(1 << 10, 1 << 14, (40,), dtype=np.int32)
    rscale = rng.integers(1 << 9, 1 << 13, (40,), dtype=np.int32)
    res = rng.integers(-128, 128, (1, 40, 7, 9), dtype=np.int8)
    ep = Epilogue(requantizer=True, mul=8, residual=True, residual_scale=True, shift=29, zero=3, lo=-128, hi=127)
    for knobs in (None, ConvKnobs(tile_oc=1, tile_h=4, tile_w=9, ic_chunk=0, vthreads=2, vthread_axis="h")):
        dev = SimulatorDevice(config, dram_bytes=1 << 24)
        y, _, _ = run_conv(dev, x, wt, 1, 1, ep, knobs, bias=bias, scale=mult, residual=res, rscale=rscale,
                           check_races=True)
        np.testing.assert_array_equal(y, conv_reference(x, wt, 1, 1, ep, bias=bias, scale=mult, residual=res,
                                                        rscale=rscale))
    alone = conv_reference(x, wt, 1, 1, replace(ep, residual=False, residual_scale=False), bias=bias, scale=mult)
    assert np.mean(y != alone) > 0.5 and len(np.unique(y)) > 50      # the residual moved most outputs


@pytest.mark.parametrize("knobs", [
    ConvKnobs(tile_oc=1, tile_h=3, tile_w=5, ic_chunk=1, vthreads=2, vthread_axis="oc"),   # chunked input channels
    ConvKnobs(tile_oc=2, tile_h=4, tile_w=7, ic_chunk=0, vthreads=2, vthread_axis="h"),
    ConvKnobs(tile_oc=2, tile_h=1, tile_w=1, ic_chunk=1, vthreads=1),                      # one pixel per tile
    ConvKnobs(tile_oc=2, tile_h=5, tile_w=3, ic_chunk=1, vthreads=1),                      # tiles overhang
    ConvKnobs(tile_oc=1, tile_h=4, tile_w=7, vthreads=2, vthread_axis="h", order="pixel_outer"),
], ids=["chunked_vt_oc", "resident_vt_h", "pixel", "overhang", "pixel_outer"])
def test_conv_knobs(knobs, rng):
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 40, 32, 7, 7, 3)
    ep = Epilogue(bias=True, shift=10)
    y, _, _ = _conv(config, x, wt, 1, (1, 1, 1, 1), ep, knobs=knobs, bias=bias)
    np.testing.assert_array_equal(y, reference(x, wt, 1, (1, 1, 1, 1), ep, bias=bias))


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("case", [(32, 12, 12, 3, 1), (20, 9, 7, 3, 2), (16, 8, 8, 5, 1)],
                         ids=lambda c: "c{}_{}x{}_k{}s{}".format(*c))
def test_depthwise_matches_numpy(cfg, case, rng):
    config = CONFIGS[cfg]
    c, h, w, k, stride = case
    p = k // 2
    x, wt, bias = random_case(rng, config, c, c, h, w, k, depthwise=True)
    ep = Epilogue(bias=True, shift=5, lo=0)
    y, _, _ = _conv(config, x, wt, stride, (p, p, p, p), ep, depthwise=True, bias=bias)
    np.testing.assert_array_equal(y, reference(x, wt, stride, (p, p, p, p), ep, depthwise=True, bias=bias))


@pytest.mark.parametrize("depthwise", [False, True])
def test_one_compiled_conv_runs_on_new_data(depthwise, rng):
    # what benchmarks and tuners do: compile once, then run the program on fresh operands
    from vdla.compiler.topi.vdla import ConvLayer, compile_conv2d, run_conv_program
    config = CONFIGS["b2x8"]
    layer = ConvLayer(1, 3, 7, 6, 3, 3, 3, 1, (1, 1, 1, 1), depthwise)
    ep = Epilogue(bias=True, shift=7, lo=0)
    prog, _ = compile_conv2d(config, layer, ep)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    for _ in range(2):
        x, wt, bias = random_case(rng, config, 20, 20, 7, 6, 3, depthwise)
        y, result = run_conv_program(dev, prog, layer, x, wt, ep, bias=bias, check_races=True)
        np.testing.assert_array_equal(y, reference(x, wt, 1, (1, 1, 1, 1), ep, depthwise, bias=bias))
        assert result.cycles > 0


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("knobs", [None, ConvKnobs(tile_oc=1, tile_h=4, tile_w=5, ic_chunk=1, vthreads=2,
                                                  vthread_axis="h")],
                         ids=["default", "vt_h"])
def test_an_epilogue_ending_with_the_lookup_table(cfg, knobs, rng):
    """Requantization, then the lookup table in place of the clip (ALU LUT after one LOAD LUT),
    with and without virtual threads, on configs whose tables are 8, 16 and 16 elements deep;
    the values reach past int8, where the lookup saturates."""
    config = CONFIGS[cfg]
    x, wt, bias = random_case(rng, config, 24, 20, 7, 9, 3)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    ep = Epilogue(bias=True, shift=11, round=True, lo=None, hi=None, table=True)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, _, prog = run_conv(dev, x, wt, 1, 1, ep, knobs, bias=bias, check_races=True, table=table)
    want = conv_reference(x, wt, 1, 1, ep, bias=bias, table=table)
    np.testing.assert_array_equal(y, want)
    codes = conv_reference(x, wt, 1, 1, replace(ep, table=False), bias=bias)   # what the table read
    assert len(np.unique(codes)) > 100 and len(np.unique(want)) > 50
    loads = [c for c in prog.calls if getattr(c, "mem_type", None) == int(MemType.LUT)]
    assert len(loads) == 1          # the table is loaded once per kernel, whatever the tiling



@pytest.mark.parametrize("cfg,knobs", [("pynq", None), ("b2x8", None),
                                       ("pynq", ConvKnobs(tile_oc=1, tile_h=2, tile_w=9, ic_chunk=0, vthreads=2,
                                                          vthread_axis="h"))], ids=["pynq", "b2x8", "pynq-h-threads"])
def test_the_requantizer_writes_the_tables_entry(cfg, knobs, rng):
    """The requantizer to an intermediate grid and the table after it on the write-back (CTRL's
    table bit): one ALU FLUSH per element, no ALU LUT; the table loaded once."""
    config = CONFIGS[cfg]
    x, wt, bias = random_case(rng, config, 24, 20, 7, 9, 3)
    mult = rng.integers(1 << 12, 1 << 16, (20,), dtype=np.int32)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    ep = Epilogue(requantizer=True, shift=22, zero=-5, lo=-128, hi=127, table=True)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, _, prog = run_conv(dev, x, wt, 1, 1, ep, knobs, bias=bias, scale=mult, check_races=True, table=table)
    np.testing.assert_array_equal(y, conv_reference(x, wt, 1, 1, ep, bias=bias, scale=mult, table=table))
    codes = conv_reference(x, wt, 1, 1, replace(ep, table=False), bias=bias, scale=mult)     # what the table read
    assert len(np.unique(codes)) > 100 and len(np.unique(y)) > 50
    assert {k.alu_op.name for k in prog.kernels if k.alu_op is not None} == {"SETQ", "FLUSH"}
    assert sum(1 for c in prog.calls if getattr(c, "mem_type", None) == int(MemType.LUT)) == 1

@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("case", [(32, 12, 12), (20, 9, 7), (24, 5, 13)], ids=lambda c: "c{}_{}x{}".format(*c))
def test_depthwise_by_rows_matches_numpy(cfg, stride, case, rng):
    """3x3 depthwise convs by DEPTHWISE rows: one micro-op per output and kernel row, at stride
    2 two (every other window read through a zero tile)."""
    config = CONFIGS[cfg]
    c, h, w = case
    x, wt, bias = random_case(rng, config, c, c, h, w, 3, depthwise=True)
    ep = Epilogue(bias=True, shift=5, lo=0)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, result, prog = run_conv(dev, x, wt, stride, (1, 1, 1, 1), ep, None, bias, None, True, check_races=True,
                               rows=True)
    np.testing.assert_array_equal(y, reference(x, wt, stride, (1, 1, 1, 1), ep, depthwise=True, bias=bias))
    assert any(k.depthwise for k in prog.kernels) and not any(k.depthwise for k in prog.kernels if k.reset)


@pytest.mark.parametrize("tile_w", [1, 3, 5])
def test_a_stride_two_row_reads_every_pixel_and_skips_through_zero_tiles(tile_w, rng):
    """A row of tile_w outputs at stride 2 is 2 tile_w + 1 micro-ops, one per input pixel: the
    first two fill the window, micro-op 2j + 2 writes output j through its kernel row's tile,
    and the window between two outputs reads the zero tile 3 tiles on (after the 3 kernel
    rows). The zero writes land on outputs of the row, more than the accumulators' hazard
    distance from their writes; the result is numpy's, race-checked."""
    config = CONFIGS["pynq"]
    x, wt, bias = random_case(rng, config, 16, 16, 10, 10, 3, depthwise=True)
    ep = Epilogue(bias=True, shift=5, lo=-128)
    knobs = ConvKnobs(tile_oc=1, tile_h=5, tile_w=tile_w, vthreads=1)
    dev = SimulatorDevice(config, dram_bytes=1 << 24)
    y, _, prog = run_conv(dev, x, wt, 2, (1, 1, 1, 1), ep, knobs, bias, None, True, check_races=True, rows=True)
    np.testing.assert_array_equal(y, reference(x, wt, 2, (1, 1, 1, 1), ep, depthwise=True, bias=bias))
    (row,) = {k for k in prog.kernels if k.depthwise and not k.reset}
    dst, src, wgt = (np.array([getattr(u, f) for u in row.uops]) for f in ("dst", "src", "wgt"))
    assert len(row.uops) == 2 * tile_w + 1
    assert (np.diff(src) == 1).all()                            # one input pixel per micro-op
    writes = np.arange(2, len(dst), 2)                         # output j at micro-op 2j + 2
    assert (dst[writes] == dst[0] + np.arange(tile_w)).all() and (wgt[writes] == wgt[0]).all()
    skipped = np.arange(3, len(dst), 2)
    assert (wgt[skipped] == wgt[0] + 3).all()
    assert set(dst[skipped]) <= set(dst[writes])
    for a in set(dst[2:]):
        steps = np.flatnonzero(dst[2:] == a)
        assert (np.diff(steps) > config.timing.acc_raw_min_distance).all()


def test_rows_are_only_for_depthwise_convs_of_three_columns_and_stride_one_or_two():
    from vdla.compiler.topi.vdla import ConvLayer
    for stride in (1, 2):
        ConvLayer(1, 2, 8, 8, 2, 3, 3, stride, (1, 1, 1, 1), depthwise=True, rows=True)
    for kw, stride, depthwise in ((5, 1, True), (3, 3, True), (3, 1, False)):
        with pytest.raises(ValueError, match="DEPTHWISE rows take a depthwise conv of 3 columns of taps and "
                                             "stride 1 or 2"):
            ConvLayer(1, 2, 8, 8, 2, 3, kw, stride, (1, 1, 1, 1), depthwise=depthwise, rows=True)
