"""NVPTX code generation: what the PTX of a kernel holds (entry, global pointers, special
registers, static shared memory, barriers, the approximate math instructions), what a launcher
is told, and the errors instead of LLVM aborting the process."""
import pytest

from gpu_kernels import elementwise_math, matmul_shared, softmax_rows
from vdla.compiler import te
from vdla.compiler.codegen import CodegenError
from vdla.compiler.codegen.nvptx.build import build_cuda
from vdla.compiler.codegen.nvptx.target import CudaTarget
from vdla.compiler.target import TargetError
from vdla.driver import gpu_limits as limits


def test_shared_matmul_ptx():
    case = matmul_shared()
    m = build_cuda(case.schedule, case.args, "mm", check=True)
    ptx = m.ptx
    assert ".target sm_80" in ptx and ".address_size 64" in ptx
    assert ".visible .entry mm__C(" in ptx
    assert ptx.count(".param .u64 .ptr .global") == 3
    assert ".shared .align 16 .b8 mm__C__A_shared[512]" in ptx      # 16 x 8 float32
    assert ".shared .align 16 .b8 mm__C__B_shared[512]" in ptx
    assert "%tid.x" in ptx and "%tid.y" in ptx and "%ctaid.x" in ptx and "%ctaid.y" in ptx
    assert "bar.sync \t0;" in ptx
    (k,) = m.kernels
    assert (k.kernel, k.grid, k.block, k.buffers, k.shared_bytes) == ("mm__C", (4, 5, 1), (16, 16, 1), [0, 1, 2], 1024)
    assert [p[0] for p in m.params] == ["A", "B", "C"] and list(m.outputs) == [2]


def test_sm_90_ptx():
    case = matmul_shared()
    assert ".target sm_90" in build_cuda(case.schedule, case.args, "mm", arch="sm_90").ptx


def test_math_is_the_approximate_instructions_and_calls_nothing():
    case = elementwise_math()
    ptx = build_cuda(case.schedule, case.args, "math").ptx
    assert "ex2.approx.f32" in ptx and "lg2.approx.f32" in ptx
    assert "call" not in ptx and ".extern" not in ptx


def test_softmax_is_three_entries_with_a_temporary_between():
    case = softmax_rows()
    m = build_cuda(case.schedule, case.args, "sm")
    assert [k.kernel for k in m.kernels] == ["sm__softmax_max", "sm__softmax_sum", "sm__softmax"]
    assert all(f".visible .entry {k.kernel}(" in m.ptx for k in m.kernels)
    assert [t[0] for t in m.temporaries] == ["softmax_max", "softmax_sum"]
    # softmax_sum reads x and the max (buffers 0 and 2), writes the sum (3)
    assert m.kernels[1].buffers == [0, 2, 3]


def _unary(fn, dtype):
    a = te.placeholder((64,), dtype, "a")
    b = te.compute((64,), lambda i: fn(a[i]), "b")
    from vdla.compiler.schedule import create_schedule
    s = create_schedule(b)
    s[b].bind(s[b].op.axis[0], "threadIdx.x")
    return s, [a, b]


def test_float64_exp_is_a_codegen_error_not_an_llvm_abort():
    s, args = _unary(te.exp, "float64")
    with pytest.raises(CodegenError, match="kernel f64__b: exp on float64; the GPU path computes exp in float32 only"):
        build_cuda(s, args, "f64")


def test_a_math_function_without_gpu_lowering_is_named():
    s, args = _unary(lambda v: te.call("cbrt", v), "float32")
    with pytest.raises(CodegenError, match="kernel cbrt__b: math function cbrt has no GPU lowering; the GPU path "
                                           "computes ceil, erf, exp"):
        build_cuda(s, args, "cbrt")


def test_only_known_architectures():
    with pytest.raises(TargetError, match="CUDA architecture 'sm_61' is not one vdla emits PTX for; known: "
                                          + ", ".join(limits.ARCHS)):
        CudaTarget("sm_61")
