"""The launch control sequence (vdla.driver.control) against a register-file model: the
order of register operations, the ID check, timeouts and the error bit."""
import pytest

from vdla.driver.control import (COUNTER_REGISTERS, ConfigMismatch, HardwareError, launch_sequence,
                                 run_sync)
from vdla.driver.device import DeviceError, LaunchTimeout
from vdla.hw import load_config, regmap


class Registers:
    """Answers like the control block: done after `polls` CONTROL reads following start."""

    def __init__(self, hw_id, polls=2, error=0, never_done=False):
        self.values = {r.offset: 0 for r in regmap.REGISTERS}
        self.values[regmap.OFFSET["HW_ID"]] = hw_id
        self.log, self.polls, self.error, self.never_done = [], polls, error, never_done
        self.started = False

    def read(self, offset):
        self.log.append(("r", offset))
        if offset == regmap.OFFSET["CONTROL"] and self.started:
            self.polls -= 1
            if self.polls <= 0 and not self.never_done:
                return regmap.DONE | (regmap.ERROR if self.error else 0)
            return regmap.RUNNING
        if offset == regmap.OFFSET["ERROR_CAUSE"]:
            return self.error
        if offset == regmap.OFFSET["CYCLES"]:
            return 1234
        return self.values[offset]

    def write(self, offset, value):
        self.log.append(("w", offset, value))
        if offset == regmap.OFFSET["CONTROL"] and value & regmap.START:
            self.started = True


def _run(regs, config, **kw):
    return run_sync(launch_sequence(config, 0x2000, 5, **kw), regs.read, regs.write, config.clock_mhz,
                    poll_interval_s=0, min_timeout_s=0.05)


def test_sequence_programs_starts_waits_and_reads_counters():
    config = load_config("pynq")
    regs = Registers(config.hash32)
    result = _run(regs, config)
    off = regmap.OFFSET
    writes = [e for e in regs.log if e[0] == "w"]
    assert writes == [("w", off["INSN_ADDR"], 0x2000), ("w", off["INSN_COUNT"], 5), ("w", off["CONTROL"], regmap.START)]
    assert regs.log[0] == ("r", off["HW_ID"])
    assert result.cycles == 1234
    assert set(result.counters) == set(COUNTER_REGISTERS)
    assert set(result.stats()) >= {"busy_cycles", "token_stall_cycles", "fetch_stall_cycles", "gemm_uops"}


def test_wrong_hardware_id_is_refused_before_any_write():
    config = load_config("pynq")
    regs = Registers(config.hash32 ^ 1)
    with pytest.raises(ConfigMismatch, match="ID register"):
        _run(regs, config)
    assert not [e for e in regs.log if e[0] == "w"]


def test_error_bit_raises_with_the_cause():
    config = load_config("pynq")
    regs = Registers(config.hash32, error=regmap.ERR_SRAM_RANGE)
    with pytest.raises(HardwareError, match="SRAM index") as info:
        _run(regs, config)
    assert info.value.cause == regmap.ERR_SRAM_RANGE


def test_no_done_is_a_timeout_not_a_hang():
    config = load_config("pynq")
    with pytest.raises(LaunchTimeout):
        _run(Registers(config.hash32, never_done=True), config, max_cycles=10)


def test_unaligned_stream_is_refused():
    config = load_config("pynq")
    regs = Registers(config.hash32)
    with pytest.raises(DeviceError, match="aligned"):
        run_sync(launch_sequence(config, 0x2004, 1), regs.read, regs.write, config.clock_mhz)
