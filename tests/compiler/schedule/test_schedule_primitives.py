"""Schedule primitives: the same computation under different schedules gives identical
results (int32, so exactly), and the lowered IR has the loop structure the schedule asks for."""
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.build import lower
from vdla.compiler.schedule import ScheduleError, create_schedule, vthread
from vdla.compiler.schedule.lower import lower_schedule
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit

M, K, N = 19, 23, 29


def matmul_relu():
    a = te.placeholder((M, K), "int32", "A")
    b = te.placeholder((K, N), "int32", "B")
    k = te.reduce_axis((0, K), "k")
    c = te.compute((M, N), lambda i, j: te.sum(a[i, k.var] * b[k.var, j], axis=k), "C")
    d = te.compute((M, N), lambda i, j: E.max_expr(c[i, j], 0), "D")
    return a, b, c, d


def loops(func):
    """Pre-order list of (loop var, extent, kind) of every loop."""
    out = []

    def rec(s):
        if isinstance(s, S.For):
            out.append((s.var.name, s.extent.value if isinstance(s.extent, E.Const) else None, s.kind.value))
            rec(s.body)
        elif isinstance(s, S.SeqStmt):
            for c in s.seq:
                rec(c)
        elif isinstance(s, (S.Allocate, S.AttrStmt)):
            rec(s.body)
        elif isinstance(s, S.IfThenElse):
            rec(s.then_case)
            rec(s.else_case)
    rec(func.body)
    return out


def allocs(func):
    found = []
    visit(func.body, lambda n: found.append((n.buffer.name, list(n.buffer.shape), n.buffer.scope))
          if isinstance(n, S.Allocate) else None)
    return found


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    a = rng.integers(-9, 9, (M, K)).astype("int32")
    b = rng.integers(-9, 9, (K, N)).astype("int32")
    return a, b, np.maximum(a @ b, 0)


def run(s, args, data):
    out = np.zeros((M, N), "int32")
    build(s, args, name="f", check=True).load().run("f", [data[0], data[1], out])
    return out


def sched_default(s, a, b, c, d):
    return []


def sched_split_tail(s, a, b, c, d):
    i, j = s[d].op.axis
    jo, ji = s[d].split(j, 8)          # 29 = 3*8 + 5: guarded tail
    return [("i", 19, "serial"), ("j.o", 4, "serial"), ("j.i", 8, "serial")]


def sched_tile_reorder_reduce(s, a, b, c, d):
    i, j = s[c].op.axis
    k = s[c].op.reduce_axis[0]
    io, jo, ii, ji = s[c].tile(i, j, 4, 8)
    ko, ki = s[c].split(k, 5)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    return [("i.o", 5, "serial"), ("j.o", 4, "serial"), ("k.o", 5, "serial"), ("i.i", 4, "serial"),
            ("k.i", 5, "serial"), ("j.i", 8, "serial")]


def sched_fuse_parallel(s, a, b, c, d):
    i, j = s[d].op.axis
    f = s[d].fuse(i, j)
    fo, fi = s[d].split(f, nparts=2)
    s[d].parallel(fo)
    return [("i.j.f.o", 2, "parallel"), ("i.j.f.i", 276, "serial")]


def sched_vectorize_unroll(s, a, b, c, d):
    i, j = s[c].op.axis
    jo, ji = s[c].split(j, 4)
    s[c].reorder(i, jo, s[c].op.reduce_axis[0], ji)
    s[c].vectorize(ji)     # guarded tail (29 % 4): kept scalar, still correct
    io, ii = s[d].split(s[d].op.axis[0], 4)
    s[d].unroll(ii)
    return []


def sched_compute_at_local(s, a, b, c, d):
    i, j = s[d].op.axis
    jo, ji = s[d].split(j, 8)
    s[c].compute_at(s[d], jo)
    s[c].set_scope("local")
    return [("i", 19, "serial"), ("j.o", 4, "serial")]


def sched_cache_read_write(s, a, b, c, d):
    cl = s.cache_write(c, "local")
    bl = s.cache_read(b, "local", [s[cl]])
    i, j = s[c].op.axis
    jo, ji = s[c].split(j, 16)
    s[cl].compute_at(s[c], jo)
    ci, cj = s[cl].op.axis
    s[cl].reorder(s[cl].op.reduce_axis[0], ci, cj)     # k outermost: one row of B per k step
    s[bl].compute_at(s[cl], s[cl].op.reduce_axis[0])
    return [("i", 19, "serial"), ("j.o", 2, "serial")]


