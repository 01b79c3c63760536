"""SpawnedPool: a function over items in their order, here for jobs=1, on spawned processes
otherwise; a failure in a worker reaches the caller."""
import math
import os

import pytest

from vdla.compiler.process_pool import SpawnedPool, WorkerDied


def test_one_job_runs_in_this_process():
    with SpawnedPool(1) as pool:
        assert list(pool.map(lambda x: (os.getpid(), x * x), [3, 1, 2])) == [(os.getpid(), 9), (os.getpid(), 1),
                                                                             (os.getpid(), 4)]


def test_two_jobs_run_on_other_processes_and_keep_the_order():
    with SpawnedPool(2) as pool:
        assert list(pool.map(math.factorial, [5, 0, 7, 3])) == [120, 1, 5040, 6]
        pids = set(pool.map(_pid, range(4)))
    assert os.getpid() not in pids


def _pid(_):
    return os.getpid()


def test_a_worker_failure_reaches_the_caller():
    with SpawnedPool(2) as pool, pytest.raises(ValueError, match="factorial"):
        list(pool.map(math.factorial, [3, -1]))


def test_jobs_below_one_is_refused():
    with pytest.raises(ValueError, match="jobs=0: at least one process does the work"):
        SpawnedPool(0)


def _die(_):
    os._exit(3)


def test_a_worker_that_dies_is_named_with_what_to_do():
    with SpawnedPool(2) as pool, pytest.raises(WorkerDied, match="worker process died .* fewer than 2 jobs"):
        list(pool.map(_die, [1, 2]))


def test_a_progress_bar_counts_the_results_where_asked(capsys):
    with SpawnedPool(1, progress=True) as pool:
        assert list(pool.map(math.factorial, [1, 2, 3], "factorials", "number")) == [1, 2, 6]
    err = capsys.readouterr().err
    assert "factorials: 100%" in err and "3/3" in err, err
    with SpawnedPool(1) as pool:
        list(pool.map(math.factorial, [1, 2, 3], "factorials", "number"))
    assert capsys.readouterr().err == ""
