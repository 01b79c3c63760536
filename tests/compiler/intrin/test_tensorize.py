"""tensorize against declared intrinsics: the CPU vec_fma (emitted and run) and the VDLA GEMM
(matched through cache_read/cache_write into accelerator scopes), plus one test per violated
constraint checking its message."""
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.build import lower
from vdla.compiler.intrin import TensorizeError, cpu, vdla
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit
from vdla.hw import load_config

# a BATCH 2 x BLOCK 16 accelerator: the declarations take their shapes from the config
BATCH2 = load_config({**load_config("pynq").to_dict(), "LOG_BATCH": 1})


def matmul(m, k, n, dtype="float32", b_transposed=False, op="mul"):
    a = te.placeholder((m, k), dtype, "A")
    b = te.placeholder((n, k) if b_transposed else (k, n), dtype, "B")
    r = te.reduce_axis((0, k), "k")
    bv = (lambda j: b[j, r.var]) if b_transposed else (lambda j: b[r.var, j])
    comb = (lambda x, y: x * y) if op == "mul" else (lambda x, y: x + y)
    c = te.compute((m, n), lambda i, j: te.sum(comb(a[i, r.var], bv(j)), axis=r), "C")
    return a, b, c


def _host_has(feature: str) -> bool:
    from vdla.compiler.target import Target
    return feature in Target.host().features


def fma_schedule(a, b, c, kf=4, jf=16, intrin=None):
    s = create_schedule(c)
    i, j = s[c].op.axis
    jo, ji = s[c].split(j, jf)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], kf)
    s[c].reorder(i, jo, ko, ki, ji)
    s[c].tensorize(ki, intrin or cpu.vec_fma(4, 16))
    return s


def count_tensorized(func):
    found = []
    visit(func.body, lambda n: found.append(n.value) if isinstance(n, S.AttrStmt) and n.key == "tensorized" else None)
    return found


@pytest.mark.parametrize("m,k,n", [(7, 12, 32), (1, 8, 16)])
def test_vec_fma_positive(m, k, n, rng):
    a, b, c = matmul(m, k, n)
    s = fma_schedule(a, b, c)
    func = lower(s, [a, b, c], "mm", check=True)
    assert count_tensorized(func) == ["vec_fma_4x16"]
    kern = build(s, [a, b, c], name="mm")
    assert "llvm.fma.v16f32" in kern.llvm_ir or "fma" in kern.llvm_ir
    aa, ba = rng.standard_normal(a.shape).astype("float32"), rng.standard_normal(b.shape).astype("float32")
    out = np.zeros(c.shape, "float32")
    kern.load().run("mm", [aa, ba, out])
    np.testing.assert_allclose(out, aa @ ba, rtol=1e-5, atol=1e-5)


def test_vec_fma_whole_reduction_resets(rng):
    """Tensorizing the whole reduction: the intrinsic starts from zero (no separate init)."""
    a, b, c = matmul(3, 4, 16)
    s = create_schedule(c)
    i, j = s[c].op.axis
    s[c].reorder(i, s[c].op.reduce_axis[0], j)
    s[c].tensorize(s[c].op.reduce_axis[0], cpu.vec_fma(4, 16))
    func = lower(s, [a, b, c], "mm", check=True)
    assert "= 0.0" not in repr(func)   # no init loop: the intrinsic resets
    aa, ba = rng.standard_normal(a.shape).astype("float32"), rng.standard_normal(b.shape).astype("float32")
    out = np.full(c.shape, 7.0, "float32")
    build(s, [a, b, c], name="mm").load().run("mm", [aa, ba, out])
    np.testing.assert_allclose(out, aa @ ba, rtol=1e-5, atol=1e-5)


def _expect(s, args, match):
    with pytest.raises(TensorizeError, match=match):
        lower(s, args, "mm")


def test_negative_shape():
    a, b, c = matmul(4, 8, 32)
    _expect(fma_schedule(a, b, c, jf=8), [a, b, c], r"shape constraint: loop j\.i has extent 8 but intrinsic axis j has extent 16")


def test_negative_tile_does_not_divide():
    a, b, c = matmul(4, 10, 16)
    _expect(fma_schedule(a, b, c, kf=4), [a, b, c], "does not divide")


def test_negative_dtype():
    a, b, c = matmul(4, 8, 16, dtype="int32")
    _expect(fma_schedule(a, b, c), [a, b, c], "dtype constraint")


