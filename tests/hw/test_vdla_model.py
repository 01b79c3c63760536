"""A whole model compiled for VDLA on the RTL device: the same output as on the simulator
device, and every accelerator step takes the same number of cycles."""
import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.executor import Executor

from e2e.model_builders import small_cnn, vdla_cnn   # tests/ is on sys.path


@pytest.mark.parametrize("build,batch", [(small_cnn, 2), (vdla_cnn, 1)], ids=["small_cnn", "vdla_cnn"])
def test_small_cnn_on_the_rtl_equals_the_simulator(build, batch):
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((4, batch, 3, 32, 32)).astype(np.float32)}
    art = compile_model(build(), target="vdla", hw_config="pynq", calibration=calib)
    x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    sim = Executor(art)
    want = sim.run({"input": x})
    with RtlDevice(sim.device.config) as rtl:
        on_rtl = Executor(art, device=rtl)
        got = on_rtl.run({"input": x})
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        assert on_rtl.last_launches.keys() == sim.last_launches.keys()
        for step, launch in sim.last_launches.items():
            assert on_rtl.last_launches[step].cycles == launch.cycles, step
