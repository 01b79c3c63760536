"""Golden instruction stream of a small compiled conv, so a change in what the compiler emits
is seen and reviewed. The layer: one input and two output channel blocks (16 -> 32 channels),
a 4x4 image, 3x3 kernel, padding 1, requantized by >> 6 and clipped to int8; schedule
tile_oc=1, tile_h=2, tile_w=4 (two row tiles), all input channels at once, two virtual
threads over the output-channel tiles. Buffers: x at 0x1000 (INP element 256), w at 0x1100
(WGT element 17), y at 0x2300 (OUT element 560).

Why each group is right (instruction indices of EXPECTED):
 0-1   weights of output block 0 (thread 0, WGT slot 0) and block 1 (thread 1, slot 9): 9 taps
       each, loaded once and reused by both row tiles (weights are resident when all input
       channels fit one chunk). No token: the INP loads after them push for both.
 2-3   rows -1..2 of the image for row tile 0, once per thread (each thread owns an INP slot,
       0 and 24 = 4 rows x 6 columns): 3 rows from DRAM, y_pad0=1 row of zeros above, one
       zero column left and right (the conv's padding written by the DMA). Each pushes l2c:
       the GEMM of its thread needs it and the weights before it.
 4-13  thread 0: reset of its 8 accumulators (2 rows x 4 columns), then the GEMM that pops
       the load token: 72 micro-ops = 3x3 taps x 2x4 pixels, pixels innermost so no
       accumulator is updated twice in a row. It pushes c2l: the next row tile's input load
       into slot 0 must wait until this GEMM has read it. Then its requantization on the
       ALU: SHR 6, MAX -128, MIN 127 over its 8 accumulators (one micro-op, loop of 8); the
       last pushes c2s. The epilogue follows its own thread's GEMM, so thread 0's store can
       run while thread 1 computes.
14-23  the same for thread 1 (accumulators 8..15, INP slot 24, weights 9..17).
24-25  STORE of each thread's 8 pixels (pops c2s): out block 0 at 560, block 1 at 576
       (16 pixels apart); each pushes s2c because the next tile's reset overwrites them.
26-27  row tile 1: input rows 1..4 (y_pad1=1 zero row below the image), after the GEMMs
       of tile 0 released the slots (pop c2l).
28-37  tile 1, per thread: reset (pop s2c: that thread's store of tile 0 is done), GEMM
       (pop l2c), ALU; the micro-op kernels are resident, so no LOAD UOP is repeated.
38-39  stores of tile 1 at 568 and 584 (rows 2..3 of each block).
40-41  synchronize: a load NOP hands its token to FINISH, which waits for load and store.
"""
import numpy as np

from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue, compile_conv2d
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import CommandQueue
from vdla.hw import disassemble

