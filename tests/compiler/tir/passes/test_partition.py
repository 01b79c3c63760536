"""partition_loops (vdla.compiler.tir.passes.partition): a split's tail guard leaves the main
loop (a clean prefix); a padded copy's bounds on a loop's variable split it into its two ends,
where the simplifier folds the selects to the pad value, and a middle that loads without a
condition; a concatenation's parallel loop splits into one loop per input. Every kernel still
computes what numpy does."""
import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.build import lower
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target
from vdla.compiler.topi.cpu_knobs import vector_factor
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit


def _loops(func):
    found = []
    visit(func.body, lambda n: found.append(n) if isinstance(n, S.For) else None)
    return found


def _conditions_on(func, name):
    """Select conditions of the lowered function that mention a variable called `name`."""
    from vdla.compiler.tir.functor import free_vars
    found = []
    visit(func.body, lambda n: found.append(n.cond) if isinstance(n, E.Select)
          and any(v.name == name for v in free_vars(n.cond)) else None)
    return found


def test_partition_removes_tail_guards_from_the_main_loop(rng):
    """A 41-wide axis split by 16: two guard-free (vectorized) iterations, one guarded tail;
    results unchanged."""
    x = te.placeholder((3, 41), "float32", "x")
    y = te.compute((3, 41), lambda i, j: x[i, j] * 2.0, "y")
    s = create_schedule(y)
    jo, ji = s[y].split(s[y].op.axis[1], 16)
    s[y].vectorize(ji)
    text = repr(lower(s, [x, y], "f", check=True))
    assert "for j.o in range(2):" in text                       # the clean part
    assert "ramp(" in text                                       # ... vectorized
    assert text.count("if ") == 1 and "((j.i + 32) < 41)" in text   # only the tail checks
    xa = rng.standard_normal(x.shape).astype("float32")
    out = np.zeros_like(xa)
    build(s, [x, y], name="f").load().run("f", [xa, out])
    np.testing.assert_array_equal(out, xa * 2)


# (shape, pads before, pads after) of blocked NCHWc images, the last axis 16 vector lanes, with
# enough rows (PARALLEL_ITERATIONS) for the parallel loop to leave the row axis i3 its own loop
PADS = [((1, 4, 56, 56, 16), (0, 0, 1, 1, 0), (0, 0, 1, 1, 0)),      # a 3x3 convolution's
        ((1, 2, 40, 5, 16), (0, 0, 3, 0, 0), (0, 0, 0, 4, 0)),        # one side only, wider than the data
        ((2, 1, 40, 2, 16), (0, 0, 2, 3, 0), (0, 0, 2, 3, 0)),        # more pad than data
        ((1, 8, 9, 9, 16), (0, 0, 1, 0, 0), (0, 0, 1, 0, 0))]         # rows not padded: one loop


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("shape,before,after", PADS)
def test_a_padded_copy_splits_its_row_into_ends_and_a_middle_without_conditions(shape, before, after, dtype, rng):
    """The default CPU schedule of topi.pad: rows are loops of their own (the parallel loop
    fuses the outer axes only; a block of several vectors is unrolled), each split at the pad's
    bounds; the middle part selects on no bound of the row's own variable, the ends none at all
    (they store the pad value); the result is numpy's np.pad."""
    x = te.placeholder(shape, dtype, "x")
    y = topi.pad(x, list(before), list(after), value=0)
    target = Target.host(threads=2)
    s = topi.schedule_for([y], target)
    func = lower(s, [x, y], "pad", check=True)
    row = [loop for loop in _loops(func) if loop.var.name == "i3"]
    w = shape[3]
    # the middle, and the ends of more than one element (one of one element folds into a store)
    parts = [(0, before[3]), (before[3], before[3] + w), (before[3] + w, before[3] + w + after[3])]
    assert [(loop.min.value, loop.min.value + loop.extent.value) for loop in row] == \
        [p for p in parts if p[1] - p[0] > 1 or p == parts[1]]
    assert not _conditions_on(func, "i3")
    # a store per part and vector of the 16-lane block (two of 8 lanes on AVX2, unrolled)
    vectors = shape[-1] // vector_factor(shape[-1], target.vector_lanes(np.dtype(dtype).itemsize * 8))
    assert repr(func).count("pad[") == sum(p[1] > p[0] for p in parts) * vectors
    xa = (rng.standard_normal(shape) * 50).astype(dtype)
    out = np.full(y.shape, 7, dtype)
    build(s, [x, y], target, "pad").load().run("pad", [xa, out])
    np.testing.assert_array_equal(out, np.pad(xa, list(zip(before, after))))


