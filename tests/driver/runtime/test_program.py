"""KernelProgram: the compiled VDLA kernel the deploy runtime replays. Its JSON form round-trips
to the same instruction stream, replay refuses what does not fit (another config, missing or
short buffers, malformed documents), and ProgramRunner assembles a stream once per buffer set."""
import json

import numpy as np
import pytest

from vdla.compiler.topi.vdla import ConvLayer, Epilogue, compile_conv2d
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import (CommandQueue, KernelProgram, ProgramRunner, RuntimeStreamError,
                                 run_program)
from vdla.hw import HwConfig, load_config


@pytest.fixture(scope="module")
def program():
    prog, _ = compile_conv2d(load_config("pynq"), ConvLayer(1, 2, 6, 5, 2), Epilogue(bias=True, shift=7, lo=0))
    return prog


def _stream(prog, cq, bufs):
    prog.replay(cq, bufs)
    return [repr(i) for i in cq.finish_stream()]


def _bufs(dev, prog):
    return [dev.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]


def test_json_round_trip_gives_the_same_stream(program):
    dev = SimulatorDevice(None, dram_bytes=1 << 22)
    bufs = _bufs(dev, program)
    again = KernelProgram.from_json(program.to_json())
    assert again.to_dict() == program.to_dict()
    cq = CommandQueue(dev)      # one queue: equal micro-op kernels share their DRAM copy
    assert _stream(again, cq, bufs) == _stream(program, cq, bufs)
    assert [p.name for p in again.params] == ["x", "w", "bias", "y"]


def test_replay_refuses_mismatches(program):
    dev = SimulatorDevice(None, dram_bytes=1 << 22)
    bufs = _bufs(dev, program)
    with pytest.raises(RuntimeStreamError, match="takes 4 buffers"):
        program.replay(CommandQueue(dev), bufs[:3])
    short = list(bufs)
    short[1] = dev.alloc(64, align=256)
    with pytest.raises(RuntimeStreamError, match="buffer for w has 64 bytes"):
        program.replay(CommandQueue(dev), short)
    other = SimulatorDevice(HwConfig.from_dict({**load_config("pynq").to_dict(), "LOG_BATCH": 1}), dram_bytes=1 << 22)
    with pytest.raises(RuntimeStreamError, match="compiled for hardware config"):
        program.replay(CommandQueue(other), _bufs(other, program))


@pytest.mark.parametrize("edit,match", [
    (lambda d: d.update(format="something else"), "not a VDLA kernel program"),
    (lambda d: d["calls"].append(["gemm", 999]), "names micro-op kernel 999"),
    (lambda d: d["calls"].append(["store", 0, 9, 0, 1, 1, 1]), "names buffer 9"),
    (lambda d: d["calls"].append(["jump", 3]), "is malformed"),
])
def test_malformed_documents_are_named(program, edit, match):
    doc = json.loads(program.to_json())
    edit(doc)
    with pytest.raises(RuntimeStreamError, match=match):
        KernelProgram.from_dict(doc)


def test_runner_caches_the_stream_per_buffer_set(program, rng):
    dev = SimulatorDevice(None, dram_bytes=1 << 22)
    runner = ProgramRunner(dev, check_races=True)
    inputs = [rng.integers(-128, 128, (1, 2, 6, 5, 1, 16), dtype=np.int8),
              rng.integers(-128, 128, (2, 2, 3, 3, 16, 16), dtype=np.int8),
              rng.integers(-999, 999, (2, 1, 16), dtype=np.int32)]
    bufs = _bufs(dev, program)
    first, r1 = run_program(dev, program, inputs, runner=runner)     # other buffers: replay 1
    for b, a in zip(bufs, inputs):
        dev.write(b, a)
    runner.run(program, bufs)
    r2 = runner.run(program, bufs)                      # same buffers: no new replay
    assert runner.replays == 2
    assert r2.cycles == runner.run(program, bufs).cycles
    np.testing.assert_array_equal(dev.read(bufs[3], np.uint8, (program.params[3].nbytes,)), first)
    runner.close()


def test_depthwise_and_requantizing_kernels_round_trip_through_json():
    """A kernel's DEPTHWISE flag is a tenth item after the requant flag (0 or 1); a kernel
    without either keeps the eight items artifacts had before them."""
    from vdla.driver.runtime import UopKernel
    from vdla.driver.runtime.program import _kernel_from_list, _kernel_to_list
    from vdla.hw import Uop
    plain = UopKernel.gemm([Uop(0, 0, 0), Uop(1, 1, 1)])
    kernels = [plain, UopKernel.gemm(plain.uops, requant=True), UopKernel.gemm(plain.uops, depthwise=True),
               UopKernel.gemm(plain.uops, requant=True, depthwise=True)]
    lists = [_kernel_to_list(k) for k in kernels]
    assert [len(x) for x in lists] == [8, 9, 10, 10] and lists[2][8:] == [0, 1]
    assert [_kernel_from_list(json.loads(json.dumps(x))) for x in lists] == kernels
