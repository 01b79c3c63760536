"""The timing-free race check: hand programs are race-free, dropped tokens are caught."""
import numpy as np
import pytest

from vdla.driver.programs import Requant, run_conv2d, run_matmul
from vdla.driver.runtime import CommandQueue, DependenceError, Stage, UopKernel
from vdla.hw import MemType, Uop


def _int8(rng, *shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_hand_programs_are_race_free(device, rng, virtual_threads):
    cq = CommandQueue(device)
    run_conv2d(device, _int8(rng, 2, 32, 10, 10), _int8(rng, 48, 32, 3, 3), virtual_threads=virtual_threads,
               tile_h=3, tile_oc=1, requant=Requant(shift=9), cq=cq)
    cq.check_races(cq.last_stream)
    run_matmul(device, _int8(rng, 40, 64), _int8(rng, 64, 48), tile_m=8, tile_n=2,
               virtual_threads=virtual_threads, cq=cq)
    cq.check_races(cq.last_stream)


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


class _NoComputeToLoadTokens(CommandQueue):
    """A broken schedule: loads never wait for compute to release an SRAM slot."""

    def dep_push(self, src, dst):
        if (src, dst) != (Stage.COMPUTE, Stage.LOAD):
            super().dep_push(src, dst)

    def dep_pop(self, src, dst):
        if (src, dst) != (Stage.COMPUTE, Stage.LOAD):
            super().dep_pop(src, dst)


def test_double_buffering_without_its_tokens_is_caught(device, rng):
    cq = _NoComputeToLoadTokens(device)
    with pytest.raises(DependenceError, match="data races between modules"):
        run_conv2d(device, _int8(rng, 1, 16, 12, 8), _int8(rng, 16, 16, 3, 3), virtual_threads=2,
                   tile_h=2, cq=cq, check_races=True)
