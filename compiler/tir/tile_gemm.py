"""An AMX tile GEMM as one loop-IR call (tensorize's emit writes it, codegen/amx.py writes its
function): E.Call(CALL, [a, b, c, *TileGemm.encode()]), a, b, c loads of the buffer elements at
the three operands' starts (the code generator takes their addresses).

A tile GEMM keeps `tiles` accumulator tiles of `rows` x 16 int32 (one 16-lane output block
each) in tile registers over a whole reduction: each step loads one A tile (`rows` rows of
`colsb` uint8, `a_row_bytes` apart) and per block one B tile (colsb/4 rows of 64 int8: 16
lanes x 4 consecutive k, the packed int8 weight layout), and adds A x B into the block's
accumulator with `tdpbusd` (uint8 x int8 -> int32, exact). The reduction steps walk up to a few
nested loops (`loops`: extent, A step bytes, B step bytes, outermost first). At the end each
accumulator tile is stored, rows `c_row_bytes` apart, blocks `c_block_bytes` apart.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CALL = "x86_amx_tile_gemm"
TILE_ROWS = 16           # rows of a tile register
TILE_BYTES_PER_ROW = 64  # bytes of a tile register's row
TILE_REGISTERS = 8


@dataclass(frozen=True)
class TileGemm:
    rows: int             # output rows (pixels, matrix rows) per tile, <= 16
    tiles: int            # accumulator tiles (16-lane output blocks)
    colsb: int            # bytes of k per step (a multiple of 4, <= 64)
    a_row_bytes: int      # between A's rows
    loops: tuple          # ((extent, a step bytes, b step bytes), ...) outermost first
    b_block_bytes: int    # between the blocks' B tiles
    c_row_bytes: int      # between an accumulator tile's stored rows
    c_block_bytes: int    # between the blocks' stored tiles
    accumulate: bool = False   # add to what the accumulators hold (else start from zero)

    def __post_init__(self):
        if not 1 <= self.rows <= TILE_ROWS:
            raise ValueError(f"AMX tile GEMM: rows must be 1..{TILE_ROWS}, got {self.rows}")
        if self.colsb % 4 or not 4 <= self.colsb <= TILE_BYTES_PER_ROW:
            raise ValueError(f"AMX tile GEMM: colsb must be a multiple of 4 up to {TILE_BYTES_PER_ROW}, "
                             f"got {self.colsb}")
        # the accumulators, an A tile and a B tile live at once (B tiles of the blocks in turn)
        if not 1 <= self.tiles <= TILE_REGISTERS - 2:
            raise ValueError(f"AMX tile GEMM: 1..{TILE_REGISTERS - 2} accumulator tiles, got {self.tiles}")
        if not self.loops or any(e < 1 for e, _, _ in self.loops):
            raise ValueError(f"AMX tile GEMM: reduction loops need positive extents, got {self.loops}")

    def encode(self) -> list[int]:
        """The spec as the integers the loop-IR call carries after its three addresses."""
        return [self.rows, self.tiles, self.colsb, self.a_row_bytes, self.b_block_bytes, self.c_row_bytes,
                self.c_block_bytes, int(self.accumulate)] + [v for loop in self.loops for v in loop]

    @staticmethod
    def decode(values) -> "TileGemm":
        values = [int(v) for v in values]
        head, flat = values[:8], values[8:]
        loops = tuple(tuple(flat[k:k + 3]) for k in range(0, len(flat), 3))
        return TileGemm(head[0], head[1], head[2], head[3], loops, head[4], head[5], head[6], bool(head[7]))

    @property
    def steps(self) -> int:
        return math.prod(extent for extent, _, _ in self.loops)

    @property
    def work(self) -> int:
        """Accumulator rows updated (each a vector's worth, as parallel.estimated_work counts)."""
        return self.steps * self.tiles * self.rows

    @property
    def name(self) -> str:
        loops = "_".join(f"{e}x{a}x{b}" for e, a, b in self.loops)
        return (f"vdla_amx_r{self.rows}_t{self.tiles}_k{self.colsb}_a{self.a_row_bytes}_l{loops}"
                f"_b{self.b_block_bytes}_c{self.c_row_bytes}x{self.c_block_bytes}{'_acc' if self.accumulate else ''}")
