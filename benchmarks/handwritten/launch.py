"""Running a hand-written program once: its input and weight operands (packed, SPEC §7) in
device buffers, the program emitted into a command queue and synchronized, the packed int8
output read back, every buffer given back."""
from __future__ import annotations

import numpy as np

from vdla.driver.device import device_buffers
from vdla.driver.runtime import CommandQueue


def run_handwritten(device, inp: np.ndarray, wgt: np.ndarray, out_shape, emit, cq: CommandQueue | None = None,
                    check_races: bool = False):
    """-> (the packed int8 output of `out_shape`, LaunchResult). `emit(cq, inp_buf, wgt_buf,
    out_buf)` emits the program; a `cq` given by the caller stays open for its next program."""
    cfg = device.config
    own_cq = cq is None
    cq = cq or CommandQueue(device)
    sizes = [(inp.nbytes, cfg.inp_elem_bytes), (wgt.nbytes, cfg.wgt_elem_bytes),
             (int(np.prod(out_shape)), cfg.out_elem_bytes)]
    try:
        with device_buffers(device, sizes) as bufs:
            device.write(bufs[0], inp)
            device.write(bufs[1], wgt)
            emit(cq, *bufs)
            result = cq.synchronize(check_races=check_races)
            out = device.read(bufs[2], np.int8, out_shape)
    finally:
        if own_cq:
            cq.close()
    return out, result
