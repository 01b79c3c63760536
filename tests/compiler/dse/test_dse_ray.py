"""The same sweep on a local Ray instance and in this process gives the same table (Ray is
the dev extra's optional `ray`; the test says so when it is missing)."""
import pytest

from vdla.compiler.dse import RayPool, explore
from vdla.compiler.frontend.example_models import small_residual_cnn

import dse_stubs

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'vdla[ray]'): the --ray path is untested")

SWEEP = {"grid": {"LOG_BLOCK": [3, 4], "clock_mhz": [100, 200]},
         "points": [{"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 16},
                    {"LOG_WGT_BUFF_SIZE": 9}]}
COMPARED = ("id", "label", "config", "status", "error", "cycles", "ms", "gemm_utilization", "launches",
            "macs_offloaded", "synth_status", "lut", "ff", "dsp", "bram36", "fits", "smallest_part", "pareto")


def test_ray_and_local_tables_are_equal(tmp_path):
    import ray.cloudpickle
    # the stub lives in a test folder the Ray workers cannot import: send it by value
    ray.cloudpickle.register_pickle_by_value(dse_stubs)
    model = small_residual_cnn()
    local = explore(model, SWEEP, tmp_path / "local", synthesizer=dse_stubs.fake_synthesize, log=None)
    with RayPool("local") as pool:
        assert ray.is_initialized() and pool.workers >= 1
        remote = explore(model, SWEEP, tmp_path / "ray", pool=pool, synthesizer=dse_stubs.fake_synthesize, log=None)
    assert not ray.is_initialized()          # the instance the pool started is gone
    assert remote.evaluated == local.evaluated == 4
    assert [{k: r.get(k) for k in COMPARED} for r in remote.rows] == [{k: r.get(k) for k in COMPARED}
                                                                      for r in local.rows]
    assert remote.pareto == local.pareto
    assert (tmp_path / "ray" / "dse.csv").read_text() == (tmp_path / "local" / "dse.csv").read_text()



def test_a_task_whose_worker_dies_is_retried_once(tmp_path):
    import ray.cloudpickle
    ray.cloudpickle.register_pickle_by_value(dse_stubs)
    with RayPool("local") as pool:
        answers = dict(pool.map(dse_stubs.dies_on_the_first_try, [1, 2], str(tmp_path)))
    assert answers == {0: 10, 1: 20}
