"""LLVM code generation: cross-target objects (ELF machine), the kernel ABI through the
deploy-side loader, its argument checks, threads, and integer semantics."""
import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.codegen import elf_machine
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target
from vdla.driver import cpu_kernel, kernel_abi


def conv_group(c=2, hw=10, blk=8):
    x = te.placeholder((1, c, hw, hw, blk), "float32", "x")
    w = te.placeholder((c, c, 3, 3, blk, blk), "float32", "w")
    y = topi.relu(topi.conv2d_nchwc(x, w, strides=1, pads=1))
    return x, w, y


@pytest.mark.parametrize("triple,machine,elf_class", [
    ("armv7a-linux-gnueabihf", "arm", 1),      # PYNQ-Z1/Z2: ELF32
    ("aarch64-linux-gnu", "aarch64", 2),       # Ultra96, ZCU104: ELF64
])
def test_cross_target_conv_object(triple, machine, elf_class):
    x, w, y = conv_group()
    target = Target(triple, threads=1)
    kern = build(topi.schedule_for([y], target), [x, w, y], target, "conv")
    assert kern.target == triple
    assert elf_machine(kern.object_code) == machine
    assert kern.object_code[4] == elf_class
    assert kernel_abi.PARALLEL_FOR not in kern.llvm_ir    # threads=1: no runtime symbols needed
    assert kern.arg_specs == [((1, 2, 10, 10, 8), "float32"), ((2, 2, 3, 3, 8, 8), "float32"),
                              ((1, 2, 10, 10, 8), "float32")]


@pytest.mark.parametrize("triple,cores", [("armv7a-linux-gnueabihf", 2), ("aarch64-linux-gnu", 4),
                                          ("x86_64-unknown-linux-gnu", 1)])
def test_a_board_triple_uses_the_boards_cores_unless_told(triple, cores):
    """The Zynq-7000's two Cortex-A9 cores, the Zynq UltraScale+'s four Cortex-A53; any other
    triple one thread."""
    assert Target(triple).threads == cores
    assert Target(triple, threads=1).threads == 1


def test_host_object_is_x86_64_and_uses_threads():
    x, w, y = conv_group(4, 28, 16)    # enough work to be worth a second thread
    target = Target.host(threads=2)
    kern = build(topi.schedule_for([y], target), [x, w, y], target, "conv")
    assert elf_machine(kern.object_code) == "x86_64"
    assert kernel_abi.PARALLEL_FOR in kern.llvm_ir     # parallel loops go to the runtime's pool
    g = conv_group(1, 3)   # one 8-channel block of a 3x3 image
    small = build(topi.schedule_for([g[2]], target), list(g), target, "small")
    assert kernel_abi.PARALLEL_FOR not in small.llvm_ir  # too little work: runs on the calling thread


def _add_kernel(shape=(5, 7), dtype="float32", threads=2):
    a = te.placeholder(shape, dtype, "a")
    b = te.compute(shape, lambda i, j: a[i, j] + a[i, j], "b")
    s = create_schedule(b)
    s[b].parallel(s[b].op.axis[0])
    return build(s, [a, b], Target.host(threads=threads), "double")


def test_loader_reads_embedded_specs_and_checks_arguments():
    kern = _add_kernel()
    lib = cpu_kernel.load(kern.object_code, ["double"])       # specs come from the object
    assert lib.arg_specs("double") == [((5, 7), "float32"), ((5, 7), "float32")]
    x = np.arange(35, dtype="float32").reshape(5, 7)
    out = np.zeros_like(x)
    for n in (1, 2, 3):
        lib.set_num_threads(n)
        out[:] = 0
        lib.run("double", [x, out])
        np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(cpu_kernel.CpuKernelError, match=r"argument 0: expected float32\[5, 7\], got float64\[5, 7\]"):
        lib.run("double", [x.astype("float64"), out])
    with pytest.raises(cpu_kernel.CpuKernelError, match=r"argument 1: expected float32\[5, 7\], got float32\[7, 5\]"):
        lib.run("double", [x, out.reshape(7, 5)])
    with pytest.raises(cpu_kernel.CpuKernelError, match="not C-contiguous"):
        lib.run("double", [np.asfortranarray(x), out])
    with pytest.raises(cpu_kernel.CpuKernelError, match="takes 2 buffers, got 1"):
        lib.run("double", [x])
    with pytest.raises(cpu_kernel.CpuKernelError, match="no kernel named 'nope'"):
        lib.run("nope", [x, out])
    with pytest.raises(cpu_kernel.CpuKernelError, match="does not export a kernel named 'other'"):
        cpu_kernel.load(kern.object_code, ["other"])


def test_integer_semantics_floor_division_and_wrapping():
    a = te.placeholder((16,), "int32", "a")
    q = te.compute((16,), lambda i: a[i] // 3 + a[i] % 5 * 100, "q")
    n = te.placeholder((16,), "int8", "n")
    w = te.compute((16,), lambda i: n[i] * te.const(3, "int8"), "w")   # int8 wraps
    s = create_schedule([q, w])
    lib = build(s, [a, n, q, w], Target.host(), "ints").load()
    av = np.arange(-8, 8, dtype="int32")
    nv = np.arange(-128, 128, 16, dtype="int8")
    qo, wo = np.zeros(16, "int32"), np.zeros(16, "int8")
    lib.run("ints", [av, nv, qo, wo])
    np.testing.assert_array_equal(qo, av // 3 + av % 5 * 100)
    np.testing.assert_array_equal(wo, (nv.astype(np.int32) * 3).astype(np.int8))


def test_scalar_output_and_zero_dim_shapes():
    a = te.placeholder((6,), "float32", "a")
    s_out = topi.reduce_sum(a)
    lib = build(topi.schedule_for([s_out], Target.host()), [a, s_out], Target.host(), "tot").load()
    out = np.zeros(s_out.shape, "float32")
    lib.run("tot", [np.arange(6, dtype="float32"), out])
    assert out.tolist() == [15.0]


@pytest.mark.parametrize("rows, threads", [(197, 1), (197, 2), (5000, 1)])
def test_small_global_temporaries_are_stack_arrays_large_ones_malloced(rows, threads):
    """A softmax keeps each row's exponentials in a "global" temporary allocated in its row loop:
    a stack array of the function (per thread where the loop runs in parallel) up to
    STACK_TEMPORARY_BYTES, no malloc and free per row; a larger row's is still malloc'ed.
    Results equal numpy's either way."""
    from vdla.compiler.codegen.llvm_codegen import STACK_TEMPORARY_BYTES
    target = Target.host(threads=threads)
    x = te.placeholder((4, rows), "float32", "x")
    y = topi.softmax(x, axis=-1, lanes=target.vector_lanes(32))
    kern = build(topi.schedule_for([y], target), [x, y], target, "softmax")
    assert ("@malloc" in kern.llvm_ir) == (rows * 4 > STACK_TEMPORARY_BYTES)
    xa = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
    out = np.zeros_like(xa)
    kern.load().run("softmax", [xa, out])
    e = np.exp(xa - xa.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
