"""Every GPU test kernel (tests/gpu_kernels.py) run by the CPU emulation equals numpy, with the
threads of a block in either order; and the emulation catches a missing barrier."""
import numpy as np
import pytest

from gpu_kernels import CASES, fc_batch1, matmul_shared
from vdla.compiler.codegen.nvptx.emulate import build_emulation, emulate, emulation_func
from vdla.compiler.schedule.gpu import lower_gpu
from vdla.compiler.tir import gpu as G
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import transform


@pytest.mark.parametrize("order", ["forward", "reverse"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_kernel_matches_numpy(name, order):
    case = CASES[name]()
    got = emulate(case.schedule, case.args, case.inputs, name, thread_order=order)
    for g, want in zip(got, case.expected):
        if case.rtol == 0:
            np.testing.assert_array_equal(g, want)
        else:
            np.testing.assert_allclose(g, want, rtol=case.rtol, atol=case.rtol * max(1.0, np.abs(want).max()))


def _without_barriers(gf):
    def post(n):
        return S.no_op() if G.is_barrier(n) else None
    return gf.map_kernels(lambda k: k.with_func(k.func.with_body(transform(k.func.body, post))))


def test_missing_barrier_gives_a_wrong_result():
    """Threads read the shared tile before the threads after them have written their part."""
    case = matmul_shared()
    gf = lower_gpu(case.schedule, case.args, "mm")
    out = np.zeros_like(case.expected[0])
    build_emulation(_without_barriers(gf))(*case.inputs, out)
    assert not np.allclose(out, case.expected[0], rtol=1e-2, atol=1e-2)
    build_emulation(gf)(*case.inputs, out)
    np.testing.assert_allclose(out, case.expected[0], rtol=1e-4, atol=1e-4)


def test_a_cross_thread_reduction_without_its_barriers_gives_a_wrong_result():
    """The tree's threads read their partners' partials before the partners have written them."""
    case = fc_batch1()
    gf = lower_gpu(case.schedule, case.args, "fc")
    out = np.zeros_like(case.expected[0])
    build_emulation(_without_barriers(gf))(*case.inputs, out)
    assert not np.allclose(out, case.expected[0], rtol=1e-2, atol=1e-2)
    build_emulation(gf)(*case.inputs, out)
    np.testing.assert_allclose(out, case.expected[0], rtol=1e-4, atol=1e-4)


def test_threads_are_cut_at_barriers():
    """The emulation of the shared matmul: the accumulators' init, then per K step one thread
    loop for both fetches (they share their barriers) and one for the update, inside the step
    loop; the shared tiles are allocated once per block."""
    case = matmul_shared()
    text = repr(emulation_func(lower_gpu(case.schedule, case.args, "mm")))
    assert "gpu.syncthreads" not in text
    step = text.index("for k.o in range")
    assert text.count("for threadIdx.x in range(16)") == 3
    assert text.index("A.shared = alloc") < step and text.index("B.shared = alloc") < step
    assert "scope='shared'" not in text
