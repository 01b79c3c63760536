"""A whole model compiled for VDLA on the RTL device: the same output as on the simulator
device, and every accelerator step takes the same number of cycles."""
import numpy as np

from vdla.compiler.compile_model import compile_model
from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.executor import Executor

from e2e.model_builders import vdla_cnn   # tests/ is on sys.path


def test_small_cnn_on_the_rtl_equals_the_simulator():
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((4, 1, 3, 32, 32)).astype(np.float32)}
    art = compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
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
