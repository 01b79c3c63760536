"""Blocked int8 matmul through the runtime on the simulator device, bit-exact against numpy."""
import numpy as np
import pytest

from vdla.driver.programs import Requant, matmul_reference, run_matmul
from vdla.hw import Opcode, MemType


def _int8(rng, *shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_matmul_64x512_by_512x512_low_bits(device, rng, virtual_threads):
    a, b = _int8(rng, 64, 512), _int8(rng, 512, 512)
    c, result = run_matmul(device, a, b, tile_m=16, tile_n=8, virtual_threads=virtual_threads)
    # no requantization: the STORE keeps the low 8 bits of each int32 accumulator
    np.testing.assert_array_equal(c, matmul_reference(a, b))
    assert result.stats["gemm_uops"] == 64 * 32 * 32  # every (row, out block, in block) once


def test_matmul_weights_are_loaded_once_per_column_block(device, rng):
    """Weight reuse: 4 column blocks x 4 row tiles, yet each weight element crosses the bus
    once (block 0 up front, blocks 1-3 prefetched in pieces next to the previous block's
    row tiles 1-3)."""
    a, b = _int8(rng, 64, 512), _int8(rng, 512, 512)
    from vdla.driver.runtime import CommandQueue
    cq = CommandQueue(device)
    c, result = run_matmul(device, a, b, tile_m=16, tile_n=8, virtual_threads=2, cq=cq, check_races=True)
    np.testing.assert_array_equal(c, matmul_reference(a, b))
    wgt_loads = [i for i in cq.last_stream if i.opcode == Opcode.LOAD and i.memory_type == MemType.WGT]
    spans = sorted((i.dram_base, i.dram_base + i.x_size * i.y_size) for i in wgt_loads)
    assert all(end == nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))   # no gap, no overlap
    assert spans[-1][1] - spans[0][0] == 32 * 32                              # all 32x32 weight elements
    assert result.stats["load_bytes"]["WGT"] == b.nbytes


def test_matmul_full_int32_accumulators_via_shifted_stores(device, rng):
    """Requantize with shift 0/8/16/24 and no clip: the four stored bytes rebuild every
    int32 accumulator, so the whole sum (not only its low byte) is checked."""
    a, b = _int8(rng, 32, 256), _int8(rng, 256, 64)
    exact = a.astype(np.int64) @ b.astype(np.int64)
    rebuilt = np.zeros_like(exact)
    for byte in range(4):
        c, _ = run_matmul(device, a, b, tile_m=8, tile_n=2,
                          requant=Requant(shift=8 * byte, lo=None, hi=None))
        part = c.astype(np.int64) & 0xFF
        rebuilt |= part << (8 * byte)
    rebuilt = rebuilt.astype(np.uint32).astype(np.int32)
    np.testing.assert_array_equal(rebuilt, exact)


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_matmul_requantized_with_ragged_shapes(device, rng, virtual_threads):
    """M, K, N not multiples of the block: the layouts zero-pad; one column block per tile
    (micro-ops then walk rows instead of columns)."""
    a, b = _int8(rng, 24, 100), _int8(rng, 100, 40)
    req = Requant(shift=7, lo=-100, hi=90)
    c, _ = run_matmul(device, a, b, tile_m=8, tile_n=1, virtual_threads=virtual_threads, requant=req)
    np.testing.assert_array_equal(c, matmul_reference(a, b, req))