def sched_nested_compute_at(s, a, b, c, d):
    """C computed per 4-row tile of D (its region starts at a loop-dependent row), and C's
    register tile computed inside C: the inner stage's region min is written in C's unsplit
    row var, which is also C's absolute row index (a lowering once mixed the two up)."""
    cl = s.cache_write(c, "local")
    io, ii = s[d].split(s[d].op.axis[0], 4)
    s[c].compute_at(s[d], io)
    s[cl].compute_at(s[c], s[c].op.axis[1])
    return [("i.o", 5, "serial")]


def sched_vthread(s, a, b, c, d):
    i, j = s[d].op.axis
    vo, vi = s[d].split(i, nparts=2)
    s[d].bind(vo, vthread("vt"))
    return [("i.o", 2, "vthread"), ("i.i", 10, "serial")]


SCHEDULES = [sched_default, sched_split_tail, sched_tile_reorder_reduce, sched_fuse_parallel,
             sched_vectorize_unroll, sched_compute_at_local, sched_cache_read_write,
             sched_nested_compute_at, sched_vthread]


@pytest.mark.parametrize("sched", SCHEDULES, ids=lambda f: f.__name__)
def test_same_result_under_every_schedule(sched, data):
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    want_loops = sched(s, a, b, c, d)
    lower(s, [a, b, d], "f", check=True)          # the CPU passes keep the IR well-formed
    from vdla.compiler.schedule.lower import lower_schedule
    from vdla.compiler.tir.verify import verify
    got = loops(verify(lower_schedule(s, [a, b, d], "f")))   # the nest the schedule asked for
    # the expected loops appear, in order, in the lowered nest
    pos = 0
    for want in want_loops:
        while pos < len(got) and got[pos] != want:
            pos += 1
        assert pos < len(got), f"loop {want} missing or out of order in {got}"
    np.testing.assert_array_equal(run(s, [a, b, d], data), data[2])


def test_compute_at_allocates_only_the_tile():
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    sched_compute_at_local(s, a, b, c, d)
    func = lower(s, [a, b, d], "f")
    assert ("C", [1, 8], "local") in allocs(func)
    # C's loops live inside D's j.o loop: the first loop after j.o is C's
    names = [n for n, _, _ in loops(func)]
    assert names.index("j.o") < names.index("k")


def test_cache_read_write_buffers_and_placement():
    a, b, c, d = matmul_relu()
    s = create_schedule(c)
    sched_cache_read_write(s, a, b, c, d)
    func = lower(s, [a, b, c], "f", check=True)
    al = allocs(func)
    assert ("C.local", [1, 16], "local") in al
    assert ("B.local", [1, 16], "local") in al   # one row of B per k step, 16 columns of the tile


def test_vthread_is_an_ir_loop_kind_lowered_on_cpu():
    from vdla.compiler.schedule.lower import lower_schedule
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    sched_vthread(s, a, b, c, d)
    func = lower_schedule(s, [a, b, d], "f")
    assert ("i.o", 2, "vthread") in loops(func)
    assert all(kind != "vthread" for _, _, kind in loops(lower(s, [a, b, d], "f")))


def test_vectorize_emits_ramps_when_divisible():
    x = te.placeholder((6, 32), "float32", "x")
    y = te.compute((6, 32), lambda i, j: x[i, j] * 2.0, "y")
    s = create_schedule(y)
    jo, ji = s[y].split(s[y].op.axis[1], 16)
    s[y].vectorize(ji)
    text = repr(lower(s, [x, y], "f", check=True))
    assert "ramp(" in text and "j.i" not in text


def test_unroll_replicates_body():
    x = te.placeholder((8,), "float32", "x")
    y = te.compute((8,), lambda i: x[i] + 1.0, "y")
    s = create_schedule(y)
    s[y].unroll(s[y].op.axis[0])
    func = lower(s, [x, y], "f", check=True)
    assert loops(func) == [] and repr(func).count("y[") == 8


def test_compute_inline_removes_stage(data):
    a, b, c, d = matmul_relu()
    e = te.compute((M, N), lambda i, j: d[i, j] * 2, "E")
    s = create_schedule(e)
    s[d].compute_inline()
    func = lower(s, [a, b, e], "f", check=True)
    assert [x[0] for x in allocs(func)] == ["C"]
    out = np.zeros((M, N), "int32")
    build(s, [a, b, e], name="f").load().run("f", [data[0], data[1], out])
    np.testing.assert_array_equal(out, 2 * data[2])


