"""The loop-IR call of an AMX tile GEMM (tir/tile_gemm.py): what a spec accepts (what a tile
register holds) and how the call carries it."""
from __future__ import annotations

import pytest

from vdla.compiler.tir.tile_gemm import TileGemm


def _spec(**over):
    base = dict(rows=14, tiles=2, colsb=48, a_row_bytes=16, loops=((8, 30 * 16 * 30, 2304), (3, 30 * 16, 768)),
                b_block_bytes=8 * 2304, c_row_bytes=64, c_block_bytes=14 * 64)
    base.update(over)
    return TileGemm(**base)


@pytest.mark.parametrize("over,message", [
    ({"rows": 17}, "rows must be 1..16"), ({"colsb": 66}, "multiple of 4 up to 64"), ({"colsb": 6}, "multiple of 4"),
    ({"tiles": 7}, "1..6 accumulator tiles"), ({"loops": ()}, "positive extents"),
])
def test_specs_a_tile_register_cannot_hold_are_refused(over, message):
    with pytest.raises(ValueError, match=message):
        _spec(**over)


def test_the_spec_travels_as_integers():
    spec = _spec(accumulate=True)
    assert TileGemm.decode(spec.encode()) == spec
    assert spec.steps == 24 and spec.work == 24 * 2 * 14


