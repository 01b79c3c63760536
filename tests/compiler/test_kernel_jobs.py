"""Kernels compile on worker processes from pickled tensor expressions (a graph's with
compile_model(jobs=N), the CPU tuner's candidates): what a worker builds must compute what this
process builds."""
import pickle

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.kernel_jobs import CompileJob, compile_job, target_parts
from vdla.compiler.process_pool import SpawnedPool
from vdla.compiler.target import Target
from vdla.compiler.tir import expr as E
from vdla.compiler.topi.cpu_knobs import DirectConvKnobs
from vdla.compiler.tune.cpu_measure import probe_inputs, zeroed


def test_an_unpickled_var_takes_a_fresh_uid_shared_by_its_uses():
    v = E.Var("i")
    copy_v, copy_e = pickle.loads(pickle.dumps((v, E.Add(v, v))))
    # the old uid may name another variable in the process that unpickles it (a compiling
    # worker numbers its own Vars from 0): two variables taken for one miscompile
    assert copy_v.uid != v.uid
    assert copy_e.a is copy_e.b is copy_v


def test_a_candidate_compiled_in_a_worker_computes_what_this_process_compiles(rng):
    x = te.placeholder((1, 2, 9, 17, 16), "float32", "x")
    w = te.placeholder((4, 2, 3, 3, 16, 16), "float32", "w")
    y = topi.relu(topi.conv2d_nchwc(x, w, strides=1, pads=1))
    host = Target.host(threads=2)
    jobs = [CompileJob([x, w, y], [y], k, target_parts(host), "k")
            for k in (DirectConvKnobs(5, 2), DirectConvKnobs(17, 4), DirectConvKnobs(3, 1))]
    with SpawnedPool(2) as pool:             # two spawned processes (one compiles here)
        remote = list(pool.map(compile_job, jobs))
    inputs = probe_inputs([x, w], 3)
    for job, kernel in zip(jobs, remote):
        assert not isinstance(kernel, str), kernel
        outs = []
        for k in (kernel, compile_job(job)):
            arrays = inputs + zeroed([y])
            k.load().run("k", arrays)
            outs.append(arrays[-1])
        np.testing.assert_array_equal(outs[0], outs[1])
