"""VTA compatibility of a compiled kernel: replay a KernelProgram into the stream a device
would run and check it with vdla.simulator.vta_check (the micro-ops come from the replay's
DRAM image, exactly as the hardware would read them)."""
from __future__ import annotations

from vdla.hw import require_config


def check_program_vta(program, config) -> list:
    """The VtaFindings of `program`'s stream (an empty list: VTA computes what VDLA does).
    The buffers are placeholders: which addresses they get does not change the findings."""
    from vdla.simulator.vta_check import check_vta

    from ..devices import SimulatorDevice
    from .command_queue import CommandQueue
    config = require_config(config)
    uop_bytes = sum(len(k.uops) for k in program.kernels) * config.uop_elem_bytes
    need = sum(p.nbytes + 4096 for p in program.params) + uop_bytes + (1 << 20)
    device = SimulatorDevice(config, dram_bytes=1 << max(need - 1, 1).bit_length())
    cq = CommandQueue(device)
    try:
        buffers = [device.alloc(max(p.nbytes, 1), align=max(64, p.elem_bytes)) for p in program.params]
        program.replay(cq, buffers)
        stream = cq.finish_stream()
        return check_vta(stream, device.dram, config)
    finally:
        cq.close()
        device.close()
