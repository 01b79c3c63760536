"""Reductions across the threads of a block (a reduction axis bound to threadIdx.*): the tree's
levels, the lowered kernel's shape (shared partials, a barrier per level, the first thread's
store), the checks that say what a cross-thread schedule cannot do, and where the default GPU
schedules choose it. Results against numpy: tests/gpu_kernels.py (emulation and ptxas)."""
import pytest

from gpu_kernels import min_epilogue_across_threads, row_max_across_threads
from vdla.compiler import te, topi
from vdla.compiler.schedule import ScheduleError, create_schedule
from vdla.compiler.schedule import thread_binding
from vdla.compiler.schedule.cross_thread import levels
from vdla.compiler.schedule.gpu import lower_gpu
from vdla.compiler.tir import gpu as G
from vdla.compiler.tir.functor import visit
from vdla.compiler.topi.gpu import cross_thread, schedule_for_gpu


def row_sum(rows=4, n=100, combiner=te.sum):
    x = te.placeholder((rows, n), "float32", "x")
    r = te.reduce_axis((0, n), "k")
    y = te.compute((rows,), lambda i: combiner(x[i, r.var], axis=r), "y")
    return x, y, create_schedule(y)


def count(stmt, pred):
    found = []
    visit(stmt, lambda n: found.append(n) if pred(n) else None)
    return len(found)


# -- the tree ------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2, 5, 32, 48, 100, 256])
def test_the_levels_combine_every_partial_once(threads):
    red = [{t} for t in range(threads)]        # the partials each slot holds
    for half, active in levels(threads):
        for t in range(active):
            assert not red[t] & red[t + half]
            red[t] = red[t] | red[t + half]
    assert red[0] == set(range(threads))


def test_levels_of_a_power_of_two_halve_all_the_way():
    assert levels(8) == [(4, 4), (2, 2), (1, 1)]
    assert levels(6) == [(4, 2), (2, 2), (1, 1)]
    assert levels(1) == []


# -- the lowered kernel --------------------------------------------------------------------

def test_a_bound_reduction_lowers_to_shared_partials_a_barrier_per_level_and_thread_0s_store():
    x, y, s = row_sum(n=100)
    _, kt = s[y].split(s[y].op.reduce_axis[0], 32)
    s[y].bind(s[y].op.axis[0], "blockIdx.x")
    s[y].bind(kt, "threadIdx.x")
    (k,) = lower_gpu(s, [x, y], "rs", check=True).kernels
    assert k.block == (32, 1, 1) and k.grid == (4, 1, 1)
    (red,) = k.allocations("shared")
    assert red.name == "y.red" and red.shape == (32,)
    assert count(k.body, G.is_barrier) == 1 + len(levels(32))   # after the partials, after each level
    text = repr(k.func)
    assert "if (threadIdx.x == 0):\n        y[blockIdx.x] = y.red[0]" in text
    assert "for k.o in range(4)" in text                         # each thread's slice: k.o * 32 + threadIdx.x


def test_a_reduction_in_a_loop_waits_before_it_overwrites_the_partials():
    case = row_max_across_threads()
    (k,) = lower_gpu(case.schedule, case.args, "rm").kernels
    text = repr(k.func)
    loop = text.index("for i.i in range(3)")
    first_write = text.index("rowmax.red[threadIdx.x] = rowmax.partial[0]")
    assert text.rindex("gpu.syncthreads()", loop, first_write) > text.index("for k.o", loop)


def test_partials_have_a_row_per_output_of_the_block():
    case = min_epilogue_across_threads()
    (k,) = lower_gpu(case.schedule, case.args, "me").kernels
    assert k.block == (64, 6, 1)
    assert [(b.name, b.shape) for b in k.allocations("shared")] == [("m.red", (6, 64))]
    assert "if (threadIdx.x == 0):\n        y[threadIdx.y] = ((m[0] * 2.0) + 1.0)" in repr(k.func)


# -- checks --------------------------------------------------------------------------------

