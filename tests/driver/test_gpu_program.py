"""GpuRunner replays a compiled GPU program on a device: buffers in device memory, kernels in
order, inputs in and outputs out. Here the device is the CPU emulation of each kernel (tests may
use the compiler), so the replay is checked without a GPU; devices/test_cuda.py runs the same
on a real one."""
import numpy as np
import pytest

from emulated_gpu import EmulatedGpu
from gpu_kernels import CASES, matmul_shared, softmax_rows
from vdla.compiler.codegen.nvptx.build import build_cuda
from vdla.compiler.schedule.gpu import lower_gpu
from vdla.driver.device import DeviceError
from vdla.driver.gpu_program import GpuProgram, GpuRunner


def _run(case, name):
    gf = lower_gpu(case.schedule, case.args, name)
    program = build_cuda(case.schedule, case.args, name)
    device = EmulatedGpu({k.name: k for k in gf.kernels})
    runner = GpuRunner(device, GpuProgram.from_dict(program.to_dict()))
    outputs = [np.zeros_like(e) for e in case.expected]
    runner(*case.inputs, *outputs)
    return device, runner, outputs


@pytest.mark.parametrize("name", ["softmax_rows", "conv2d_direct", "dense_tiled"])
def test_replay_matches_numpy(name):
    case = CASES[name]()
    _, _, outputs = _run(case, name)
    for got, want in zip(outputs, case.expected):
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.rtol * max(1.0, np.abs(want).max()))


def test_kernels_run_in_order_and_only_inputs_and_outputs_cross():
    case = softmax_rows()
    device, runner, _ = _run(case, "sm")
    assert device.launched == ["sm__softmax_max", "sm__softmax_sum", "sm__softmax"]
    assert (device.writes, device.reads) == (1, 1)      # x in, the softmax out: temporaries stay
    runner.close()
    assert device.freed == 4


def test_arrays_are_checked_by_name():
    case = matmul_shared()
    program = build_cuda(case.schedule, case.args, "mm")
    runner = GpuRunner(EmulatedGpu({k.name: k for k in lower_gpu(case.schedule, case.args, "mm").kernels}), program)
    with pytest.raises(DeviceError, match=r"GPU program mm: B must be float32\[50, 36\], got float64\[50, 36\]"):
        runner(case.inputs[0], case.inputs[1].astype("float64"), np.zeros((70, 50), "float32"))
    with pytest.raises(DeviceError, match=r"GPU program mm takes 3 arrays \(A, B, C\), got 2"):
        runner(*case.inputs)


def test_ptx_for_a_newer_gpu_is_refused():
    case = matmul_shared()
    program = build_cuda(case.schedule, case.args, "mm", arch="sm_90")
    device = EmulatedGpu({})
    device.arch = "sm_80"
    with pytest.raises(DeviceError, match="GPU program mm is PTX for sm_90; the device is sm_80: recompile for sm_80"):
        GpuRunner(device, program)


def test_a_launch_over_the_limits_is_refused():
    case = matmul_shared()
    doc = build_cuda(case.schedule, case.args, "mm").to_dict()
    doc["kernels"][0]["block"] = [64, 32, 1]
    with pytest.raises(DeviceError, match="kernel mm__C: 2048 threads per block, over 1024"):
        GpuProgram.from_dict(doc)
    with pytest.raises(DeviceError, match="not a GPU program: KeyError: 'ptx'"):
        GpuProgram.from_dict({k: v for k, v in doc.items() if k != "ptx"})
