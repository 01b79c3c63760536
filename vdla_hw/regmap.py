"""The VDLA AXI-lite register map (SPEC §5): the one place register offsets are defined.

The RTL's control block gets these offsets through the generated SystemVerilog package
(vdla.hw.rtl_params), and every driver (RTL under Verilator, PYNQ board) reads them from
here through vdla.driver.control, so the two can never disagree.

All registers are 32 bit. Counters cover one launch (cleared by start) and count cycles
of the accelerator clock.
"""
from __future__ import annotations

from dataclasses import dataclass

REG_BITS = 32       # every register (the AXI-lite data width)


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str       # "rw", "ro" or "w1" (write-one-to-act control bits)
    doc: str


# CONTROL bits
START = 1 << 0      # write 1: launch (ignored while running)
DONE = 1 << 1       # read: FINISH completed (cleared by start)
ERROR = 1 << 2      # read: the hardware flagged an error (cause in ERROR_CAUSE)
RUNNING = 1 << 3    # read: launched and not yet done
CONTROL_BITS = {"START": START, "DONE": DONE, "ERROR": ERROR, "RUNNING": RUNNING}

# ERROR_CAUSE bits (sticky for one launch)
ERR_DECODE = 1 << 0        # unknown opcode/memory type, LOAD into OUT, STORE not from OUT
ERR_SRAM_RANGE = 1 << 1    # an SRAM index (sram_base range, micro-op field, uop range) past the depth
ERR_DRAM = 1 << 2          # the memory answered a DRAM access with an error response
ERR_TOKEN_OVERFLOW = 1 << 3  # a token queue got more tokens than its depth
ERR_FINISH_STATE = 1 << 4  # at FINISH a token queue was not empty or load/store still had work
ERR_FLAG = 1 << 5          # a dependence flag the module has no queue for

ERROR_CAUSES = {
    ERR_DECODE: "decode: unknown opcode or memory type, LOAD into OUT or STORE not from OUT",
    ERR_SRAM_RANGE: "an SRAM index past the buffer depth",
    ERR_DRAM: "a DRAM access answered with an AXI error response (address out of range)",
    ERR_TOKEN_OVERFLOW: "a dependence-token queue overflowed",
    ERR_FINISH_STATE: "tokens left in a queue, or load/store still busy, when FINISH completed",
    ERR_FLAG: "a dependence flag set that the instruction's module has no queue for",
}

REGISTERS = (
    Register("CONTROL", 0x00, "rw", "bit0 start (write 1), bit1 done, bit2 error, bit3 running"),
    Register("HW_ID", 0x04, "ro", "config hash of the ISA instance (HwConfig.hash32)"),
    Register("INSN_ADDR", 0x08, "rw", "byte address of the instruction stream (16-B aligned)"),
    Register("INSN_COUNT", 0x0C, "rw", "number of instructions to fetch"),
    Register("CYCLES", 0x10, "ro", "cycles from launch to the end of FINISH"),
    Register("ERROR_CAUSE", 0x14, "ro", "which checks failed (ERR_* bits)"),
    Register("BUSY_LOAD", 0x20, "ro", "cycles the load module executed instructions"),
    Register("BUSY_COMPUTE", 0x24, "ro", "cycles the compute module executed instructions"),
    Register("BUSY_STORE", 0x28, "ro", "cycles the store module executed instructions"),
    Register("TOKEN_STALL_LOAD", 0x2C, "ro", "cycles load held an instruction waiting for tokens"),
    Register("TOKEN_STALL_COMPUTE", 0x30, "ro", "cycles compute held an instruction waiting for tokens"),
    Register("TOKEN_STALL_STORE", 0x34, "ro", "cycles store held an instruction waiting for tokens"),
    Register("FETCH_STALL_LOAD", 0x38, "ro", "cycles load idled waiting for its next instruction"),
    Register("FETCH_STALL_COMPUTE", 0x3C, "ro", "cycles compute idled waiting for its next instruction"),
    Register("FETCH_STALL_STORE", 0x40, "ro", "cycles store idled waiting for its next instruction"),
    Register("GEMM_UOPS", 0x44, "ro", "GEMM micro-ops executed (reset micro-ops excluded)"),
    Register("ALU_UOPS", 0x48, "ro", "ALU micro-ops executed (reset micro-ops excluded)"),
    Register("LOAD_BYTES_UOP", 0x4C, "ro", "DRAM bytes loaded as micro-ops (padding excluded)"),
    Register("LOAD_BYTES_WGT", 0x50, "ro", "DRAM bytes loaded into WGT"),
    Register("LOAD_BYTES_INP", 0x54, "ro", "DRAM bytes loaded into INP"),
    Register("LOAD_BYTES_ACC", 0x58, "ro", "DRAM bytes loaded into ACC as int32"),
    Register("LOAD_BYTES_ACC_8BIT", 0x5C, "ro", "DRAM bytes loaded into ACC as int8"),
    Register("STORE_BYTES", 0x60, "ro", "DRAM bytes stored from OUT"),
    Register("LOAD_BYTES_LUT", 0x64, "ro", "DRAM bytes loaded into the ALU's lookup table"),
)
# Every register from BUSY_LOAD on is a 32-bit counter, contiguous, in this order: the RTL
# reads counter k at BUSY_LOAD + 4k.
COUNTERS = tuple(r.name for r in REGISTERS if r.offset >= 0x20)
assert [r.offset for r in REGISTERS if r.offset >= 0x20] == [0x20 + 4 * k for k in range(len(COUNTERS))]

BY_NAME = {r.name: r for r in REGISTERS}
OFFSET = {r.name: r.offset for r in REGISTERS}
ADDR_BITS = 8  # the block decodes offsets below 1 << ADDR_BITS

MODULES = ("load", "compute", "store")


def describe_error(cause: int) -> str:
    """Human-readable list of the ERROR_CAUSE bits that are set."""
    names = [text for bit, text in ERROR_CAUSES.items() if cause & bit]
    return "; ".join(names) if names else "no cause recorded"
