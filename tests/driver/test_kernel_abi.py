"""The CPU-kernel ABI (vdla.driver.kernel_abi): argument records round-trip and malformed ones
are named; thread counts are validated and capped at what the pool runs, on both sides (the
compiler's initial value, the loader's set_num_threads); the emitted objects carry the symbols
the contract names."""
import ctypes

import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target
from vdla.driver import cpu_kernel, kernel_abi


def test_names_stay_those_of_built_artifacts():
    """Artifacts and boards' shared objects already built use these names: a change breaks them."""
    assert (kernel_abi.PARALLEL_FOR, kernel_abi.PARALLEL_FOR_LEGACY) == ("vdla_parallel_for_chunks", "vdla_parallel_for")
    assert (kernel_abi.argspec_symbol("k0"), kernel_abi.num_threads_symbol("k0")) == ("k0__argspec", "k0__num_threads")
    assert kernel_abi.kernel_object_key("aarch64-linux-gnu", "k0") == "aarch64-linux-gnu/k0"
    assert kernel_abi.shared_object_key("aarch64-linux-gnu") == "aarch64-linux-gnu/kernels.so"
    assert kernel_abi.KERNEL_SIGNATURE == ("i32", ("ptr",)) and kernel_abi.NUM_THREADS_TYPE == "i32"


def test_argspec_round_trip():
    specs = [((2, 3), "float32"), ((), "int8"), ((0, 4), "bool"), ((7,), np.dtype("int32"))]
    raw = kernel_abi.encode_argspec(specs)
    assert raw.endswith(b"\0") and raw.count(b"\0") == 1
    assert kernel_abi.decode_argspec(raw[:-1]) == [((2, 3), "float32"), ((), "int8"), ((0, 4), "bool"),
                                                   ((7,), "int32")]
    assert kernel_abi.decode_argspec(raw[:-1].decode()) == kernel_abi.decode_argspec(raw[:-1])


@pytest.mark.parametrize("raw,match", [
    (b"[[[2, 3], 'float32']]", "not JSON"),
    (b'{"a": 1}', "expected a list of \\[shape, dtype\\], got dict"),
    (b'[[[2, 3]]]', "argument 0: expected \\[shape, dtype\\]"),
    (b'[[[2], "int8"], [[2, -1], "float32"]]', "argument 1: the shape \\[2, -1\\] is not a list of non-negative"),
    (b'[[[2.5], "int8"]]', "argument 0: the shape"),
    (b'[[[true], "int8"]]', "argument 0: the shape"),
    (b'[[[2], "int9"]]', "argument 0: 'int9' is not a dtype"),
])
def test_malformed_argspec_says_what_is_wrong(raw, match):
    with pytest.raises(ValueError, match=match):
        kernel_abi.decode_argspec(raw)


def test_thread_counts_are_positive_integers_capped_at_the_pool():
    assert kernel_abi.num_threads(1) == 1
    assert kernel_abi.num_threads(np.int64(3)) == 3
    assert kernel_abi.num_threads(kernel_abi.MAX_THREADS + 1) == kernel_abi.MAX_THREADS
    assert kernel_abi.num_threads(2**40) == kernel_abi.MAX_THREADS    # an int32 must not wrap
    for bad in (0, -2, 1.5, True, "4", None):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            kernel_abi.num_threads(bad)


def _double_kernel(threads):
    a = te.placeholder((64, 8), "float32", "a")
    b = te.compute(a.shape, lambda i, j: a[i, j] * 2.0, "b")
    s = create_schedule(b)
    s[b].parallel(s[b].op.axis[0])
    return build(s, [a, b], Target.host(threads=threads), "double")


def _threads_value(lib, name="double"):
    return ctypes.c_int32.from_address(lib.kernels[name][2]).value


def test_emitted_object_carries_the_contracts_symbols():
    kern = _double_kernel(threads=1000)
    for symbol in ("double", kernel_abi.argspec_symbol("double"), kernel_abi.num_threads_symbol("double")):
        assert symbol.encode() + b"\0" in kern.object_code
    lib = cpu_kernel.load(kern.object_code, ["double"])
    assert lib.arg_specs("double") == [((64, 8), "float32"), ((64, 8), "float32")]
    assert _threads_value(lib) == kernel_abi.MAX_THREADS    # the compiler stores the capped count


def test_set_num_threads_validates_and_caps():
    lib = cpu_kernel.load(_double_kernel(threads=2).object_code, ["double"])
    assert _threads_value(lib) == 2
    lib.set_num_threads(2**32 + 2)      # once stored as an int32: it wrapped to 2
    assert _threads_value(lib) == kernel_abi.MAX_THREADS
    for bad in (0, -1):                 # once stored as asked: 0 threads ran the loops serially
        with pytest.raises(cpu_kernel.CpuKernelError, match="threads must be a positive integer"):
            lib.set_num_threads(bad)
    assert _threads_value(lib) == kernel_abi.MAX_THREADS
    with pytest.raises(cpu_kernel.CpuKernelError, match="no kernel named 'other'"):
        lib.set_num_threads(2, name="other")
    lib.set_num_threads(3, name="double")
    assert _threads_value(lib) == 3
    x = np.arange(512, dtype="float32").reshape(64, 8)
    out = np.zeros_like(x)
    lib.run("double", [x, out])
    np.testing.assert_array_equal(out, 2 * x)


def test_aligned_copies_only_what_it_must():
    raw = kernel_abi.aligned(np.zeros(100, np.float32))
    assert raw.ctypes.data % kernel_abi.BUFFER_ALIGN == 0 and kernel_abi.aligned(raw) is raw
    odd = raw[3:]
    b = kernel_abi.aligned(odd)
    assert b.ctypes.data % kernel_abi.BUFFER_ALIGN == 0 and not np.shares_memory(b, odd)
    np.testing.assert_array_equal(b, odd)
    assert kernel_abi.aligned(np.float32(2.5)).shape == ()
    grid = raw[4:4 + 96].reshape(8, 12)         # misaligned; its transpose not contiguous either
    grid[...] = np.arange(96).reshape(8, 12)
    for view in (grid, grid.T):
        copy = kernel_abi.aligned(view)
        assert copy.ctypes.data % kernel_abi.BUFFER_ALIGN == 0 and copy.flags.c_contiguous
        np.testing.assert_array_equal(copy, view)
    grid.flags.writeable = False                # a read-only parameter's copy stays read-only
    assert not kernel_abi.aligned(grid).flags.writeable
