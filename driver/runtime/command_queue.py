"""CommandQueue: assembles one instruction stream for concrete device buffers and launches it.

This is the instruction-stream JIT of SPEC §6; a compiled VDLA kernel (KernelProgram,
program.py) is a recorded sequence of these calls:

    cq = CommandQueue(device)
    cq.load_2d(MemType.INP, sram_index, buf, elem_offset, x_size, y_size, x_stride, x_pad=(1, 1))
    cq.dep_push(Stage.LOAD, Stage.COMPUTE); cq.dep_pop(Stage.LOAD, Stage.COMPUTE)
    cq.push_gemm(UopKernel.gemm(...))
    cq.store_2d(sram_index, out_buf, elem_offset, x_size)
    result = cq.synchronize()

DRAM operands are a DeviceBuffer plus an offset in elements of the memory type (as in the
instruction's dram_base). Micro-op kernels and the instruction stream live in device DRAM:
each distinct kernel is copied to the device once and stays there for the queue's life;
the stream is written into a growing instruction buffer at synchronize.
"""
from __future__ import annotations

from vdla.hw import AluInsn, DepthwiseInsn, GemmInsn, Insn, MemInsn, MemType, Opcode, disassemble
from vdla.hw.timing import dram_elem_bytes

from ..device import DeviceBuffer, LaunchResult
from .errors import DependenceError, KernelError, RuntimeStreamError
from .insn_queue import InsnQueue, Stage
from .race_check import find_races
from .uop_cache import UopSramCache
from .uop_kernel import KernelMode, UopKernel

# VTA's hosts wait 2^31 cycles for done; a hang is reported as an error after that.
DEFAULT_TIMEOUT_CYCLES = 1 << 31

_LOAD_TYPES = (MemType.INP, MemType.WGT, MemType.ACC, MemType.ACC_8BIT, MemType.LUT)


