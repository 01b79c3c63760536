"""The CUDA device (cuda-bindings): every GPU test kernel compiled for the GPU's architecture,
launched through the driver API and compared with numpy. Runs where a CUDA GPU is; elsewhere
the tests skip with the reason, and opening the device is a DeviceError saying it."""
import numpy as np
import pytest

from gpu_kernels import CASES
from vdla.driver import gpu_limits as limits
from vdla.driver.device import DeviceError
from vdla.driver.gpu_program import GpuRunner


def _device():
    from vdla.driver.devices.cuda import CudaDevice
    try:
        return CudaDevice(), None
    except DeviceError as exc:
        return None, str(exc)


DEVICE, WHY = _device()
needs_gpu = pytest.mark.skipif(DEVICE is None, reason=f"no CUDA device ({WHY})")


def test_without_a_gpu_opening_the_device_says_why():
    if DEVICE is not None:
        pytest.skip(f"a CUDA device is here: {DEVICE!r}")
    assert WHY.startswith(("no CUDA device", "the CUDA device needs cuda-bindings"))


@needs_gpu
@pytest.mark.parametrize("oldest", [False, True], ids=["device_arch", "oldest_arch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_kernel_on_the_device_matches_numpy(name, oldest):
    """PTX for the device's own architecture, and for the oldest vdla emits (the driver compiles it
    for the newer GPU: what an artifact compiled for another GPU meets)."""
    from vdla.compiler.codegen.nvptx.build import build_cuda
    case = CASES[name]()
    arch = limits.ARCHS[0] if oldest else limits.newest_arch_for(DEVICE.arch)
    runner = GpuRunner(DEVICE, build_cuda(case.schedule, case.args, name, arch=arch))
    outputs = [np.zeros_like(e) for e in case.expected]
    runner(*case.inputs, *outputs)
    runner.close()
    for got, want in zip(outputs, case.expected):
        # the device's exp2/log2 are approximate (about 2 ulp), the emulation's exact
        tol = max(case.rtol, 1e-5)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