# --- argument checking ----------------------------------------------------------------------

def test_primitive_errors():
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    i, j = s[d].op.axis
    io, ii = s[d].split(i, 4)
    with pytest.raises(ScheduleError, match=r"axis i was already split or fused"):
        s[d].split(i, 2)
    with pytest.raises(ScheduleError, match="factor must be positive"):
        s[d].split(j, 0)
    with pytest.raises(ScheduleError, match="must be adjacent"):
        s[d].fuse(io, j)
    with pytest.raises(ScheduleError, match="does not belong to this stage"):
        s[c].vectorize(j)
    with pytest.raises(ScheduleError, match="reduction axis"):
        s[c].parallel(s[c].op.reduce_axis[0])
    with pytest.raises(ScheduleError, match="only injective"):
        s[c].compute_inline()
    with pytest.raises(ScheduleError, match="input placeholder"):
        s[a].split(None, 2)
    with pytest.raises(ScheduleError, match="is not part of this schedule"):
        s[te.placeholder((3,), "float32", "stray")]
    with pytest.raises(ScheduleError, match="an output of the schedule"):
        s[d].compute_inline()


def test_lowering_errors():
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    with pytest.raises(ScheduleError, match="neither an argument nor computed"):
        lower(s, [b, d], "f")
    s2 = create_schedule(d)
    with pytest.raises(ScheduleError, match="output D is not in args"):
        lower(s2, [a, b], "f")


def test_an_argument_no_stage_reads_is_a_parameter_left_alone(rng):
    """A kernel's arguments follow its graph node's operands, and a target's form may not read
    all of them (an int8 conv's weight sums): the unread one is still a parameter, untouched."""
    a = te.placeholder((8,), "float32", "a")
    unread = te.placeholder((4,), "int32", "unread")
    b = te.compute((8,), lambda i: a[i] * 2.0, "b")
    kern = build(create_schedule(b), [a, unread, b], name="f")
    aa, ua, out = rng.standard_normal(8).astype("float32"), np.arange(4, dtype=np.int32), np.zeros(8, np.float32)
    kern.load().run("f", [aa, ua, out])
    np.testing.assert_array_equal(out, aa * 2)
    np.testing.assert_array_equal(ua, np.arange(4))


def test_bound_inference_through_stride_and_dilation(rng):
    """A padded input computed per output row of a strided, dilated convolution: the region
    is the rows that row needs (1 + (KH-1)*dilation), and the result is unchanged."""
    from vdla.compiler import topi
    x = te.placeholder((1, 2, 11, 9), "float32", "x")
    w = te.placeholder((3, 2, 3, 3), "float32", "w")
    y = topi.conv2d_nchw(x, w, strides=2, pads=2, dilations=2)
    pad = y.op.input_tensors[0]
    s = create_schedule(y)
    n, oc, oh, ow = s[y].op.axis
    s[pad].compute_at(s[y], oh)
    func = lower(s, [x, w, y], "f", check=True)
    assert ("pad_data", [1, 2, 5, 13], "global") in allocs(func)   # 5 rows, full padded width
    xa = rng.standard_normal(x.shape).astype("float32")
    wa = rng.standard_normal(w.shape).astype("float32")
    out = np.zeros(y.shape, "float32")
    build(s, [x, w, y], name="f").load().run("f", [xa, wa, out])
    ref = np.zeros(y.shape, "float32")
    xp = np.pad(xa, [(0, 0), (0, 0), (2, 2), (2, 2)])
    for o in range(3):
        for i in range(y.shape[2]):
            for j in range(y.shape[3]):
                ref[0, o, i, j] = (xp[0, :, 2 * i:2 * i + 5:2, 2 * j:2 * j + 5:2] * wa[o]).sum()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_pragma_becomes_a_loop_annotation():
    """Backends find loops by pragma (e.g. a copy into an accelerator scope marked for DMA)."""
    from vdla.compiler.schedule.lower import lower_schedule
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    bl = s.cache_read(b, "local", [s[c]])
    s[bl].pragma(s[bl].op.axis[0], "dma_copy")
    func = lower_schedule(s, [a, b, d], "f")
    found = []
    visit(func.body, lambda n: found.append(n.var.name) if isinstance(n, S.For) and n.annotations.get("dma_copy") else None)
    assert found == ["i0"]


def prefetches(func):
    """(buffer, indices) of every prefetch call, in order."""
    from vdla.compiler.tir.prefetch import CALL
    found = []
    visit(func.body, lambda n: found.append((n.args[0].buffer.name, n.args[0].indices))
          if isinstance(n, E.Call) and n.name == CALL else None)
    return found


