"""compile_run: schedule a topi group with schedule_for, build it for the host, run it."""
import numpy as np
import pytest

from vdla.compiler import build, topi
from vdla.compiler.target import Target


@pytest.fixture(scope="session")
def host():
    return Target.host(threads=2)


@pytest.fixture
def compile_run(host):
    def run(outputs, inputs, arrays, name="k"):
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        s = topi.schedule_for(list(outputs), host)
        kern = build(s, list(inputs) + list(outputs), host, name, check=True)
        lib = kern.load()
        res = [np.zeros(o.shape, o.dtype) for o in outputs]
        lib.run(name, [np.ascontiguousarray(a) for a in arrays] + res)
        return res if len(res) > 1 else res[0]
    return run
