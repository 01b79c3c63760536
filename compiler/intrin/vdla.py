"""VDLA accelerator intrinsics, declared for tensorize (emitted as IntrinsicStmt; the VDLA
backend, compiler/codegen/vdla, turns them into GEMM/ALU instructions and micro-ops).

Every shape and dtype comes from the hardware config (vdla.hw): BATCH rows, BLOCK input and
output lanes, the input/weight/accumulator widths.

gemm(config): acc[b, o] += sum_i acc_t(inp[b, i]) * acc_t(wgt[o, i]), operands in the
accelerator's on-chip buffers (scopes vdla.inp, vdla.wgt, vdla.acc), each tile contiguous
(the on-chip buffers hold whole elements).
depthwise_row(config, width, stride, zero_tiles): a row of a depthwise 1 x TAPS filter
(DEPTHWISE), its window sliding 1 or 2 pixels per output (ROW_STRIDES).
alu(op, config, imm) / alu_shr(shift, config): one accumulator element, lane-wise.
alu_requant(config, shift): an accumulator element written back to OUT through
the requantizer, whose registers (scope vdla.req) setq(config) loads from accumulators.
alu_lut(config): one accumulator element through the lookup table (scope vdla.lut, loaded by
LOAD LUT): each lane saturated to int8 reads its entry (`lookup`, the table read as a gather,
which tensorize takes whole: intrinsic `gathers`). The lane
operations and the immediates they accept are vdla.hw.alu_ops'; the declarations restate the
operations as loop-IR expressions (the language tensorize matches in), and
tests/compiler/intrin/test_vdla_alu_declarations.py runs them against vdla.hw's statement.
"""
from __future__ import annotations

from vdla.hw.alu_ops import LANE_BITS, SHR_MAX, TABLE_MAX, TABLE_MIN, immediate_error
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.isa import AluOp
from vdla.hw.requantizer import BIAS, CTRL, CTRL_FIELDS, MUL, MUL_BITS, REGISTERS, SHIFT_MAX

from .. import te
from ..tir import expr as E
from ..tir import stmt as S
from .declaration import declare_intrin

SCOPE_INP, SCOPE_WGT, SCOPE_ACC, SCOPE_LUT = "vdla.inp", "vdla.wgt", "vdla.acc", "vdla.lut"
# the requantizer's registers (vdla.hw.requantizer), per lane, as a (registers, BATCH, BLOCK) buffer
SCOPE_REQ = "vdla.req"
# The strides of a DEPTHWISE row's outputs: its window slides one pixel per micro-op, and at
# stride 2 every other micro-op reads a zero tile (depthwise_row)
ROW_STRIDES = (1, 2)
# At stride 2, the micro-op steps between a zero tile's write to an output and the output's own
# write (codegen/vdla's window rows)
ZERO_WRITE_DISTANCE = 3


def row_stride_problem(config, stride: int) -> str | None:
    """Why DEPTHWISE rows cannot take column stride `stride` on `config`, or None."""
    if stride not in ROW_STRIDES:
        return f"a DEPTHWISE row's outputs are {' or '.join(map(str, ROW_STRIDES))} pixels apart, not {stride}"
    if stride == 2 and config.timing.acc_raw_min_distance > ZERO_WRITE_DISTANCE:
        return (f"at stride 2 a row writes an accumulator {ZERO_WRITE_DISTANCE} micro-ops apart, and config "
                f"{config.name} needs {config.timing.acc_raw_min_distance} (timing.acc_raw_min_distance)")
    return None


def _dtypes(config):
    return f"int{config.inp_bits}", f"int{config.wgt_bits}", f"int{config.acc_bits}"


def gemm(config):
    batch, block_in, block_out = config.batch, config.block, config.block
    inp_t, wgt_t, acc_t = _dtypes(config)
    inp = te.placeholder((batch, block_in), inp_t, "inp")
    wgt = te.placeholder((block_out, block_in), wgt_t, "wgt")
    k = te.reduce_axis((0, block_in), "k")
    acc = te.compute((batch, block_out), lambda b, o: te.sum(
        te.cast(acc_t, inp[b, k.var]) * te.cast(acc_t, wgt[o, k.var]), axis=k), name="acc")

    def emit(ins, out, accumulate):
        return S.IntrinsicStmt("vdla.gemm", [_view(r) for r in ins] + [_view(out)],
                               {"reset": not accumulate, "offsets": [str(r.offset) for r in ins + [out]]})

    return declare_intrin(f"vdla_gemm_{batch}x{block_in}x{block_out}", acc, emit,
                          scopes={"inp": (SCOPE_INP,), "wgt": (SCOPE_WGT,), "acc": (SCOPE_ACC,)},
                          strides={"inp": (block_in, 1), "wgt": (block_in, 1), "acc": (block_out, 1)},
                          doc="int8 x int8 -> int32 GEMM tile on the VDLA core")