def test_a_vector_that_straddles_a_select_point_is_a_part_of_its_own(rng):
    """A row of 197 padded to 208 with zeros, in vectors of 8: iterations 0-23 hold only data,
    24 straddles the end (5 data lanes), 25 only padding. Three parts: the first selects
    nothing, the last stores zeros, only the middle one keeps its select; results as numpy's."""
    x = te.placeholder((3, 197), "float32", "x")
    y = te.compute((3, 208), lambda i, j: te.if_then_else(j < 197, x[i, j] * 2.0, E.Const(0.0, "float32")), "y")
    s = create_schedule(y)
    jo, ji = s[y].split(s[y].op.axis[1], 8)
    s[y].vectorize(ji)
    func = lower(s, [x, y], "f", check=True)
    parts = [loop for loop in _loops(func) if loop.var.name == "j.o"]
    assert [(loop.min.value, loop.extent.value) for loop in parts] == [(0, 24)]   # 24 and 25: one store each
    selects = []
    visit(func.body, lambda n: selects.append(n) if isinstance(n, E.Select) else None)
    assert len(selects) == 1 and "ramp(192, 1, 8)" in repr(selects[0].cond)
    xa = rng.standard_normal(x.shape).astype("float32")
    out = np.full(y.shape, 7, "float32")
    build(s, [x, y], name="f").load().run("f", [xa, out])
    np.testing.assert_array_equal(out, np.pad(xa * 2, [(0, 0), (0, 11)]))


def test_a_condition_on_two_variables_does_not_split_either_loop(rng):
    """y[i, j] = x[i, j] where i + j < 5, else 0: the bound is on neither variable alone, so no
    loop is split (each part would still need the condition); results equal numpy's."""
    x = te.placeholder((8, 8), "float32", "x")
    y = te.compute((8, 8), lambda i, j: te.if_then_else(i + j < 5, x[i, j], E.Const(0.0, "float32")), "y")
    s = create_schedule(y)
    func = lower(s, [x, y], "f", check=True)
    assert sorted((loop.var.name, loop.extent.value) for loop in _loops(func)) == [("i", 8), ("j", 8)]
    xa = rng.standard_normal(x.shape).astype("float32")
    out = np.zeros_like(xa)
    build(s, [x, y], name="f").load().run("f", [xa, out])
    i, j = np.indices(xa.shape)
    np.testing.assert_array_equal(out, np.where(i + j < 5, xa, 0))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_concatenation_copies_each_input_by_a_loop_of_its_own(threads, rng):
    """topi.concat of three inputs along the channels of [1, C, H, W]: the parallel loop over the
    channels is split where its selects switch input, so no select is left, one loop a part;
    the result is numpy's concatenation."""
    xs = [te.placeholder((1, c, 6, 16), "float32", f"x{k}") for k, c in enumerate((64, 32, 16))]
    y = topi.concat(xs, axis=1)
    target = Target.host(threads=threads)
    s = topi.schedule_for([y], target)
    func = lower(s, [*xs, y], "cat", check=True)
    selects = []
    visit(func.body, lambda n: selects.append(n) if isinstance(n, E.Select) else None)
    parallel = [loop for loop in _loops(func) if loop.kind is S.ForKind.PARALLEL]
    assert not selects
    assert [(loop.min.value, loop.extent.value) for loop in parallel] == [(0, 64), (64, 32), (96, 16)]
    arrays = [rng.standard_normal(x.shape).astype("float32") for x in xs]
    out = np.zeros(y.shape, "float32")
    build(s, [*xs, y], target, "cat").load().run("cat", [*arrays, out])
    np.testing.assert_array_equal(out, np.concatenate(arrays, axis=1))
