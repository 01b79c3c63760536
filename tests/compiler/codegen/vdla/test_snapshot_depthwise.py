"""Golden instruction stream of a small depthwise conv by DEPTHWISE rows (vdla.hw.depthwise),
so a change in what the compiler emits for it is seen and reviewed. The layer: one channel
block (16 channels), a 4x5 image, 3x3 kernel, padding 1, >> 6 and clipped to int8; one tile of
the whole image (tile_h=4, tile_w=5), one virtual thread. Buffers: x at 0x1000 (INP element
256), w at 0x1200 (WGT element 18: three 16x16 tiles, one per kernel row, taps in lanes 0..2),
y at 0x1500 (OUT element 336).

Why each line is right (instruction indices of EXPECTED):
 0     the padded input window: 4 rows of 5 pixels with a zero row above and below and a zero
       column left and right (the DMA's padding), so SRAM holds 6 rows of 7 pixels: row r
       of the padded image starts at INP element 7r.
 1     the three weight tiles (kernel rows 0..2) at WGT 0..2; pushes l2c for the compute.
 2-3   the accumulator reset of the 20 outputs (4 rows x 5), a loop over one micro-op.
 4-5   the DEPTHWISE kernel: 7 micro-ops = one row of 5 outputs of a 1x3 filter: micro-ops
       0 and 1 fill the window (reading pixels 0 and 1; their dst, never written, is the row's
       first output), micro-op u >= 2 writes output u - 2 from pixels u-2..u. Its loops:
       outer = the kernel row (3: src + 7, one padded image row; wgt + 1, the next tile;
       dst + 0, the same outputs), inner = the output row (4: src + 7, dst + 5). It pops the
       load's token. Priming the window costs 2 of 7 micro-ops per row: 84 micro-ops for
       the 180 tap-products of 16 channels, where the diagonal GEMM takes 180.
 6-11  the epilogue on the ALU (SHR 6, MAX -128, MIN 127 over the 20 accumulators); the last
       pushes c2s.
12     the 20 output pixels to y, one row (pops c2s, pushes s2c for the next tile: none).
13-14  synchronize: a load NOP hands its token to FINISH, which waits for load and store.
"""
import numpy as np

from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue, compile_conv2d
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import CommandQueue
from vdla.hw import disassemble

EXPECTED = """\
 0  load    LOAD  INP      sram=0 dram=256 y=4 x=5 stride=5 pad(y0,y1,x0,x1)=(1,1,1,1)
 1  load    LOAD  WGT      sram=0 dram=18 y=1 x=3 stride=3 [+l2c]
 2  compute LOAD  UOP      sram=0 dram=1104 y=1 x=1 stride=1
 3  compute GEMM reset    uop=[0,1) iter=20x1 dst=(1,0) src=(0,0) wgt=(0,0)
 4  compute LOAD  UOP      sram=1 dram=1120 y=1 x=7 stride=7 [-l2c]
 5  compute DEPTHWISE uop=[1,8) iter=3x4 dst=(0,5) src=(7,7) wgt=(1,0)
 6  compute LOAD  UOP      sram=8 dram=1136 y=1 x=1 stride=1
 7  compute ALU   SHR imm=6     uop=[8,9) iter=20x1 dst=(1,0) src=(1,0)
 8  compute LOAD  UOP      sram=9 dram=1424 y=1 x=1 stride=1
 9  compute ALU   MAX imm=-128  uop=[9,10) iter=20x1 dst=(1,0) src=(1,0)
10  compute LOAD  UOP      sram=10 dram=1440 y=1 x=1 stride=1
11  compute ALU   MIN imm=127   uop=[10,11) iter=20x1 dst=(1,0) src=(1,0) [+c2s]
12  store   STORE OUT      sram=0 dram=336 y=1 x=20 stride=20 [-c2s +s2c]
13  load    LOAD  INP      nop [+l2c]
14  compute FINISH [-l2c -s2c]"""

# (dst, src, wgt) of the DEPTHWISE kernel's micro-ops (line 5)
WINDOW_ROW = [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 4, 0), (3, 5, 0), (4, 6, 0)]


def _compile():
    dev = SimulatorDevice(None, dram_bytes=1 << 20)
    layer = ConvLayer(1, 1, 4, 5, 1, 3, 3, 1, (1, 1, 1, 1), depthwise=True, rows=True)
    prog, _ = compile_conv2d(dev.config, layer, Epilogue(shift=6), ConvKnobs(tile_oc=1, tile_h=4, tile_w=5, vthreads=1))
    bufs = [dev.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    return dev, prog, bufs


def test_depthwise_rows_stream_matches_snapshot():
    dev, prog, bufs = _compile()
    assert [b.addr for b in bufs] == [0x1000, 0x1200, 0x1500]
    cq = CommandQueue(dev)
    prog.replay(cq, bufs)
    assert disassemble(cq.finish_stream()).rstrip() == EXPECTED
    row = next(k for k in prog.kernels if k.depthwise)
    assert [(u.dst, u.src, u.wgt) for u in row.uops] == WINDOW_ROW


def test_snapshot_stream_computes_the_depthwise_conv(rng):
    """The snapshot is also the right program: run it and compare with numpy."""
    dev, prog, bufs = _compile()
    x = rng.integers(-128, 128, (1, 1, 4, 5, 1, 16), dtype=np.int8)
    taps = rng.integers(-128, 128, (16, 3, 3), dtype=np.int8)          # channel, ky, kx
    w = np.zeros((1, 3, 16, 16), np.int8)
    w[0, :, :, :3] = taps.transpose(1, 0, 2)
    dev.write(bufs[0], x)
    dev.write(bufs[1], w)
    cq = CommandQueue(dev)
    prog.replay(cq, bufs)
    cq.synchronize(check_races=True)
    y = dev.read(bufs[2], np.int8, (1, 1, 4, 5, 1, 16))
    xn = np.pad(x[0, 0, :, :, 0, :].astype(np.int64), ((1, 1), (1, 1), (0, 0)))     # (6, 7, 16)
    for i in range(4):
        for j in range(5):
            acc = sum(xn[i + ky, j + kx] * taps[:, ky, kx] for ky in range(3) for kx in range(3))
            np.testing.assert_array_equal(y[0, 0, i, j, 0], np.clip(acc >> 6, -128, 127))
