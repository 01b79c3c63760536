"""DEPTHWISE (vdla.hw.depthwise) against numpy written here: a 3x3 depthwise convolution as
rows of a sliding window, the priming micro-ops that write nothing, the hazard rule that
counts only writes, reset, and the reference interpreter on the same stream."""
import numpy as np
import pytest

from vdla.hw import DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.hw.depthwise import TAPS
from vdla.simulator.errors import HazardError
from vdla.simulator.reference import ReferenceHazardError, reference_run
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState

CFG = load_config("pynq")
L = CFG.block


def conv_program(h, w):
    """Micro-ops and loop of a 3x3 stride-1 depthwise conv over an (h+2) x (w+2) padded image in
    INP (row-major, one vector per pixel) into ACC row-major (h x w), weights: tile ky holds
    channel o's taps of kernel row ky in row o. One (i, j) row = one output row of one kernel row:
    i over kernel rows (src + one image row, weight + 1), j over output rows."""
    uops = [Uop(dst=max(u - (TAPS - 1), 0), src=u, wgt=0) for u in range(w + TAPS - 1)]
    insn = DepthwiseInsn(uop_begin=0, uop_end=len(uops), iter_out=3, iter_in=h, dst_factor_out=0, dst_factor_in=w,
                         src_factor_out=w + 2, src_factor_in=w + 2, wgt_factor_out=1, wgt_factor_in=0)
    return uops, insn


def numpy_depthwise(image, taps, h, w):
    """image (h+2, w+2, L) int, taps (L, 3, 3) -> (h, w, L) int64, the textbook formula."""
    out = np.zeros((h, w, L), dtype=np.int64)
    for y in range(h):
        for x in range(w):
            for ky in range(3):
                for kx in range(3):
                    out[y, x] += image[y + ky, x + kx].astype(np.int64) * taps[:, ky, kx]
    return out


def state_with(uops, image, tiles, acc=None):
    state = OnChipState(CFG)
    state.inp[:image.shape[0] * image.shape[1], 0] = image.reshape(-1, L)
    state.wgt[:len(tiles)] = tiles
    for k, u in enumerate(uops):
        state.uop_dst[k], state.uop_src[k], state.uop_wgt[k] = u.dst, u.src, u.wgt
    if acc is not None:
        state.acc[:acc.shape[0], 0] = acc
    return state


def taps_as_tiles(taps, rng):
    """(L, 3, 3) taps -> three weight tiles; the lanes DEPTHWISE does not read hold noise."""
    tiles = rng.integers(-128, 128, size=(3, L, L)).astype(np.int8)
    for ky in range(3):
        tiles[ky, :, :3] = taps[:, ky, :]
    return tiles


def test_rows_of_a_sliding_window_are_a_3x3_depthwise_conv(rng):
    h, w = 5, 7
    image = rng.integers(-128, 128, size=(h + 2, w + 2, L)).astype(np.int8)
    taps = rng.integers(-128, 128, size=(L, 3, 3)).astype(np.int8)
    start = rng.integers(-1000, 1000, size=(h * w, L))
    uops, insn = conv_program(h, w)
    state = state_with(uops, image, taps_as_tiles(taps, rng), start)
    assert execute(insn, 0, state, None) == 3 * h * (w + 2)       # priming micro-ops issue too
    expect = start + numpy_depthwise(image, taps, h, w).reshape(h * w, L)
    np.testing.assert_array_equal(state.acc[:h * w, 0], expect)
    np.testing.assert_array_equal(state.out[:h * w, 0], expect.astype(np.int8))      # OUT: the low 8 bits
    assert not state.acc[h * w:].any() and not state.out[h * w:].any()


def test_priming_micro_ops_write_nothing_and_do_not_count_as_hazards(rng):
    """Micro-op 0 and 1 of each row point at entry 9 (never written) and at the entry the
    row's first write updates one step later: neither is a write, so no hazard and no OUT."""
    state = OnChipState(CFG)
    state.inp[:8, 0] = rng.integers(-128, 128, size=(8, L))
    state.wgt[0] = rng.integers(-128, 128, size=(L, L))
    state.out[9] = 77
    for k, (d, s) in enumerate([(9, 0), (0, 1), (0, 2), (1, 3)]):
        state.uop_dst[k], state.uop_src[k], state.uop_wgt[k] = d, s, 0
    execute(DepthwiseInsn(uop_begin=0, uop_end=4, iter_in=2, src_factor_in=4, dst_factor_in=2), 0, state, None)
    x = state.inp[:8, 0].astype(np.int64)
    t = state.wgt[0, :, :3].astype(np.int64)
    for row in range(2):
        for k in range(2):
            window = x[4 * row + k:4 * row + k + 3]         # inputs of micro-ops k .. k+2 of the row
            np.testing.assert_array_equal(state.acc[2 * row + k, 0], (window * t.T).sum(axis=0))
    assert (state.out[9] == 77).all() and not state.acc[4:].any()


