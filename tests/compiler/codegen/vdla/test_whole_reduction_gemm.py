"""A GEMM stage whose whole reduction lies inside the tensorized element (no init nest around
it) is lowered to a reset and an accumulating GEMM; it used to become a reset alone, so the
stage computed zeros."""
import numpy as np

from vdla.compiler import te
from vdla.compiler.build import build_vdla
from vdla.compiler.topi.vdla import PoolKnobs
from vdla.compiler.topi.vdla.schedule import schedule_tile_chain
from vdla.compiler.topi.vdla.vta_mode import gemm_into_acc
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import run_program
from vdla.hw import load_config

CFG = load_config("pynq")


def test_whole_reduction_gemm_accumulates_onto_a_reset(rng):
    B, L = CFG.batch, CFG.block
    shape = (1, 2, 3, 4, B, L)
    x = te.placeholder(shape, "int8", "x")
    w = te.placeholder((L, L), "int8", "w")
    acc = gemm_into_acc(x, w, shape, "acc")
    out = te.compute(shape, lambda *i: te.cast("int8", acc(*i)), name="y")
    s = schedule_tile_chain(CFG, out, [], [], PoolKnobs(1, 3, 4, 2), gemm_stages=[acc])
    prog = build_vdla(s, [x, w, out], CFG, "gemm_whole")
    kernels = [k.describe().split()[0] + (" reset" if k.reset else "") for k in prog.kernels]
    assert kernels.count("GEMM reset") == kernels.count("GEMM") == 2        # per virtual thread
    xs = rng.integers(-128, 128, shape, dtype=np.int8)
    ws = rng.integers(-128, 128, (L, L), dtype=np.int8)
    raw, _ = run_program(SimulatorDevice(CFG, dram_bytes=1 << 22), prog, [xs, ws], check_races=True)
    want = np.einsum("...k,lk->...l", xs.astype(np.int64), ws.astype(np.int64)).astype(np.int8)
    np.testing.assert_array_equal(raw.view(np.int8).reshape(shape), want)