def depthwise_row(config, width: int, stride: int = 1, zero_tiles: int = 0):
    """DEPTHWISE (vdla.hw.depthwise): a row of `width` outputs of a 1 x TAPS filter, channel by
    channel: acc[j, b, c] += sum_t inp[stride * j + t, b, c] * wgt[c, t]. The input is a window
    of stride * (width - 1) + TAPS pixels (any pixel stride in vdla.inp, the same for j and
    t); the weight tile holds channel c's taps in row c, lanes 0..TAPS-1. Emitted as one row of
    micro-ops (codegen/vdla), one per input pixel: the first TAPS - 1 fill the window, then at
    stride 1 each writes an output; at stride 2 every other one reads the zero tile
    `zero_tiles` tiles after wgt in its SRAM buffer and adds nothing to an output."""
    problem = row_stride_problem(config, stride)
    if problem or (stride == 2) != (zero_tiles > 0):
        raise ValueError(f"depthwise_row: stride {stride} with {zero_tiles} zero tiles: "
                         f"{problem or 'a row takes stride 1, or 2 with zero tiles'}")
    batch, block = config.batch, config.block
    inp_t, wgt_t, acc_t = _dtypes(config)
    inp = te.placeholder((stride * (width - 1) + DEPTHWISE_TAPS, batch, block), inp_t, "inp")
    wgt = te.placeholder((block, block), wgt_t, "wgt")
    t = te.reduce_axis((0, DEPTHWISE_TAPS), "t")
    acc = te.compute((width, batch, block), lambda j, b, c: te.sum(
        te.cast(acc_t, inp[stride * j + t.var, b, c]) * te.cast(acc_t, wgt[c, t.var]),
        axis=t), name="acc")

    def emit(ins, out, accumulate):
        return S.IntrinsicStmt("vdla.depthwise", [_view(r) for r in ins] + [_view(out)],
                               {"reset": not accumulate, "width": width, "stride": stride, "zero_tiles": zero_tiles})

    return declare_intrin(f"vdla_depthwise_{batch}x{block}_w{width}" + (f"_s{stride}" if stride > 1 else ""),
                          acc, emit,
                          scopes={"inp": (SCOPE_INP,), "wgt": (SCOPE_WGT,), "acc": (SCOPE_ACC,)},
                          strides={"inp": (None, block, 1), "wgt": (block, 1), "acc": (None, block, 1)},
                          doc="a row of a depthwise 1 x TAPS filter on the VDLA core (DEPTHWISE)")


def _view(region):
    return S.Buffer(region.operand, region.shape, region.dtype, scope=region.scope,
                    strides=region.strides, elem_offset=region.offset, data=region.buffer)


# The tensor-operand lane operations as loop-IR expressions, keyed by the stage's op name
# (the AluOp's name in lower case); SHR, a right shift by an immediate only, is `alu_shr`.
_EXPRESSIONS = {
    AluOp.MIN: lambda a, b: E.Min(a, b),
    AluOp.MAX: lambda a, b: E.Max(a, b),
    AluOp.ADD: lambda a, b: a + b,
    AluOp.MUL: lambda a, b: a * b,
}
ALU_OPS = {op.name.lower(): expr for op, expr in _EXPRESSIONS.items()}

# The longest right shift one declaration states: the loop IR writes SHR as floor division
# by 2^shift, an int32 constant, which 2^31 is not. A longer shift is two SHRs (a floor of a
# floor is one floor): apply_epilogue splits it.
MAX_SHIFT = min(SHR_MAX, LANE_BITS - 2)


def alu(op, config, imm=None):
    """VDLA ALU on an accumulator element: dst[b, o] = op(src[b, o], imm or other[b, o]),
    lane-wise in scope vdla.acc (SPEC: MIN, MAX, ADD, MUL; SHR is `alu_shr`).
    With `imm` the declaration holds that constant, so a stage matches only the same value."""
    if op not in ALU_OPS:
        raise ValueError(f"VDLA ALU op {op!r}: expected one of {sorted(ALU_OPS)} (or alu_shr)")
    if imm is not None and (problem := immediate_error(AluOp[op.upper()], int(imm))):
        raise ValueError(f"VDLA ALU {op}: {problem}")
    batch, block_out, acc_t = config.batch, config.block, _dtypes(config)[2]
    src = te.placeholder((batch, block_out), acc_t, "src")
    if imm is None:
        other = te.placeholder((batch, block_out), acc_t, "other")
        dst = te.compute((batch, block_out), lambda b, o: ALU_OPS[op](src[b, o], other[b, o]), name="dst")
    else:
        dst = te.compute((batch, block_out), lambda b, o: ALU_OPS[op](src[b, o], E.Const(int(imm), acc_t)),
                         name="dst")
    return _declare_alu(f"vdla_alu_{op}" + ("" if imm is None else f"_imm{imm}"), dst, op, imm, block_out)


