"""Padding reads are guarded: a kernel never touches memory outside its input, even where a
select discards the value. The input is placed against PROT_NONE pages, so any stray read
before its first or after its last element would crash the test process."""
import ctypes
import mmap

import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target

PAGE = mmap.PAGESIZE


class Fenced:
    """Three pages: inaccessible, data, inaccessible."""

    def __init__(self):
        self.mem = mmap.mmap(-1, 3 * PAGE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.mem))
        libc = ctypes.CDLL(None, use_errno=True)
        for off in (0, 2 * PAGE):
            if libc.mprotect(ctypes.c_void_p(self.base + off), PAGE, 0) != 0:
                pytest.skip("mprotect unavailable")

    def array(self, shape, dtype, at_end):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        assert n <= PAGE
        offset = PAGE + (PAGE - n if at_end else 0)
        return np.frombuffer(self.mem, dtype=dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)


@pytest.mark.parametrize("at_end", [False, True])
def test_pool_and_pad_do_not_read_outside_input(at_end, rng):
    fence = Fenced()
    x = te.placeholder((1, 2, 9, 11), "float32", "x")
    outs = [topi.max_pool2d(x, 3, 2, [1, 1, 1, 1]), topi.pad(x, [0, 0, 2, 3], [0, 0, 3, 2], -7.0)]
    xa = fence.array(x.shape, "float32", at_end)
    xa[...] = rng.standard_normal(x.shape).astype("float32")
    for y in outs:
        lib = build(topi.schedule_for([y], Target.host(threads=1)), [x, y], Target.host(threads=1), "k").load()
        out = np.zeros(y.shape, "float32")
        lib.run("k", [xa, out])
    np.testing.assert_array_equal(out, np.pad(xa, [(0, 0), (0, 0), (2, 3), (3, 2)], constant_values=-7.0))


def test_blocked_padding_uses_masked_vector_loads(rng):
    fence = Fenced()
    x = te.placeholder((1, 1, 6, 5, 16), "float32", "x")
    y = topi.pad(x, [0, 0, 1, 1, 0], [0, 0, 1, 1, 0], 0.0)
    t = Target.host(threads=1)
    kern = build(topi.schedule_for([y], t), [x, y], t, "k")
    assert "llvm.masked.load" in kern.llvm_ir
    xa = fence.array(x.shape, "float32", at_end=True)
    xa[...] = rng.standard_normal(x.shape).astype("float32")
    out = np.zeros(y.shape, "float32")
    kern.load().run("k", [xa, out])
    np.testing.assert_array_equal(out, np.pad(xa, [(0, 0), (0, 0), (1, 1), (1, 1), (0, 0)]))


def test_softmax_rows_read_their_last_partial_slice_guarded(rng):
    """Rows of 37 reduced in 16 lanes: the max's last slice overlaps the one before it, the
    exponentials' last vector reads through a mask, so a row at the very end of the input does
    not touch the page after it."""
    fence = Fenced()
    x = te.placeholder((3, 37), "float32", "x")
    y = topi.softmax(x, -1, lanes=16)
    t = Target.host(threads=1)
    kern = build(topi.schedule_for([y], t), [x, y], t, "k")
    xa = fence.array(x.shape, "float32", at_end=True)
    xa[...] = rng.standard_normal(x.shape).astype("float32") * 4
    out = np.zeros(y.shape, "float32")
    kern.load().run("k", [xa, out])
    e = np.exp(xa - xa.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_a_load_its_select_condition_made_is_not_masked(rng):
    """te.fmax accumulates as select(x[i] > m, x[i], m): the branch's load is the condition's,
    already read under the same guards, so it stays a plain vector load (a masked one per
    element made a softmax's max pass 40% slower); the input sits against a fenced page."""
    fence = Fenced()
    x = te.placeholder((4, 64), "float32", "x")
    k = te.reduce_axis((0, 4), "k")
    y = te.compute((4, 16), lambda i, j: te.fmax(x[i, k * 16 + j], axis=k), "y")
    t = Target.host(threads=1)
    s = create_schedule(y)
    s[y].reorder(s[y].op.axis[0], k, s[y].op.axis[1])
    s[y].vectorize(s[y].op.axis[1])
    kern = build(s, [x, y], t, "k")
    assert "llvm.masked.load" not in kern.llvm_ir
    xa = fence.array(x.shape, "float32", at_end=True)
    xa[...] = rng.standard_normal(x.shape).astype("float32")
    out = np.zeros(y.shape, "float32")
    kern.load().run("k", [xa, out])
    np.testing.assert_array_equal(out, xa.reshape(4, 4, 16).max(1))


def test_a_load_its_condition_made_under_a_select_of_its_own_stays_masked(rng):
    """te.fmax over slices padded by a select (x[k*16 + j] where k*16 + j < 37): the condition
    reads x only under that select, so the branch's load keeps its mask; rows at the very end
    of the input do not touch the page after it."""
    fence = Fenced()
    x = te.placeholder((3, 37), "float32", "x")
    k = te.reduce_axis((0, 3), "k")
    y = te.compute((3, 16), lambda i, j: te.fmax(te.if_then_else(k * 16 + j < 37, x[i, k * 16 + j], float("-inf")),
                                                  axis=k), "y")
    t = Target.host(threads=1)
    s = create_schedule(y)
    s[y].reorder(s[y].op.axis[0], k, s[y].op.axis[1])
    s[y].vectorize(s[y].op.axis[1])
    kern = build(s, [x, y], t, "k")
    assert "llvm.masked.load" in kern.llvm_ir
    xa = fence.array(x.shape, "float32", at_end=True)
    xa[...] = rng.standard_normal(x.shape).astype("float32")
    out = np.zeros(y.shape, "float32")
    kern.load().run("k", [xa, out])
    padded = np.pad(xa, [(0, 0), (0, 48 - 37)], constant_values=-np.inf)
    np.testing.assert_array_equal(out, padded.reshape(3, 3, 16).max(1))
