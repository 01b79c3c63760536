"""GPU schedule primitives and their lowering: bind to blockIdx/threadIdx, shared and local
scopes, the kernels' launch form, cooperative fetches with their barriers, and the checks that
say what is wrong with a GPU schedule."""
import pytest

from gpu_kernels import matmul_shared, softmax_rows, stencil_block_shared
from vdla.compiler import te
from vdla.compiler.schedule import ScheduleError, create_schedule
from vdla.compiler.schedule.gpu import GpuKernel, check_kernel, lower_gpu
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import gpu as G
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit
from vdla.driver import gpu_limits as limits


def vector_add(n=1000):
    a = te.placeholder((n,), "float32", "a")
    b = te.compute((n,), lambda i: a[i] + 1.0, "b")
    return a, b, create_schedule(b)


def matmul(m=64, n=64, k=32):
    a = te.placeholder((m, k), "float32", "A")
    b = te.placeholder((n, k), "float32", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r.var] * b[j, r.var], axis=r), "C")
    return a, b, c, create_schedule(c)


def barriers(stmt):
    found = []
    visit(stmt, lambda n: found.append(n) if G.is_barrier(n) else None)
    return len(found)


# -- bind ----------------------------------------------------------------------------------

def test_bind_refuses_an_unknown_tag():
    _, b, s = vector_add()
    with pytest.raises(ScheduleError, match=r"'threadIdx.w' is not a launch dimension; expected one of blockIdx.x"):
        s[b].bind(s[b].op.axis[0], "threadIdx.w")


def test_bind_refuses_a_reduction_axis_across_blocks():
    _, _, c, s = matmul()
    with pytest.raises(ScheduleError, match="k is a reduction axis; binding it to blockIdx.x would need a reduction "
                                            "across blocks"):
        s[c].bind(s[c].op.reduce_axis[0], "blockIdx.x")


@pytest.mark.parametrize("tag,extent", [("threadIdx.x", 1025), ("threadIdx.z", 65)])
def test_bind_refuses_an_extent_over_the_dimension_limit(tag, extent):
    _, b, s = vector_add(extent)
    with pytest.raises(ScheduleError, match=rf"axis i has {extent} iterations but {tag} allows at most "
                                            rf"{limits.MAX_BLOCK_DIM[tag[-1]]}; split it first"):
        s[b].bind(s[b].op.axis[0], tag)


def test_bind_refuses_one_tag_for_two_axes_of_a_stage():
    _, _, c, s = matmul()
    i, j = s[c].op.axis
    s[c].bind(i, "threadIdx.x")
    with pytest.raises(ScheduleError, match="threadIdx.x is already bound to axis i"):
        s[c].bind(j, "threadIdx.x")


def test_bind_refuses_a_split_axis():
    _, b, s = vector_add()
    i = s[b].op.axis[0]
    s[b].split(i, 128)
    with pytest.raises(ScheduleError, match="axis i was already split or fused"):
        s[b].bind(i, "blockIdx.x")


# -- lowering ------------------------------------------------------------------------------

def test_shared_matmul_lowers_to_one_kernel_with_cooperative_fetches():
    case = matmul_shared()
    gf = lower_gpu(case.schedule, case.args, "mm", check=True)
    (k,) = gf.kernels
    assert (k.name, k.grid, k.block) == ("mm__C", (4, 5, 1), (16, 16, 1))
    assert [G.thread_tag(s) for s in _launch_loops(k.func.body)] == \
        ["blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x"]
    # one 16 x 8 tile of each operand per block: the region covers all 16 x 16 threads
    assert [(b.name, list(b.shape)) for b in k.allocations("shared")] == [("A.shared", [16, 8]), ("B.shared", [16, 8])]
    text = repr(k.func)
    # 128 elements over 256 threads: one round, the upper half idle
    assert "if (((threadIdx.y * 16) + threadIdx.x) < 128):" in text
    # before the fetches (the previous step's reads), between them and the compute
    assert barriers(k.func.body) == 2
    assert gf.temporaries == [] and [b.name for b in k.params] == ["A", "B", "C"]


def _launch_loops(s):
    out = []
    while G.thread_tag(s) is not None:
        out.append(s)
        s = s.body
    return out


def test_a_fetch_outside_every_loop_of_the_kernel_needs_one_barrier():
    case = stencil_block_shared()
    (k,) = lower_gpu(case.schedule, case.args, "stencil").kernels
    assert barriers(k.func.body) == 1
    assert [list(b.shape) for b in k.allocations("shared")] == [[130]]   # the block's 128 + halo
    assert "for x.shared.fetch in range(2):" in repr(k.func)              # 130 elements, 128 threads


def test_each_root_stage_is_a_kernel_and_the_buffers_between_are_temporaries():
    case = softmax_rows()
    gf = lower_gpu(case.schedule, case.args, "sm", check=True)
    assert [k.name for k in gf.kernels] == ["sm__softmax_max", "sm__softmax_sum", "sm__softmax"]
    assert [b.name for b in gf.temporaries] == ["softmax_max", "softmax_sum"]
    assert [b.name for b in gf.kernels[1].params] == ["x", "softmax_max", "softmax_sum"]


# -- checks --------------------------------------------------------------------------------

def test_a_block_over_1024_threads_is_refused():
    _, _, c, s = matmul()
    i, j = s[c].op.axis
    s[c].bind(i, "threadIdx.y")
    s[c].bind(j, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"a block of threadIdx.y=64 x threadIdx.x=64 is 4096 threads, over "
                                            r"the device limit of 1024"):
        lower_gpu(s, list(s.outputs[0].op.input_tensors) + s.outputs, "big")


