"""Compiled VDLA dense against numpy, bit for bit: odd sizes, K and N not multiples of
BLOCK, reduction chunks, epilogues, three configs."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import DenseKnobs, Epilogue
from vdla.driver.devices import SimulatorDevice

from test_conv import CONFIGS
from vdla_kernels import dense_reference, run_dense as run_dense_on, wrap32


def run_dense(config, a, b, ep, knobs=None, bias=None, residual=None):
    dev = SimulatorDevice(config, dram_bytes=1 << 23)
    return run_dense_on(dev, a, b, ep, knobs, bias, residual, check_races=True)[0]


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("m,k,n", [(1, 512, 100), (6, 70, 50), (16, 256, 64)])
def test_dense_matches_numpy(cfg, m, k, n, rng):
    config = CONFIGS[cfg]
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (n,), dtype=np.int32)
    res = rng.integers(-128, 128, (m, n), dtype=np.int8)
    ep = Epilogue(bias=True, mul=3, shift=10, round=True, residual=True, lo=-100, hi=120)
    y = run_dense(config, a, b, ep, bias=bias, residual=res)
    np.testing.assert_array_equal(y, dense_reference(a, b, ep, bias, res))


@pytest.mark.parametrize("knobs", [None, DenseKnobs(tile_m=50, tile_n=2, k_chunk=0, vthreads=2),
                                   DenseKnobs(tile_m=40, tile_n=4, k_chunk=2, vthreads=1)],
                         ids=["default", "overhang-3-threads", "overhang-3-chunks"])
def test_rows_that_no_tile_divides(knobs, rng):
    """197 rows (ViT's tokens, a prime): the last row tile overhangs the matrix, its extra rows
    read the DMA's zero padding and are never stored; with a residual (padded the same way)."""
    config = CONFIGS["pynq"]
    a = rng.integers(-128, 128, (197, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (64,), dtype=np.int32)
    res = rng.integers(-128, 128, (197, 64), dtype=np.int8)
    ep = Epilogue(bias=True, mul=3, shift=10, round=True, residual=True, lo=-100, hi=120)
    dev = SimulatorDevice(config, dram_bytes=1 << 23)
    y = run_dense_on(dev, a, b, ep, knobs, bias, res, check_races=True)[0]
    np.testing.assert_array_equal(y, dense_reference(a, b, ep, bias, res))


def test_dense_reduction_chunks(rng):
    config = CONFIGS["pynq"]
    a = rng.integers(-128, 128, (4, 256), dtype=np.int8)
    b = rng.integers(-128, 128, (256, 64), dtype=np.int8)
    ep = Epilogue(lo=None, hi=None)                      # the raw int8 truncation of the sum
    y = run_dense(config, a, b, ep, knobs=DenseKnobs(tile_m=4, tile_n=2, k_chunk=4, vthreads=2))
    np.testing.assert_array_equal(y, wrap32(a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8))


def test_dense_with_the_longest_right_shift(rng):
    """shift = 31, the most SHR can express, as two SHR stages (2^31 is no int32 divisor):
    negative sums become -1, the others 0."""
    config = CONFIGS["pynq"]
    a = rng.integers(-128, 128, (3, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    ep = Epilogue(shift=31, lo=None, hi=None)
    y = run_dense(config, a, b, ep)
    np.testing.assert_array_equal(y, dense_reference(a, b, ep))
    assert set(np.unique(y)) == {-1, 0}


def test_dense_ending_with_the_lookup_table(rng):
    """A linear layer's epilogue with the lookup table (GELU's place in a transformer's MLP),
    two virtual threads over the output columns."""
    config = CONFIGS["pynq"]
    a = rng.integers(-128, 128, (12, 96), dtype=np.int8)
    b = rng.integers(-128, 128, (96, 64), dtype=np.int8)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    ep = Epilogue(shift=10, round=True, lo=None, hi=None, table=True)
    dev = SimulatorDevice(config, dram_bytes=1 << 23)
    y = run_dense_on(dev, a, b, ep, DenseKnobs(tile_m=12, tile_n=1, vthreads=2), check_races=True, table=table)[0]
    np.testing.assert_array_equal(y, dense_reference(a, b, ep, table=table))


def _requantized_linear_against_numpy(rng, m, k, n, knobs):
    """A random (m, k) x (k, n) linear layer on the requantizer (a bias and multiplier per output
    channel) run race-checked with `knobs`: bit for bit numpy's, its outputs varied. -> the program."""
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    bias = rng.integers(-3000, 3000, (n,), dtype=np.int32)
    mult = rng.integers(1 << 12, 1 << 17, (n,), dtype=np.int32)
    ep = Epilogue(requantizer=True, shift=27, zero=11, lo=-128, hi=127)
    dev = SimulatorDevice(CONFIGS["pynq"], dram_bytes=1 << 24)
    c, _, prog = run_dense_on(dev, a, b, ep, knobs, bias=bias, scale=mult, check_races=True)
    np.testing.assert_array_equal(c, dense_reference(a, b, ep, bias=bias, scale=mult))
    assert len(np.unique(c)) > 100
    return prog


def test_dense_on_the_write_back_requantizer_sets_each_block_once_per_tile(rng):
    """A linear layer on the requantizer: bit for bit the numpy oracle, and one SETQ per output
    block and tile (the channel loop outside the rows: a SETQ per row made BERT's layers 23x
    longer in instructions)."""
    prog = _requantized_linear_against_numpy(rng, 64, 100, 70, DenseKnobs(tile_m=16, tile_n=5, k_chunk=0, vthreads=1))
    setq = [k for k in prog.kernels if k.alu_op is not None and k.alu_op.name == "SETQ"]
    calls = [c for c in prog.calls if type(c).__name__ == "Alu" and prog.kernels[c.kernel] in setq]
    assert len(calls) == (64 // 16) * 5           # tiles x blocks per tile


def _weight_loads(prog):
    return [c for c in prog.calls if type(c).__name__ == "Load" and c.param == 1]


@pytest.mark.parametrize("knobs", [DenseKnobs(tile_m=50, tile_n=5, k_chunk=0, vthreads=2, vthread_axis="m"),
                                   DenseKnobs(tile_m=50, tile_n=5, k_chunk=0, vthreads=1, vthread_axis="m"),
                                   DenseKnobs(tile_m=66, tile_n=2, k_chunk=1, vthreads=3, vthread_axis="m")],
                         ids=["two-threads", "one-thread", "three-threads-chunked"])
def test_threads_over_row_tiles(knobs, rng):
    """Threads over the row tiles of 197 rows (the last tile overhanging), on the requantizer
    with a bias and multiplier per output channel: bit for bit numpy, race-free; with the whole
    reduction in one chunk each column tile's weights are loaded once for all its row tiles
    (over columns, once per tile)."""
    prog = _requantized_linear_against_numpy(rng, 197, 100, 160, knobs)
    L = CONFIGS["pynq"].block
    n_blocks, k_blocks = -(-160 // L), -(-100 // L)
    column_tiles, row_tiles = n_blocks // knobs.tile_n, -(-197 // knobs.tile_m)
    chunks = k_blocks // (knobs.k_chunk or k_blocks)
    if knobs.k_chunk == 0:
        assert len(_weight_loads(prog)) == column_tiles
        over_columns = _requantized_linear_against_numpy(rng, 197, 100, 160, DenseKnobs(50, 5, 0, knobs.vthreads))
        assert len(_weight_loads(over_columns)) == column_tiles * row_tiles
    else:
        assert len(_weight_loads(prog)) == column_tiles * row_tiles * chunks