def test_negative_stride():
    a, b, c = matmul(4, 8, 16, b_transposed=True)
    _expect(fma_schedule(a, b, c), [a, b, c], r"stride constraint: operand b dimension 1 needs element stride 1, but the read of B has stride 8")


def test_negative_scope():
    a, b, c = matmul(4, 8, 16)
    _expect(fma_schedule(a, b, c, intrin=cpu.vec_fma(4, 16, out_scopes=("local",))), [a, b, c],
            r"scope constraint: operand c must be in memory scope 'local', but buffer C is in 'global'")


def test_negative_computation():
    a, b, c = matmul(4, 8, 16, op="add")
    _expect(fma_schedule(a, b, c), [a, b, c], "computation differs")


def test_negative_axis_count():
    a, b, c = matmul(4, 8, 16)
    s = create_schedule(c)
    i, j = s[c].op.axis
    s[c].tensorize(i, cpu.vec_fma(4, 16))
    _expect(s, [a, b, c], "2 data and 1 reduction loops")


def test_vdla_gemm_with_scopes_cache_and_vthreads():
    """The VDLA GEMM matches once operands are cached into the accelerator's scopes; the
    result is an opaque intrinsic statement on views of the scoped buffers, inside a
    virtual-thread loop."""
    n, ci, co = 2, 32, 32
    x = te.placeholder((n, ci), "int8", "x")
    w = te.placeholder((co, ci), "int8", "w")
    k = te.reduce_axis((0, ci), "k")
    y = te.compute((n, co), lambda b, o: te.sum(te.cast("int32", x[b, k.var]) * te.cast("int32", w[o, k.var]), axis=k), "y")
    s = create_schedule(y)
    yl = s.cache_write(y, vdla.SCOPE_ACC)
    xl = s.cache_read(x, vdla.SCOPE_INP, [s[yl]])
    wl = s.cache_read(w, vdla.SCOPE_WGT, [s[yl]])
    b, o = s[y].op.axis
    oo, oi = s[y].split(o, 16)
    vt, oo2 = s[y].split(oo, nparts=2)
    s[y].reorder(vt, oo2, b, oi)
    s[y].bind(vt, te_vthread())
    s[yl].compute_at(s[y], oo2)
    yb, yo = s[yl].op.axis
    ko, ki = s[yl].split(s[yl].op.reduce_axis[0], 16)
    s[yl].reorder(ko, yb, yo, ki)
    s[xl].compute_at(s[yl], ko)
    s[wl].compute_at(s[yl], ko)
    s[yl].tensorize(yb, vdla.gemm(BATCH2))
    from vdla.compiler.schedule.lower import lower_schedule
    from vdla.compiler.tir.verify import verify
    func = verify(lower_schedule(s, [x, w, y], "gemm"))
    text = repr(func)
    intr, allocs, vthreads = [], [], []
    visit(func.body, lambda n: intr.append(n) if isinstance(n, S.IntrinsicStmt) else None)
    visit(func.body, lambda n: allocs.append(n.buffer) if isinstance(n, S.Allocate) else None)
    visit(func.body, lambda n: vthreads.append(n) if isinstance(n, S.For) and n.kind is S.ForKind.VTHREAD else None)
    assert len(intr) == 1 and intr[0].intrin_name == "vdla.gemm"
    assert [r.scope for r in intr[0].regions] == [vdla.SCOPE_INP, vdla.SCOPE_WGT, vdla.SCOPE_ACC]
    assert intr[0].attrs["reset"] is False          # the k loop is outside: accumulate
    scopes = {bf.name: (bf.scope, list(bf.shape)) for bf in allocs}
    assert scopes["x." + vdla.SCOPE_INP] == (vdla.SCOPE_INP, [2, 16])      # one 2x16 input tile
    assert scopes["w." + vdla.SCOPE_WGT] == (vdla.SCOPE_WGT, [16, 16])
    assert scopes["y." + vdla.SCOPE_ACC] == (vdla.SCOPE_ACC, [2, 16])
    assert len(vthreads) == 1 and vthreads[0].extent.value == 2
    assert "vdla.gemm(inp@vdla.inp, wgt@vdla.wgt, acc@vdla.acc)" in text
    # The CPU backend refuses the accelerator's scopes with a clear message.
    with pytest.raises(Exception, match="vdla"):
        build(s, [x, w, y], name="gemm")