def alu_shr(shift, config):
    """Arithmetic shift right by a positive immediate, i.e. floor division by 2**shift."""
    if not 0 < shift <= MAX_SHIFT:
        raise ValueError(f"alu_shr: shift {shift} outside 1..{MAX_SHIFT} (longer right shifts are two SHRs)")
    batch, block_out, acc_t = config.batch, config.block, _dtypes(config)[2]
    src = te.placeholder((batch, block_out), acc_t, "src")
    dst = te.compute((batch, block_out), lambda b, o: src[b, o] // (1 << shift), name="dst")
    return _declare_alu(f"vdla_alu_shr_imm{shift}", dst, "shr", shift, block_out)


def lookup(table, x):
    """The lookup table's entry for the int32 value x as a loop-IR expression (int32): x
    saturated to int8 indexes the TABLE_ENTRIES entries that `table` holds as LOAD LUT lays
    them out, (elements, BATCH, BLOCK) with entry e at element e // lanes, lane e % lanes."""
    _, batch, block = table.shape
    entry = E.Max(E.Min(x, E.Const(TABLE_MAX, "int32")), E.Const(TABLE_MIN, "int32")) - E.Const(TABLE_MIN, "int32")
    return te.cast("int32", table[entry // (batch * block), (entry // block) % batch, entry % block])


def alu_lut(config):
    """ALU LUT on an accumulator element: dst[b, o] = the table's entry for src[b, o]."""
    batch, block_out, acc_t = config.batch, config.block, _dtypes(config)[2]
    src = te.placeholder((batch, block_out), acc_t, "src")
    table = te.placeholder((config.lut_depth, batch, block_out), "int8", "table")
    dst = te.compute((batch, block_out), lambda b, o: lookup(table, src[b, o]), name="dst")
    def emit(ins, out, accumulate):
        # the table is the ALU's own state (LOAD LUT filled it); the instruction names only the
        # accumulators, and its operand is an ignored immediate: one cycle per micro-op
        (acc,) = [r for r in ins if r.operand == "src"]
        return S.IntrinsicStmt("vdla.alu", [_view(acc), _view(out)], {"op": "lut", "imm": 0})
    return declare_intrin("vdla_alu_lut", dst, emit,
                          scopes={"src": (SCOPE_ACC,), "dst": (SCOPE_ACC,), "table": (SCOPE_LUT,)},
                          strides={"src": (block_out, 1), "dst": (block_out, 1)}, gathers={"table"},
                          doc="VDLA ALU LUT: an accumulator tile through the lookup table")


# The longest shift the requantizer's declaration states: its rounding constant 2^(shift-1)
# and divisor 2^shift are int64 constants.
REQUANT_SHIFT_MAX = min(SHIFT_MAX, 62)


def requantize(x, bias, mul, ctrl, shift: int):
    """What the requantizer writes to OUT for the int32 value x (vdla.hw.requantizer) as a
    loop-IR expression (int32): bias, mul and ctrl are its registers' lanes; the shift that
    CTRL holds is stated as the constant `shift` (the loop IR has no shift by a variable), the
    zero point and the clip are read from CTRL. Exact in int64: (x + b) * m has 51 bits."""
    def i64(v):
        return te.cast("int64", v)

    def c(v):
        return E.Const(v, "int64")

    def field(name):
        _, lsb, width, signed = next(f for f in CTRL_FIELDS if f[0] == name)
        v = E.FloorDiv(i64(ctrl), c(1 << lsb))
        if not signed:
            return E.FloorMod(v, c(1 << width))
        return E.FloorMod(v + c(1 << (width - 1)), c(1 << width)) - c(1 << (width - 1))

    half = 1 << (MUL_BITS - 1)
    m = E.FloorMod(i64(mul) + c(half), c(1 << MUL_BITS)) - c(half)
    # x as the int32 the ALU hands over (wrapped): the CPU's loop IR keeps int32 scalars wider
    lane = 1 << (LANE_BITS - 1)
    x = E.FloorMod(i64(x) + c(lane), c(2 * lane)) - c(lane)
    t = (x + i64(bias)) * m
    if shift:
        t = E.FloorDiv(t + c(1 << (shift - 1)), c(1 << shift))
    y = E.Min(E.Max(t + field("zero"), field("lo")), field("hi"))
    return te.cast("int32", y)


def alu_requant(config, shift: int, addend: bool = False, table: bool = False):
    """An accumulator element written back through the requantizer: OUT = requantize(src)
    (with `addend`: requantize(src + other), a tensor operand; with `table`: the lookup
    table's entry for that, CTRL's table bit, the table in scope vdla.lut) with the registers of scope
    vdla.req (loaded by SETQ; `setq`) whose CTRL holds `shift` (a stage matches only the same
    shift). ALU FLUSH with the requant bit: one cycle per micro-op (two with the addend), and
    the accumulator is left 0, so the next tile's GEMMs need no reset there; the value the
    stage means is in OUT, which the STORE reads."""
    if not 0 <= shift <= REQUANT_SHIFT_MAX:
        raise ValueError(f"requantizer shift {shift} outside 0..{REQUANT_SHIFT_MAX}")
    batch, block_out, acc_t = config.batch, config.block, _dtypes(config)[2]
    src = te.placeholder((batch, block_out), acc_t, "src")
    other = te.placeholder((batch, block_out), acc_t, "other") if addend else None
    # (one channel block's registers: the stage reads its block's, which SETQ put there)
    req = te.placeholder((1, len(REGISTERS), batch, block_out), acc_t, "req")
    lut = te.placeholder((config.lut_depth, batch, block_out), "int8", "table") if table else None

    def value(b, o):
        x = src[b, o] + other[b, o] if addend else src[b, o]
        y = requantize(x, req[0, BIAS, b, o], req[0, MUL, b, o], req[0, CTRL, b, o], shift)
        return lookup(lut, y) if table else y
    dst = te.compute((batch, block_out), value, name="dst")

    def emit(ins, out, accumulate):
        acc = next(r for r in ins if r.operand == "src")
        if addend:
            operand = next(r for r in ins if r.operand == "other")
            return S.IntrinsicStmt("vdla.alu", [_view(acc), _view(operand), _view(out)],
                                   {"op": "flush", "imm": None, "requant": True})
        return S.IntrinsicStmt("vdla.alu", [_view(acc), _view(out)], {"op": "flush", "imm": 0, "requant": True})
    acc_scoped = ("src", "dst") + (("other",) if addend else ())
    return declare_intrin(f"vdla_alu_requant_s{shift}" + ("_add" if addend else "") + ("_lut" if table else ""), dst,
                          emit, scopes={**{n: (SCOPE_ACC,) for n in acc_scoped}, "req": (SCOPE_REQ,),
                                        **({"table": (SCOPE_LUT,)} if table else {})},
                          strides={n: (block_out, 1) for n in acc_scoped}, gathers={"table"} if table else set(),
                          doc="VDLA ALU FLUSH whose OUT writes go through the requantizer")


def setq(config):
    """ALU SETQ: one requantizer register (every lane) <- an accumulator element; the stage
    that copies a (registers, BATCH, BLOCK) tile from vdla.acc into vdla.req is tensorized
    with it at its lane axes."""
    batch, block_out, acc_t = config.batch, config.block, _dtypes(config)[2]
    src = te.placeholder((batch, block_out), acc_t, "src")
    dst = te.compute((batch, block_out), lambda b, o: src[b, o], name="dst")

    def emit(ins, out, accumulate):
        # the tensor-operand form: the destination (the register) in place, the source the operand
        return S.IntrinsicStmt("vdla.alu", [_view(out), _view(ins[0]), _view(out)], {"op": "setq", "imm": None})
    return declare_intrin("vdla_alu_setq", dst, emit, scopes={"src": (SCOPE_ACC,), "dst": (SCOPE_REQ,)},
                          strides={"src": (block_out, 1), "dst": (block_out, 1)},
                          doc="VDLA ALU SETQ: a requantizer register from an accumulator element")


def _declare_alu(name, dst, op, imm, block_out):
    def emit(ins, out, accumulate):
        return S.IntrinsicStmt("vdla.alu", [_view(r) for r in ins] + [_view(out)],
                               {"op": op, "imm": imm})
    names = [t.name for t in dst.op.input_tensors] + ["dst"]
    return declare_intrin(name, dst, emit, scopes={n: (SCOPE_ACC,) for n in names},
                          strides={n: (block_out, 1) for n in names},
                          doc=f"VDLA ALU {op} on an accumulator tile")