def tiled_matmul():
    """matmul_relu with C's loops (i, j.o, k.o, k.i, j.i), j.i (4) unrolled, k.i 5 long."""
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    i, j = s[c].op.axis
    jo, ji = s[c].split(j, 4)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], 5)
    s[c].reorder(i, jo, ko, ki, ji)
    s[c].unroll(ji)
    return (a, b, c, d), s, i, ko, ki


def test_prefetch_reads_ahead_of_the_loop_it_names(data):
    """prefetch(B, at=k.i, ahead=k.o): at the top of each k.i step, the line of B that step reads
    one k.o iteration later (k advanced by the split factor), once per unrolled j.i value that
    indexes B and at the first value of the others; the kernel's result is unchanged."""
    (a, b, c, d), s, i, ko, ki = tiled_matmul()
    s[c].prefetch(b, ki, ko)
    found = prefetches(lower_schedule(s, [a, b, d], "f"))
    assert len(found) == 4 and {name for name, _ in found} == {"B"}
    # B[k, j] with k = 5 k.o + k.i + 5 (one k.o later) and j = 4 j.o + 0..3
    env = {"k.o": 2, "k.i": 3, "j.o": 1}
    rows_cols = sorted(tuple(_eval(i, env) for i in index) for _, index in found)
    assert rows_cols == [(5 * 2 + 3 + 5, 4 * 1 + u) for u in range(4)]
    assert prefetches(lower(s, [a, b, d], "f", check=True))     # they survive the passes
    np.testing.assert_array_equal(run(s, [a, b, d], data), data[2])


def _eval(expr, env):
    """An integer index expression's value with loop vars named in `env`."""
    from vdla.compiler.tir.arith import simplify
    from vdla.compiler.tir.functor import substitute
    vars_ = {}
    visit(expr, lambda n: vars_.setdefault(n.name, n) if isinstance(n, E.Var) else None)
    folded = simplify(substitute(expr, {vars_[name]: E.Const(v, vars_[name].dtype) for name, v in env.items()
                                        if name in vars_}))
    assert isinstance(folded, E.Const), folded
    return folded.value


def test_prefetch_errors_name_the_stage_and_loop():
    a, b, c, d = matmul_relu()
    s = create_schedule(d)
    i, j = s[c].op.axis
    k = s[c].op.reduce_axis[0]
    s[c].prefetch(b, i, k)              # k runs inside i: not ahead of it
    with pytest.raises(ScheduleError, match="prefetch ahead along k, which does not enclose i"):
        lower(s, [a, b, d], "f")
    s2 = create_schedule(d)
    s2[d].prefetch(b, s2[d].op.axis[1], s2[d].op.axis[0])   # D reads C, not B
    with pytest.raises(ScheduleError, match="D: prefetch of B, which it does not read"):
        lower(s2, [a, b, d], "f")
    s3 = create_schedule(d)
    jv = s3[c].op.axis[1]
    s3[c].vectorize(jv)
    s3[c].prefetch(b, jv, s3[c].op.axis[0])
    with pytest.raises(ScheduleError, match="prefetch at the vectorized loop j"):
        lower(s3, [a, b, d], "f")
    s4 = create_schedule(d)
    s4[c].prefetch(b, s4[c].op.axis[1], s4[c].op.axis[0], spread=s4[c].op.reduce_axis[0])
    with pytest.raises(ScheduleError, match="prefetch spread over k, which does not enclose j"):
        lower(s4, [a, b, d], "f")
    with pytest.raises(ScheduleError):
        create_schedule(d)[a].prefetch(b, i, k)   # a placeholder has no loops


def test_a_spread_prefetch_deals_its_copies_over_a_loop(data):
    """spread=i: row i of C issues only copy i mod 4 of the 4 (one per unrolled j.i value)."""
    (a, b, c, d), s, i, ko, ki = tiled_matmul()
    s[c].prefetch(b, ki, ko, spread=i)
    found = prefetches(lower_schedule(s, [a, b, d], "f"))
    assert len(found) == 1
    for row in range(6):
        env = {"k.o": 2, "k.i": 3, "j.o": 1, "i": row}
        assert tuple(_eval(x, env) for x in found[0][1]) == (5 * 2 + 3 + 5, 4 * 1 + row % 4)
    np.testing.assert_array_equal(run(s, [a, b, d], data), data[2])