def test_writes_closer_than_the_pipeline_allows_are_a_hazard():
    state = OnChipState(CFG)
    for k, d in enumerate([0, 0, 5, 5]):            # steps 2 and 3 both write entry 5
        state.uop_dst[k] = d
    with pytest.raises(HazardError, match="DEPTHWISE updates accumulator entry 5 at micro-op steps 2 and 3"):
        execute(DepthwiseInsn(uop_begin=0, uop_end=4), 0, state, None)


def test_reset_zeroes_what_the_writing_micro_ops_name(rng):
    state = OnChipState(CFG)
    state.acc[:8] = rng.integers(1, 100, size=(8, 1, L))
    for k, d in enumerate([3, 4, 5, 6]):
        state.uop_dst[k] = d
    execute(DepthwiseInsn(reset=True, uop_begin=0, uop_end=4), 0, state, None)
    assert not state.acc[5:7].any() and state.acc[3:5].all() and state.acc[:3].all() and state.acc[7].all()


def test_the_reference_interpreter_agrees_on_a_whole_stream(rng):
    """LOAD the image and weights, reset, DEPTHWISE, STORE: the reference's DRAM equals numpy."""
    from vdla.simulator import Simulator
    h, w = 3, 6
    image = rng.integers(-4, 5, size=(h + 2, w + 2, L)).astype(np.int8)     # sums fit in int8: OUT is exact
    taps = rng.integers(-3, 4, size=(L, 3, 3)).astype(np.int8)
    tiles = taps_as_tiles(taps, rng)
    uops, insn = conv_program(h, w)
    pixels, n = image.shape[0] * image.shape[1], h * w
    inp_at, wgt_at, uop_at, out_at, insn_at = 0x0, 0x1000, 0x2000, 0x3000, 0x4000
    dram = np.zeros(0x5000, dtype=np.uint8)
    dram[inp_at:inp_at + image.size] = image.reshape(-1).view(np.uint8)
    dram[wgt_at:wgt_at + tiles.size] = tiles.reshape(-1).view(np.uint8)
    words = CFG.isa.encode_uops(uops)
    dram[uop_at:uop_at + 4 * len(words)] = words.view(np.uint8)
    reset_uops = len(uops)
    dram[uop_at + 4 * reset_uops:uop_at + 4 * reset_uops + 4] = CFG.isa.encode_uops([Uop(0)]).view(np.uint8)
    stream = [MemInsn(memory_type=MemType.UOP, dram_base=uop_at // 4, y_size=1, x_size=len(uops) + 1,
                      x_stride=len(uops) + 1),
              MemInsn(memory_type=MemType.INP, dram_base=inp_at // L, y_size=1, x_size=pixels, x_stride=pixels),
              MemInsn(memory_type=MemType.WGT, dram_base=wgt_at // (L * L), y_size=1, x_size=3, x_stride=3,
                      push_next=True),
              GemmInsn(reset=True, uop_begin=reset_uops, uop_end=reset_uops + 1, iter_in=n, dst_factor_in=1,
                       pop_prev=True),
              insn.replace(push_next=True),
              MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=out_at // L, y_size=1, x_size=n,
                      x_stride=n, pop_prev=True, push_prev=True),
              FinishInsn(pop_next=True)]
    encoded = CFG.isa.encode_stream(stream)
    dram[insn_at:insn_at + encoded.size] = encoded
    expect = numpy_depthwise(image, taps, h, w).reshape(n, L)
    assert np.abs(expect).max() <= 127
    for run in (lambda d: reference_run(CFG, d, insn_at, len(stream)),
                lambda d: Simulator(CFG).run(d, insn_at, len(stream)).dram):
        out = run(dram.copy())[out_at:out_at + n * L].view(np.int8).reshape(n, L)
        np.testing.assert_array_equal(out, expect)


def test_the_reference_interpreter_counts_only_writes_for_hazards():
    from vdla.simulator.reference import ReferenceMachine
    machine = ReferenceMachine(CFG, np.zeros(64, dtype=np.uint8))
    machine.uop[:4] = [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 3, 0)]    # steps 0, 1 prime: no clash with step 2
    machine.depthwise(DepthwiseInsn(uop_begin=0, uop_end=4), 0)
    machine.uop[:4] = [(0, 0, 0), (0, 1, 0), (5, 2, 0), (5, 3, 0)]
    with pytest.raises(ReferenceHazardError, match="entry 5 at micro-op steps 2 and\n?\\s*3"):
        machine.depthwise(DepthwiseInsn(uop_begin=0, uop_end=4), 0)
