"""Design-space exploration: one model over a sweep of hardware configurations, each compiled,
simulated (cycles) and synthesized (FPGA resources), with a table, Pareto front and plots.

    from vdla.compiler.dse import explore, make_pool
    with make_pool(workers=2) as pool:           # or make_pool(ray_address="local")
        result = explore("resnet18.onnx", "sweep.json", "dse_out", pool=pool)

The sweep format is in sweep.py, the per-point work in point.py (the one function both the
process pool and Ray run), the cache in cache.py.
"""
from .errors import SweepError
from .explore import DseResult, explore
from .pareto import dominates, pareto_front
from .point import evaluate_point
from .sweep import Point, Sweep, load_sweep, parse_sweep
from .workers import InlinePool, LocalPool, RayPool, WorkerFailure, make_pool

__all__ = ["SweepError", "DseResult", "explore", "dominates", "pareto_front", "evaluate_point", "Point", "Sweep",
           "load_sweep", "parse_sweep", "InlinePool", "LocalPool", "RayPool", "WorkerFailure", "make_pool"]