def test_an_epilogue_every_thread_would_store_is_a_race():
    """min_epilogue_across_threads without store_by_first_thread: 64 threads, one element each."""
    a = te.placeholder((6, 128), "float32", "a")
    r = te.reduce_axis((0, 128), "k")
    m = te.compute((6,), lambda i: te.sum(a[i, r.var], axis=r), "m")
    y = te.compute((6,), lambda i: m[i] + 1.0, "y")
    s = create_schedule(y)
    s[y].bind(s[y].op.axis[0], "blockIdx.x")
    s[m].set_scope("local")
    s[m].compute_at(s[y], s[y].op.axis[0])
    _, kt = s[m].split(s[m].op.reduce_axis[0], 64)
    s[m].bind(kt, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"the store to y\[blockIdx.x\] does not depend on threadIdx.x \(extent "
                                            r"64\), so all 64 threads of a block along it would write the same"):
        lower_gpu(s, [a, y], "race")
    s[y].store_by_first_thread("threadIdx.x")
    assert lower_gpu(s, [a, y], "race", check=True).kernels[0].block == (64, 1, 1)


def test_a_store_predicate_needs_its_tag_in_the_kernel():
    x, y, s = row_sum()
    s[y].bind(s[y].op.axis[0], "blockIdx.x")
    s[y].store_by_first_thread("threadIdx.y")
    with pytest.raises(ScheduleError, match=r"kernel p__y: a stage stores from the first thread along threadIdx.y "
                                            r"\(store_by_first_thread\), but no loop of the kernel is bound to "
                                            r"threadIdx.y"):
        lower_gpu(s, [x, y], "p")


def test_store_by_first_thread_refuses_a_block_tag_and_the_stages_own_thread_axis():
    x, y, s = row_sum()
    with pytest.raises(ScheduleError, match="'blockIdx.x' is not a thread dimension"):
        s[y].store_by_first_thread("blockIdx.x")
    s[y].bind(s[y].op.axis[0], "threadIdx.x")
    with pytest.raises(ScheduleError, match="its axis i is bound to threadIdx.x, so its threads along threadIdx.x "
                                            "store different elements"):
        s[y].store_by_first_thread("threadIdx.x")


def test_a_reduction_whose_combiner_is_not_commutative_is_refused(monkeypatch):
    monkeypatch.setattr(thread_binding, "COMMUTATIVE_COMBINERS", ("sum",))
    x, y, s = row_sum(combiner=te.max)
    with pytest.raises(ScheduleError, match=r"bind on stage y: its reduction 'max' is not one of \('sum',\), whose "
                                            r"partials a tree over the threads may combine in any order"):
        s[y].bind(s[y].op.reduce_axis[0], "threadIdx.x")


def test_two_bound_reduction_axes_are_refused():
    a = te.placeholder((4, 8, 8), "float32", "a")
    r1, r2 = te.reduce_axis((0, 8), "r1"), te.reduce_axis((0, 8), "r2")
    y = te.compute((4,), lambda i: te.sum(a[i, r1.var, r2.var], axis=[r1, r2]), "y")
    s = create_schedule(y)
    s[y].bind(r1, "threadIdx.x")
    with pytest.raises(ScheduleError, match="reduction axis r1 is already bound to threadIdx.x; a stage reduces "
                                            "across the threads of one launch dimension only: fuse"):
        s[y].bind(r2, "threadIdx.y")


def test_a_thread_count_over_the_limit_is_refused():
    x, y, s = row_sum(n=4096)
    _, kt = s[y].split(s[y].op.reduce_axis[0], 2048)
    with pytest.raises(ScheduleError, match="axis k.i has 2048 iterations but threadIdx.x allows at most 1024"):
        s[y].bind(kt, "threadIdx.x")