def te_vthread():
    from vdla.compiler.schedule import vthread
    return vthread("vt")


@pytest.mark.parametrize("make,expected_op,expected_imm", [
    (lambda acc: te.compute(acc.shape, lambda b, o: E.max_expr(acc[b, o], 0), "relu"), "max", 0),
    (lambda acc: te.compute(acc.shape, lambda b, o: acc[b, o] // 8, "shr"), "shr", 3),
])
def test_vdla_alu_imm_matches_on_accumulator_tiles(make, expected_op, expected_imm):
    acc_in = te.placeholder((2, 32), "int32", "acc_in")
    y = make(acc_in)
    s = create_schedule(y)
    yl = s.cache_write(y, vdla.SCOPE_ACC)
    al = s.cache_read(acc_in, vdla.SCOPE_ACC, [s[yl]])
    b, o = s[y].op.axis
    oo, oi = s[y].split(o, 16)
    s[y].reorder(oo, b, oi)
    s[yl].compute_at(s[y], oo)
    s[al].compute_at(s[y], oo)
    intrin = vdla.alu("max", BATCH2, imm=0) if expected_op == "max" else vdla.alu_shr(3, BATCH2)
    s[yl].tensorize(s[yl].op.axis[0], intrin)
    from vdla.compiler.schedule.lower import lower_schedule
    func = lower_schedule(s, [acc_in, y], "alu")
    found = []
    visit(func.body, lambda n: found.append(n) if isinstance(n, S.IntrinsicStmt) else None)
    assert len(found) == 1 and found[0].intrin_name == "vdla.alu"
    assert found[0].attrs == {"op": expected_op, "imm": expected_imm}
    # a different immediate is a different instruction: no match
    s2_intrin = vdla.alu("max", BATCH2, imm=1) if expected_op == "max" else vdla.alu_shr(2, BATCH2)
    s[yl].tensorize(s[yl].op.axis[0], s2_intrin)
    with pytest.raises(TensorizeError, match="constant"):
        lower_schedule(s, [acc_in, y], "alu")


def _u8s8_dot(k, offset=0):
    """c[o] = sum over k of (a[k] - offset) b[k // 4, o, k % 4]: the int8 kernels' weight layout
    ([.., 16, 4])."""
    a = te.placeholder((k,), "uint8", "A")
    b = te.placeholder((k // 4, 16, 4), "int8", "B")
    q, j = te.reduce_axis((0, k // 4), "q"), te.reduce_axis((0, 4), "j")

    def activation(v):
        return te.cast("int32", v) - offset if offset else te.cast("int32", v)
    c = te.compute((16,), lambda o: te.sum(
        activation(a[q.var * 4 + j.var]) * te.cast("int32", b[q.var, o, j.var]), axis=[q, j]), "C")
    s = create_schedule(c)
    s[c].reorder(q, s[c].op.axis[0], j)
    return s, a, b, c


@pytest.mark.skipif(not _host_has("+avx2"), reason="the host has no AVX2")
@pytest.mark.parametrize("accumulate", [False, True])
def test_the_avx2_int8_dot_is_exact_where_vpmaddubsw_alone_saturates(accumulate, rng):
    """u8 x s8 with 255 * 127 and 255 * -128 in every pair (vpmaddubsw's 16-bit sums overflow):
    the AVX2 intrinsic's results equal numpy's integers, over one 4-step (the intrinsic starts from
    zero) and over 12 (it accumulates)."""
    k = 12 if accumulate else 4
    s, a, b, c = _u8s8_dot(k)
    s[c].tensorize(s[c].op.axis[0], cpu.int8_dot_16x4_avx2())
    kern = build(s, [a, b, c], name="dot")
    assert "pmadd.ub.sw" in kern.llvm_ir
    extremes = (np.full(k, 255, np.uint8), np.where(np.arange(16 * k).reshape(k // 4, 16, 4) % 3, 127, -128))
    for aa, ba in (extremes, (rng.integers(0, 256, k), rng.integers(-128, 128, (k // 4, 16, 4)))):
        aa, ba = aa.astype(np.uint8), ba.astype(np.int8)
        out = np.full(16, 7, np.int32)
        kern.load().run("dot", [aa, ba, out])
        want = np.einsum("qoj,qj->o", ba.astype(np.int64), aa.astype(np.int64).reshape(k // 4, 4))
        np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(not _host_has("+avx2"), reason="the host has no AVX2")
@pytest.mark.parametrize("accumulate", [False, True])
def test_the_signed_avx2_int8_dot_is_exact_at_every_extreme(accumulate, rng):
    """(u8 - 128) x s8 by vpsignb and vpmaddubsw: activations 0 (-128 once offset, whose
    magnitude 128 is no signed byte), 255, 127 and 128 against weights 127 and -127 in every
    pair, and random ones: equal to numpy's integers."""
    k = 12 if accumulate else 4
    s, a, b, c = _u8s8_dot(k, offset=128)
    s[c].tensorize(s[c].op.axis[0], cpu.int8_dot_16x4_signed_avx2())
    kern = build(s, [a, b, c], name="dot")
    assert "psign.b" in kern.llvm_ir
    weights = np.where(np.arange(16 * k).reshape(k // 4, 16, 4) % 3, 127, -127)
    cases = [(np.resize(np.array(v, np.uint8), k), weights) for v in ([0], [255], [0, 255], [127, 128, 0, 1])]
    cases.append((rng.integers(0, 256, k), rng.integers(-127, 128, (k // 4, 16, 4))))
    for aa, ba in cases:
        aa, ba = aa.astype(np.uint8), ba.astype(np.int8)
        out = np.full(16, 7, np.int32)
        kern.load().run("dot", [aa, ba, out])
        want = np.einsum("qoj,qj->o", ba.astype(np.int64), aa.astype(np.int64).reshape(k // 4, 4) - 128)
        np.testing.assert_array_equal(out, want)


def test_the_signed_dot_matches_only_products_of_offset_activations():
    """The signed intrinsic computes (a - 128) * b: a stage of a * b is no match for it."""
    s, a, b, c = _u8s8_dot(4)
    s[c].tensorize(s[c].op.axis[0], cpu.int8_dot_16x4_signed_avx2())
    _expect(s, [a, b, c], "computation differs")


def test_each_target_gets_the_int8_dot_product_it_has():
    from vdla.compiler.target import Target

    def picked(*target):
        dot = cpu.int8_dot_16x4_for(Target(*target))
        return dot and dot.name
    assert picked("x86_64-unknown-linux-gnu", "znver5", "+avx2,+avx512f,+avx512vnni") == "x86_vpdpbusd_16x4"
    assert picked("x86_64-unknown-linux-gnu", "znver3", "+avx2,-avx512f") == "x86_avx2_u8s8_16x4"
    assert picked("x86_64-unknown-linux-gnu", "x86-64", "") is None
    assert picked("armv7a-linux-gnueabihf") is None and picked("aarch64-linux-gnu") is None
    # products of x - 128: AVX2's sign trick, on any AVX2 host; the targets without VNNI choose them
    zen3, zen5 = Target("x86_64-unknown-linux-gnu", "znver3", "+avx2,-avx512f"), \
        Target("x86_64-unknown-linux-gnu", "znver5", "+avx2,+avx512f,+avx512vnni")
    assert cpu.int8_dot_16x4_for(zen3, 128).name == cpu.int8_dot_16x4_for(zen5, 128).name == "x86_avx2_s8s8_16x4"
    assert cpu.int8_dot_16x4_for(Target("aarch64-linux-gnu"), 128) is None
    assert cpu.signed_products(zen3) and not cpu.signed_products(zen5)
    assert not cpu.signed_products(Target("aarch64-linux-gnu"))


def test_vnni_requires_unsigned_activations():
    """vpdpbusd multiplies unsigned by signed bytes: signed activations do not match."""
    a = te.placeholder((8,), "int8", "A")
    b = te.placeholder((16, 8), "int8", "B")
    k = te.reduce_axis((0, 8), "k")
    c = te.compute((16,), lambda o: te.sum(te.cast("int32", a[k.var]) * te.cast("int32", b[o, k.var]), axis=k), "C")
    s = create_schedule(c)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], 4)
    s[c].reorder(ko, s[c].op.axis[0], ki)
    s[c].tensorize(s[c].op.axis[0], cpu.int8_dot_16x4())
    _expect(s, [a, b, c], "dtype constraint: operand a is uint8 but the stage reads A of int8")


def test_a_window_index_matches_depthwise_rows_and_whole_tiles_are_kept():
    """j + t in the declaration pairs with the stage's j + t (the same stride for both); a
    weight cache attached outside the row spans its tile's 16 lanes although the taps are
    lanes 0..2 only where it keeps them whole (keep_whole): an SRAM element moves whole."""
    from vdla.compiler.schedule.lower import lower_schedule
    cfg = load_config("pynq")
    x = te.placeholder((14, 1, 16), "int8", "x")
    w = te.placeholder((16, 16), "int8", "w")
    t = te.reduce_axis((0, 3), "t")
    y = te.compute((12, 1, 16), lambda j, b, c: te.sum(
        te.cast("int32", x[j + t.var, b, c]) * te.cast("int32", w[c, t.var]), axis=t), "y")
    for whole in (False, True):
        s = create_schedule(y)
        yl = s.cache_write(y, vdla.SCOPE_ACC)
        s.cache_read(x, vdla.SCOPE_INP, [s[yl]])        # at the root: the whole input, loaded once
        wl = s.cache_read(w, vdla.SCOPE_WGT, [s[yl]])
        j, b, c = s[yl].op.axis
        jo, ji = s[yl].split(j, 6)
        s[yl].reorder(jo, ji, s[yl].op.reduce_axis[0], b, c)
        s[wl].compute_at(s[yl], jo)
        if whole:
            s[wl].keep_whole(-1)
        s[yl].tensorize(ji, vdla.depthwise_row(cfg, 6))
        if not whole:
            lanes_0_to_2 = r"stride 3 there \(buffer w.vdla.wgt \[16, 3\]\)"
            with pytest.raises(TensorizeError, match="wgt dimension 0 needs element stride 16, .* " + lanes_0_to_2):
                lower_schedule(s, [x, w, y], "dw")
            continue
        func = lower_schedule(s, [x, w, y], "dw")
        intr = []
        visit(func.body, lambda n: intr.append(n) if isinstance(n, S.IntrinsicStmt) else None)
        assert [n.intrin_name for n in intr] == ["vdla.depthwise"] and intr[0].attrs["width"] == 6
        inp, wgt, acc = intr[0].regions
        assert inp.strides[0] == 16 and acc.strides[0] == 16          # one pixel per window step
        assert list(wgt.data.shape) == [16, 16] and list(inp.data.shape) == [14, 1, 16]


@pytest.mark.parametrize("stage_stride, row_stride", [(2, 1), (1, 2), (2, 2)])
def test_a_window_pairs_only_with_a_row_of_its_stride(stage_stride, row_stride):
    """The stage's window x[s j + t] against a row declared as inp[r j + t]: j must step r
    times what t steps (a pixel). A stride-2 stage on a stride-1 row (j steps 2 pixels, t
    one) is refused, and a stride-1 stage on a stride-2 row; equal strides pair, j's region
    stride one pixel per unit of the declaration's index."""
    from vdla.compiler.schedule.lower import lower_schedule
    cfg = load_config("pynq")
    x = te.placeholder((stage_stride * 5 + 3, 1, 16), "int8", "x")
    w = te.placeholder((16, 16), "int8", "w")
    t = te.reduce_axis((0, 3), "t")
    y = te.compute((6, 1, 16), lambda j, b, c: te.sum(
        te.cast("int32", x[stage_stride * j + t.var, b, c]) * te.cast("int32", w[c, t.var]), axis=t), "y")
    s = create_schedule(y)
    yl = s.cache_write(y, vdla.SCOPE_ACC)
    s.cache_read(x, vdla.SCOPE_INP, [s[yl]])
    wl = s.cache_read(w, vdla.SCOPE_WGT, [s[yl]])
    j, b, c = s[yl].op.axis
    s[yl].reorder(j, s[yl].op.reduce_axis[0], b, c)
    # (the caches stay at the root: whole tensors, loaded once)
    s[wl].keep_whole(-1)
    s[yl].tensorize(j, vdla.depthwise_row(cfg, 6, row_stride, 1 if row_stride == 2 else 0))
    if stage_stride != row_stride:
        with pytest.raises(TensorizeError, match="must step the same element stride per unit of that index"):
            lower_schedule(s, [x, w, y], "dw")
        return
    func = lower_schedule(s, [x, w, y], "dw")
    intr = []
    visit(func.body, lambda n: intr.append(n) if isinstance(n, S.IntrinsicStmt) else None)
    assert [(n.attrs["width"], n.attrs["stride"]) for n in intr] == [(6, 2)]
    assert intr[0].regions[0].strides[0] == 16          # one pixel per unit of 2j + t