EXPECTED = """\
 0  load    LOAD  WGT      sram=0 dram=17 y=1 x=9 stride=9
 1  load    LOAD  WGT      sram=9 dram=26 y=1 x=9 stride=9
 2  load    LOAD  INP      sram=0 dram=256 y=3 x=4 stride=4 pad(y0,y1,x0,x1)=(1,0,1,1) [+l2c]
 3  load    LOAD  INP      sram=24 dram=256 y=3 x=4 stride=4 pad(y0,y1,x0,x1)=(1,0,1,1) [+l2c]
 4  compute LOAD  UOP      sram=0 dram=2368 y=1 x=1 stride=1
 5  compute GEMM reset    uop=[0,1) iter=8x1 dst=(1,0) src=(0,0) wgt=(0,0)
 6  compute LOAD  UOP      sram=1 dram=2384 y=1 x=72 stride=72 [-l2c]
 7  compute GEMM          uop=[1,73) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [+c2l]
 8  compute LOAD  UOP      sram=73 dram=2464 y=1 x=1 stride=1
 9  compute ALU   SHR imm=6     uop=[73,74) iter=8x1 dst=(1,0) src=(1,0)
10  compute LOAD  UOP      sram=74 dram=2480 y=1 x=1 stride=1
11  compute ALU   MAX imm=-128  uop=[74,75) iter=8x1 dst=(1,0) src=(1,0)
12  compute LOAD  UOP      sram=75 dram=2496 y=1 x=1 stride=1
13  compute ALU   MIN imm=127   uop=[75,76) iter=8x1 dst=(1,0) src=(1,0) [+c2s]
14  compute LOAD  UOP      sram=76 dram=2512 y=1 x=1 stride=1
15  compute GEMM reset    uop=[76,77) iter=8x1 dst=(1,0) src=(0,0) wgt=(0,0)
16  compute LOAD  UOP      sram=77 dram=2528 y=1 x=72 stride=72 [-l2c]
17  compute GEMM          uop=[77,149) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [+c2l]
18  compute LOAD  UOP      sram=149 dram=2608 y=1 x=1 stride=1
19  compute ALU   SHR imm=6     uop=[149,150) iter=8x1 dst=(1,0) src=(1,0)
20  compute LOAD  UOP      sram=150 dram=2624 y=1 x=1 stride=1
21  compute ALU   MAX imm=-128  uop=[150,151) iter=8x1 dst=(1,0) src=(1,0)
22  compute LOAD  UOP      sram=151 dram=2640 y=1 x=1 stride=1
23  compute ALU   MIN imm=127   uop=[151,152) iter=8x1 dst=(1,0) src=(1,0) [+c2s]
24  store   STORE OUT      sram=0 dram=560 y=1 x=8 stride=8 [-c2s +s2c]
25  store   STORE OUT      sram=8 dram=576 y=1 x=8 stride=8 [-c2s +s2c]
26  load    LOAD  INP      sram=0 dram=260 y=3 x=4 stride=4 pad(y0,y1,x0,x1)=(0,1,1,1) [-c2l +l2c]
27  load    LOAD  INP      sram=24 dram=260 y=3 x=4 stride=4 pad(y0,y1,x0,x1)=(0,1,1,1) [-c2l +l2c]
28  compute GEMM reset    uop=[0,1) iter=8x1 dst=(1,0) src=(0,0) wgt=(0,0) [-s2c]
29  compute GEMM          uop=[1,73) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [-l2c]
30  compute ALU   SHR imm=6     uop=[73,74) iter=8x1 dst=(1,0) src=(1,0)
31  compute ALU   MAX imm=-128  uop=[74,75) iter=8x1 dst=(1,0) src=(1,0)
32  compute ALU   MIN imm=127   uop=[75,76) iter=8x1 dst=(1,0) src=(1,0) [+c2s]
33  compute GEMM reset    uop=[76,77) iter=8x1 dst=(1,0) src=(0,0) wgt=(0,0) [-s2c]
34  compute GEMM          uop=[77,149) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [-l2c]
35  compute ALU   SHR imm=6     uop=[149,150) iter=8x1 dst=(1,0) src=(1,0)
36  compute ALU   MAX imm=-128  uop=[150,151) iter=8x1 dst=(1,0) src=(1,0)
37  compute ALU   MIN imm=127   uop=[151,152) iter=8x1 dst=(1,0) src=(1,0) [+c2s]
38  store   STORE OUT      sram=0 dram=568 y=1 x=8 stride=8 [-c2s]
39  store   STORE OUT      sram=8 dram=584 y=1 x=8 stride=8 [-c2s +s2c]
40  load    LOAD  INP      nop [+l2c]
41  compute FINISH [-l2c -s2c]"""


def _compile():
    dev = SimulatorDevice(None, dram_bytes=1 << 20)
    prog, _ = compile_conv2d(dev.config, ConvLayer(1, 1, 4, 4, 2), Epilogue(shift=6),
                             ConvKnobs(tile_oc=1, tile_h=2, tile_w=4, vthreads=2, vthread_axis="oc"))
    bufs = [dev.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    return dev, prog, bufs


def test_small_conv_stream_matches_snapshot():
    dev, prog, bufs = _compile()
    assert [b.addr for b in bufs] == [0x1000, 0x1100, 0x2300]
    cq = CommandQueue(dev)
    prog.replay(cq, bufs)
    assert disassemble(cq.finish_stream()).rstrip() == EXPECTED


def test_snapshot_stream_computes_the_conv(rng):
    """The snapshot is also the right program: run it and compare with numpy."""
    dev, prog, bufs = _compile()
    x = rng.integers(-128, 128, (1, 1, 4, 4, 1, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (2, 1, 3, 3, 16, 16), dtype=np.int8)
    dev.write(bufs[0], x)
    dev.write(bufs[1], w)
    cq = CommandQueue(dev)
    prog.replay(cq, bufs)
    cq.synchronize(check_races=True)
    y = dev.read(bufs[2], np.int8, (1, 2, 4, 4, 1, 16))
    xn = np.pad(x[0, 0, :, :, 0, :].astype(np.int64), ((1, 1), (1, 1), (0, 0)))     # (6, 6, 16)
    for o in range(2):
        for i in range(4):
            for j in range(4):
                acc = np.zeros(16, np.int64)
                for ky in range(3):
                    for kx in range(3):
                        acc += w[o, 0, ky, kx].astype(np.int64) @ xn[i + ky, j + kx]
                want = np.clip(acc.astype(np.int32).astype(np.int64) >> 6, -128, 127)
                np.testing.assert_array_equal(y[0, o, i, j, 0], want)