class CommandQueue:
    def __init__(self, device, timeout_cycles: int | None = DEFAULT_TIMEOUT_CYCLES):
        self.device = device
        self.config = device.config
        self.isa = self.config.isa
        self.timeout_cycles = timeout_cycles
        self.queue = InsnQueue()
        self.uop_sram = UopSramCache(self.config.uop_depth)
        self._kernels: dict = {}        # user key -> UopKernel (built once)
        self._kernel_dram: dict = {}    # UopKernel -> DeviceBuffer holding its encoded micro-ops
        self._insn_buf: DeviceBuffer | None = None
        self.last_stream: list[Insn] = []
        self.last_result: LaunchResult | None = None

    # ---- DMA ------------------------------------------------------------------------------
    def load_2d(self, mem_type, sram_index: int, buf: DeviceBuffer, elem_offset: int, x_size: int,
                y_size: int = 1, x_stride: int | None = None, *, y_pad=(0, 0), x_pad=(0, 0),
                pad_min: bool = False) -> Insn:
        """LOAD of y_size rows of x_size elements (row r at elem_offset + r*x_stride) into
        SRAM from sram_index, with padding rows/columns added by the DMA: zeros, or with
        pad_min the lanes' most negative value (a -128 zero point; max pooling's identity)."""
        mem_type = MemType(mem_type)
        what = f"load_2d({mem_type.name})"
        if mem_type not in _LOAD_TYPES:
            raise RuntimeStreamError(f"{what}: only INP, WGT, ACC, ACC_8BIT and LUT are loaded with load_2d "
                                     "(micro-ops are loaded by push_gemm/push_alu)")
        x_stride = x_size if x_stride is None else x_stride
        dram_base = self._dram_base(what, mem_type, buf, elem_offset, x_size, y_size, x_stride)
        rows = y_pad[0] + y_size + y_pad[1]
        cols = x_pad[0] + x_size + x_pad[1]
        depth = {MemType.INP: self.config.inp_depth, MemType.WGT: self.config.wgt_depth,
                 MemType.LUT: self.config.lut_depth}.get(mem_type, self.config.acc_depth)
        self._check_sram(what, sram_index, rows * cols, depth)
        insn = MemInsn(opcode=Opcode.LOAD, memory_type=mem_type, sram_base=sram_index,
                       dram_base=dram_base, y_size=y_size, x_size=x_size, x_stride=x_stride,
                       y_pad_0=y_pad[0], y_pad_1=y_pad[1], x_pad_0=x_pad[0], x_pad_1=x_pad[1],
                       pad_min=bool(pad_min))
        return self._append(what, insn)

    def store_2d(self, sram_index: int, buf: DeviceBuffer, elem_offset: int, x_size: int,
                 y_size: int = 1, x_stride: int | None = None) -> Insn:
        """STORE of y_size*x_size OUT elements from sram_index (int8 truncations of the
        accumulators) to rows at elem_offset + r*x_stride."""
        what = "store_2d(OUT)"
        x_stride = x_size if x_stride is None else x_stride
        if y_size > 1 and x_stride < x_size:
            raise RuntimeStreamError(f"{what}: x_stride {x_stride} < x_size {x_size} would overlap rows")
        dram_base = self._dram_base(what, MemType.OUT, buf, elem_offset, x_size, y_size, x_stride)
        self._check_sram(what, sram_index, x_size * y_size, self.config.out_depth)
        insn = MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=sram_index,
                       dram_base=dram_base, y_size=y_size, x_size=x_size, x_stride=x_stride)
        return self._append(what, insn)

    def _dram_base(self, what, mem_type, buf, elem_offset, x_size, y_size, x_stride) -> int:
        if x_size < 1 or y_size < 1:
            raise RuntimeStreamError(f"{what}: x_size and y_size must be at least 1 (got {x_size}, {y_size}); "
                                     "use dep_push/dep_pop for dependence-only instructions")
        eb = dram_elem_bytes(self.config, mem_type)
        if buf.addr % eb:
            raise RuntimeStreamError(f"{what}: {buf!r} is not aligned to the {eb}-byte {mem_type.name} "
                                     "element; allocate it with align >= the element size")
        last = elem_offset + (y_size - 1) * x_stride + x_size
        if elem_offset < 0 or last * eb > buf.nbytes:
            raise RuntimeStreamError(
                f"{what}: elements [{elem_offset}, {last}) of {eb} B reach byte {last * eb}, outside "
                f"{buf!r} (x_size={x_size}, y_size={y_size}, x_stride={x_stride})")
        return buf.addr // eb + elem_offset

    @staticmethod
    def _check_sram(what: str, first: int, count: int, depth: int) -> None:
        if first < 0 or first + count > depth:
            raise RuntimeStreamError(f"{what}: SRAM elements [{first}, {first + count}) exceed the buffer "
                                     f"depth {depth}")

    def _append(self, what: str, insn: Insn) -> Insn:
        try:
            self.isa.encode(insn)  # field ranges checked now, where the caller can be named
        except ValueError as exc:
            raise RuntimeStreamError(f"{what}: {exc}") from None
        return self.queue.append(insn)

    # ---- micro-op kernels ---------------------------------------------------------------
    def kernel(self, key, build) -> UopKernel:
        """The kernel cached under `key`, calling build() only the first time."""
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = build()
            if not isinstance(kernel, UopKernel):
                raise KernelError(f"kernel builder for key {key!r} returned {type(kernel).__name__}, "
                                  "not a UopKernel")
            kernel.validate(self.config)
            self._kernel_dram.setdefault(kernel, None)
            self._kernels[key] = kernel
        return kernel

    def push_gemm(self, kernel: UopKernel) -> Insn:
        if kernel.mode is not KernelMode.GEMM:
            raise KernelError(f"push_gemm got an {kernel.describe()}; use push_alu")
        return self._push(kernel)

    def push_alu(self, kernel: UopKernel) -> Insn:
        if kernel.mode is not KernelMode.ALU:
            raise KernelError(f"push_alu got a {kernel.describe()}; use push_gemm")
        return self._push(kernel)

    def _push(self, kernel: UopKernel) -> Insn:
        if kernel not in self._kernel_dram:
            kernel.validate(self.config)
            self._kernel_dram[kernel] = None
        begin, new = self.uop_sram.place(kernel)
        n = len(kernel.uops)
        if new:
            buf = self._kernel_dram[kernel]
            if buf is None:
                buf = self.device.alloc(n * self.config.uop_elem_bytes, align=64)
                self.device.write(buf, self.isa.encode_uops(kernel.uops))
                self._kernel_dram[kernel] = buf
            self.queue.append(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=begin,
                                      dram_base=buf.addr // self.config.uop_elem_bytes,
                                      y_size=1, x_size=n, x_stride=n))
        outer, inner = kernel.padded_loops()
        common = dict(reset=kernel.reset, requant=kernel.requant, uop_begin=begin, uop_end=begin + n,
                      iter_out=outer.extent, iter_in=inner.extent,
                      dst_factor_out=outer.dst, dst_factor_in=inner.dst,
                      src_factor_out=outer.src, src_factor_in=inner.src)
        if kernel.mode is KernelMode.GEMM:
            kind = DepthwiseInsn if kernel.depthwise else GemmInsn
            insn = kind(**common, wgt_factor_out=outer.wgt, wgt_factor_in=inner.wgt)
        else:
            insn = AluInsn(**common, alu_opcode=kernel.alu_op, use_imm=kernel.use_imm, imm=kernel.imm)
        return self._append(kernel.describe(), insn)

    def kernel_buffer(self, kernel: UopKernel) -> DeviceBuffer | None:
        """The device buffer holding `kernel`'s encoded micro-ops (None before its first load)."""
        return self._kernel_dram.get(kernel)

    # ---- dependences --------------------------------------------------------------------
    def dep_push(self, src: Stage, dst: Stage) -> None:
        """Signal from stage `src` to stage `dst` once src's instructions so far are done."""
        self.queue.dep_push(src, dst)

    def dep_pop(self, src: Stage, dst: Stage) -> None:
        """Make stage `dst`'s next instruction wait for a token from stage `src`."""
        self.queue.dep_pop(src, dst)

    # ---- launch -------------------------------------------------------------------------
    @property
    def instructions(self) -> list[Insn]:
        return self.queue.insns

    def disassemble(self) -> str:
        return disassemble(self.queue.insns)

    def finish_stream(self) -> list[Insn]:
        """End the stream (compute waits for the last load and store, FINISH) and start a new
        one; returns the finished instructions. synchronize() = finish_stream() + launch."""
        try:
            return self.queue.finish()
        finally:
            self.queue = InsnQueue()
            self.uop_sram.clear()

    def synchronize(self, timeout_cycles: int | None = None, check_races: bool = False) -> LaunchResult:
        """Finish the stream, launch it and wait for done (LaunchTimeout past the budget).
        check_races: first prove that tokens order every cross-module SRAM conflict
        (DependenceError naming the instructions otherwise); costs host time, not cycles."""
        stream = self.finish_stream()
        self.last_stream = stream
        if check_races:
            self.check_races(stream)
        words = self.isa.encode_stream(stream)
        if self._insn_buf is None or self._insn_buf.nbytes < words.size:
            if self._insn_buf is not None:
                self.device.free(self._insn_buf)
            self._insn_buf = self.device.alloc(max(words.size, 1 << 12) * 2, align=64)
        self.device.write(self._insn_buf, words)
        budget = self.timeout_cycles if timeout_cycles is None else timeout_cycles
        self.last_result = self.device.launch(self._insn_buf.addr, len(stream), budget)
        return self.last_result

    def check_races(self, stream: list[Insn]) -> None:
        """DependenceError unless tokens order every cross-module SRAM conflict of `stream`."""
        by_address = {buf.addr // self.config.uop_elem_bytes: kernel
                      for kernel, buf in self._kernel_dram.items() if buf is not None}

        def uop_fields(dram_base: int, count: int):
            kernel = by_address.get(dram_base)
            if kernel is None:
                raise RuntimeStreamError(f"LOAD UOP from dram_base {dram_base} reads no kernel of this queue")
            return self.isa.decode_uop_fields(self.isa.encode_uops(kernel.uops[:count]))

        races = find_races(stream, uop_fields)
        if races:
            raise DependenceError("the stream has data races between modules: "
                                  + "; ".join(r.describe(stream) for r in races[:3])
                                  + ". Add dep_push/dep_pop pairs that order them")

    def close(self) -> None:
        """Give the queue's device memory (instruction buffer, kernel copies) back."""
        for buf in [self._insn_buf, *self._kernel_dram.values()]:
            if buf is not None:
                self.device.free(buf)
        self._insn_buf = None
        self._kernel_dram.clear()
        self._kernels.clear()