def test_a_block_over_1024_threads_with_rows_is_refused():
    x, y, s = row_sum(rows=8, n=512)
    _, kt = s[y].split(s[y].op.reduce_axis[0], 512)
    s[y].bind(s[y].op.axis[0], "threadIdx.y")
    s[y].bind(kt, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"a block of threadIdx.y=8 x threadIdx.x=512 is 4096 threads, over the "
                                            r"device limit of 1024"):
        lower_gpu(s, [x, y], "big")


def test_a_data_axis_inside_the_reduction_is_refused():
    x, y, s = row_sum()
    i = s[y].op.axis[0]
    ko, kt = s[y].split(s[y].op.reduce_axis[0], 32)
    s[y].reorder(ko, kt, i)
    s[y].bind(kt, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"stage y reduces across threads along threadIdx.x, but its data axes "
                                            r"\['i'\] are inside its reduction loops"):
        lower_gpu(s, [x, y], "late")


def test_a_shared_result_is_refused():
    a = te.placeholder((4, 64), "float32", "a")
    r = te.reduce_axis((0, 64), "k")
    m = te.compute((4,), lambda i: te.sum(a[i, r.var], axis=r), "m")
    y = te.compute((4,), lambda i: m[i] + 1.0, "y")
    s = create_schedule(y)
    s[y].bind(s[y].op.axis[0], "blockIdx.x")
    s[m].set_scope("shared")
    s[m].compute_at(s[y], s[y].op.axis[0])
    s[m].bind(s[m].op.reduce_axis[0], "threadIdx.x")
    with pytest.raises(ScheduleError, match="stage m reduces across threads into a shared buffer"):
        lower_gpu(s, [a, y], "shared")


def test_the_same_tag_in_the_reader_and_the_reduction_is_refused():
    a = te.placeholder((4, 64), "float32", "a")
    r = te.reduce_axis((0, 64), "k")
    m = te.compute((4,), lambda i: te.sum(a[i, r.var], axis=r), "m")
    y = te.compute((4,), lambda i: m[i] + 1.0, "y")
    s = create_schedule(y)
    s[y].bind(s[y].op.axis[0], "threadIdx.x")
    s[m].set_scope("local")
    s[m].compute_at(s[y], s[y].op.axis[0])
    s[m].bind(s[m].op.reduce_axis[0], "threadIdx.x")
    with pytest.raises(ScheduleError, match="stage m reduces across threadIdx.x, but it is computed inside stage y, "
                                            "whose axis i is bound to threadIdx.x too"):
        lower_gpu(s, [a, y], "clash")


# -- the default schedules' choice ---------------------------------------------------------

def kernels_of(outs, args):
    return lower_gpu(schedule_for_gpu(outs), args, "d").kernels


def test_few_long_reductions_run_across_threads_and_many_one_per_thread():
    few = te.placeholder((1, 512, 7, 7), "float32", "few")
    out = topi.global_avg_pool2d(few)
    (k,) = kernels_of([out], [few, out])
    assert k.block == (32, 8, 1) and k.allocations("shared")
    many = te.placeholder((256, 512, 7, 7), "float32", "many")    # 131072 outputs: enough threads already
    out = topi.global_avg_pool2d(many)
    (k,) = kernels_of([out], [many, out])
    assert k.block == (256, 1, 1) and not k.allocations("shared")
    short = te.placeholder((1, 8, 3, 3), "float32", "short")      # 9 values per output: shorter than a warp
    out = topi.global_avg_pool2d(short)
    (k,) = kernels_of([out], [short, out])
    assert not k.allocations("shared")


def test_the_threshold():
    assert cross_thread.cross_thread_pays(1000, 512)
    assert not cross_thread.cross_thread_pays(cross_thread.FEW_OUTPUTS, 512)
    assert not cross_thread.cross_thread_pays(10, cross_thread.MIN_REDUCE - 1)
    assert [cross_thread.threads_per_output(n) for n in (32, 49, 300, 1000)] == [32, 32, 256, 256]
    assert cross_thread.row_factored_sharing_pays(cross_thread.MIN_REDUCE)
    assert not cross_thread.row_factored_sharing_pays(cross_thread.MIN_REDUCE - 1)
