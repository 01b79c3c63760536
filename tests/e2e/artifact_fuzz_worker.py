"""Runs fuzzed artifacts for test_artifact_fuzz.py in a process of its own, so a crash fails
the test instead of killing pytest.

    python artifact_fuzz_worker.py CASES.json FIRST BUDGET_S

For each case from index FIRST it prints `start I`, then one JSON line: the outcome ("ran",
"refused" with the error's class and message, "bare" for an exception that is not one of the
project's, or "escaped" when a bound kernel argument reaches outside the arena and the
parameters), and the seconds it took. A case that runs past BUDGET_S ends the process with a
traceback (faulthandler), which the parent reports as a hang.
"""
import faulthandler
import json
import sys
import time

import numpy as np


def _regions(ex) -> list[tuple[int, int]]:
    # the parameters as the executor binds them (an aligned copy of one the file left unaligned)
    arrays = [ex.arena, *(ex.buffers[name] for name in ex.artifact.params)]
    return [(a.ctypes.data, a.ctypes.data + a.nbytes) for a in arrays]


def escaped_arguments(ex) -> list[str]:
    """Every pointer a bound kernel step will pass, with the byte size the kernel's own object
    declares for it, must lie inside the arena or inside one parameter array."""
    from vdla.driver.executor import _KernelCall
    regions = _regions(ex)
    bad = []
    for step, call in ex.steps:
        if not isinstance(call, _KernelCall):
            continue
        _, _, specs = ex.kernels[call.kernel]
        for k, (shape, dtype) in enumerate(specs):
            start = call.pointers[k]
            end = start + int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            if not any(lo <= start and end <= hi for lo, hi in regions):
                bad.append(f"step {step.name} argument {k}")
    return bad


def run_case(path: str) -> dict:
    from vdla.driver.artifact import load
    from vdla.driver.artifact_trust import TrustPolicy
    from vdla.driver.executor import Executor
    try:
        ex = Executor(load(path, policy=TrustPolicy()))
        escaped = escaped_arguments(ex)
        if escaped:
            return {"outcome": "escaped", "message": "; ".join(escaped)}
        rng = np.random.default_rng(0)
        feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in ex.artifact.plan.inputs}
        ex.run(feeds)
        return {"outcome": "ran"}
    except Exception as exc:   # classify: the project's own errors are the only acceptable ones
        kind = "refused" if type(exc).__module__.startswith("vdla.") else "bare"
        return {"outcome": kind, "error": f"{type(exc).__module__}.{type(exc).__name__}", "message": str(exc)}


def main() -> None:
    cases, first, budget = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3])
    for i in range(first, len(cases)):
        print(f"start {i}", flush=True)
        faulthandler.dump_traceback_later(budget, exit=True)
        start = time.perf_counter()
        result = run_case(cases[i]["path"])
        faulthandler.cancel_dump_traceback_later()
        print(json.dumps({"case": i, "seconds": time.perf_counter() - start, **result}), flush=True)


if __name__ == "__main__":
    main()