def test_shared_buffers_over_the_block_budget_are_refused():
    a, b, c, s = matmul(m=128, n=128, k=96)
    aa, bb = s.cache_read(a, "shared", [c]), s.cache_read(b, "shared", [c])
    i, j = s[c].op.axis
    bi, ti = s[c].split(i, 128)
    bj, tj = s[c].split(j, 8)
    s[c].reorder(bi, bj, ti, tj)
    s[c].bind(bj, "blockIdx.x")
    s[c].bind(tj, "threadIdx.x")
    s[aa].compute_at(s[c], bj)
    s[bb].compute_at(s[c], bj)
    with pytest.raises(ScheduleError, match=r"the block's shared buffers need 52224 bytes \(A.shared \[128, 96\] "
                                            r"float32 = 49152 B, B.shared \[8, 96\] float32 = 3072 B\), over the "
                                            r"49152 bytes a block may have"):
        lower_gpu(s, [a, b, c], "tiles").kernels[0]
    s[aa].compute_at(s[c], ti)     # a row of A per step of the (serial) row loop fits
    shared = {b.name: b.shape for b in lower_gpu(s, [a, b, c], "tiles").kernels[0].allocations("shared")}
    assert shared == {"A.shared": (1, 96), "B.shared": (8, 96)}


def test_one_tag_with_two_extents_in_a_kernel_is_refused():
    a, b, c, s = matmul()
    aa = s.cache_read(a, "shared", [c])
    i, j = s[c].op.axis
    bi, ti = s[c].split(i, 16)
    s[c].reorder(bi, ti, j)
    s[c].bind(bi, "blockIdx.x")
    s[c].bind(ti, "threadIdx.x")
    s[aa].compute_at(s[c], bi)
    fused = s[aa].fuse(*s[aa].op.axis)
    _, t = s[aa].split(fused, 32)
    s[aa].bind(t, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"threadIdx.x is bound to loop .* with extent (16|32) and to loop .* "
                                            r"with extent (32|16); a launch dimension has one extent per kernel"):
        lower_gpu(s, [a, b, c], "twice")


def test_a_root_stage_with_no_bound_loop_is_refused():
    a = te.placeholder((100,), "float32", "a")
    b = te.compute((100,), lambda i: a[i] * 2.0, "b")
    c = te.compute((100,), lambda i: b[i] + 1.0, "c")
    s = create_schedule(c)
    bo, bi = s[c].split(s[c].op.axis[0], 32)
    s[c].bind(bo, "blockIdx.x")
    s[c].bind(bi, "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"kernel unbound__b: no loop of stage b is bound to blockIdx.\* or "
                                            r"threadIdx.\*, so every thread would run the whole nest"):
        lower_gpu(s, [a, c], "unbound")


def test_a_store_every_thread_makes_is_refused():
    """The output's copy-out runs outside the accumulator's thread loop: 32 threads, one element."""
    a, b, c, s = matmul(k=8)
    cl = s.cache_write(c, "local")
    i, j = s[c].op.axis
    s[c].bind(i, "blockIdx.x")
    s[cl].compute_at(s[c], i)
    s[cl].bind(s[cl].op.axis[1], "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"the store to C\[.*\] does not depend on threadIdx.x \(extent 64\), "
                                            r"so all 64 threads of a block along it would write the same element"):
        lower_gpu(s, [a, b, c], "race")


def test_shared_scope_at_the_root_is_refused():
    a = te.placeholder((64,), "float32", "a")
    b = te.compute((64,), lambda i: a[i] * 2.0, "b")
    c = te.compute((64,), lambda i: b[i] + 1.0, "c")
    s = create_schedule(c)
    s[b].set_scope("shared")
    for st in (s[b], s[c]):
        st.bind(st.op.axis[0], "threadIdx.x")
    with pytest.raises(ScheduleError, match=r"stage b has scope 'shared' but is computed at the root, outside every "
                                            r"kernel; shared memory lives only inside one block"):
        lower_gpu(s, [a, c], "root_shared")


def test_a_global_buffer_inside_a_kernel_is_refused():
    a = te.placeholder((64,), "float32", "a")
    b = te.compute((64,), lambda i: a[i] * 2.0, "b")
    c = te.compute((64,), lambda i: b[i] + 1.0, "c")
    s = create_schedule(c)
    s[c].bind(s[c].op.axis[0], "threadIdx.x")
    s[b].compute_at(s[c], s[c].op.axis[0])
    with pytest.raises(ScheduleError, match=r"buffer b \(float32\[1\]\) is global memory allocated inside the "
                                            r"kernel, which device code cannot do; give its stage scope 'shared' or "
                                            r"'local'"):
        lower_gpu(s, [a, c], "inside")
    s[b].set_scope("local")
    assert lower_gpu(s, [a, c], "inside").kernels[0].allocations("local")[0].name == "b"


def test_a_barrier_under_a_thread_dependent_condition_is_refused():
    tx = E.Var("threadIdx.x")
    buf = S.Buffer("out", (64,), "float32")
    body = S.seq(S.IfThenElse(tx < 32, G.barrier()), S.BufferStore(buf, E.Const(0.0, "float32"), [tx]))
    kernel = GpuKernel(S.PrimFunc("k", [buf], G.launch_loop(tx, 64, "threadIdx.x", body)))
    with pytest.raises(ScheduleError, match=r"kernel k: a barrier is inside the condition \(threadIdx.x < 32\), "
                                            r"which depends on the thread index, so some threads of a block would "
                                            r"wait at it forever"):
        check_kernel(kernel)
