"""The timing-free race check: compiled kernels are race-free, dropped tokens are caught."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, DenseKnobs, Epilogue, compile_conv2d
from vdla.driver.runtime import CommandQueue, DependenceError, KernelProgram, Stage, UopKernel
from vdla.hw import MemType, Uop

from vdla_kernels import run_conv, run_dense


def _int8(rng, *shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_compiled_kernels_are_race_free(device, rng, virtual_threads):
    run_conv(device, _int8(rng, 1, 32, 10, 10), _int8(rng, 48, 32, 3, 3), ep=Epilogue(shift=9),
             knobs=ConvKnobs(1, 3, 10, 1, virtual_threads, "h"), check_races=True)
    run_dense(device, _int8(rng, 40, 64), _int8(rng, 64, 64), knobs=DenseKnobs(8, 1, 2, virtual_threads),
              check_races=True)


def test_reloading_an_input_without_waiting_for_compute_is_a_race(device):
    x = device.alloc(64, align=16)
    cq = CommandQueue(device)
    gemm = UopKernel.gemm([Uop(0, 0, 0), Uop(1, 1, 0)])
    for _ in range(2):
        cq.load_2d(MemType.INP, 0, x, 0, 2)          # the second load overwrites what GEMM 1 reads
        cq.dep_push(Stage.LOAD, Stage.COMPUTE)
        cq.dep_pop(Stage.LOAD, Stage.COMPUTE)
        cq.push_gemm(gemm)
    with pytest.raises(DependenceError, match=r"instructions 2 \(GEMM.*\) and 3 \(LOAD  INP.*\) both touch "
                                              r"inp SRAM \[0, 2\)"):
        cq.synchronize(check_races=True)


def test_double_buffering_without_its_tokens_is_caught(device):
    """A compiled kernel with its compute->load tokens removed: loads no longer wait for
    compute to release an SRAM slot, and the race check says so."""
    prog, _ = compile_conv2d(device.config, ConvLayer(1, 1, 12, 8, 1), Epilogue(shift=8),
                             ConvKnobs(1, 2, 8, 0, 2, "h"))
    doc = prog.to_dict()
    doc["calls"] = [c for c in doc["calls"] if c[0] not in ("push", "pop") or tuple(c[1:]) != (1, 0)]
    broken = KernelProgram.from_dict(doc)
    bufs = [device.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    cq = CommandQueue(device)
    broken.replay(cq, bufs)
    with pytest.raises(DependenceError, match="data races between modules"):
        cq.synchronize(check_races=True)
