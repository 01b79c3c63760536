"""A single ONNX layer against onnxruntime: the one-node model with its constant operands, and
one timed row (ours, onnxruntime, the host-step baseline), shared by the layer benchmarks
(layers_cpu.py, recurrent_cpu.py)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from interleave import interleaved_median_ms
from ort_peer import ort_session


def one_node_model(op: str, shape, attrs: dict, constants: dict, outputs=("y",), opset: int = 21):
    """x of `shape` (float32) and `constants` (name -> array, in input order) into one `op` node."""
    node = helper.make_node(op, ["x", *constants], list(outputs), **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(np.asarray(v, v.dtype), k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def timed_row(name: str, model, compiled, feeds: dict, threads: int, host_step, quick: bool, repeat: int):
    """{case, threads, ours_ms, ort_ms, host_ms, ratio}, or a message when vdla's outputs are more
    than 1e-4 of their scale off onnxruntime's (nothing is timed then). `host_step()` is the
    baseline, timed after the pair, not between their calls: numpy's BLAS threads spin after
    each call and would take the cores from both."""
    from vdla.driver.executor import Executor
    ours, peer = Executor(compiled, threads=threads), ort_session(model, threads)
    want, got = peer.run(None, feeds), ours.run(feeds)
    for out, w in zip(model.graph.output, want):
        err = float(np.abs(got[out.name] - w).max() / max(1e-6, np.abs(w).max()))
        if err > 1e-4:
            return f"{name}: vdla's {out.name} differs from onnxruntime's by {err:.3g} of its scale; not timed"
    rounds, min_time = (3, 0.2) if quick else (repeat, 0.5)
    a, b = interleaved_median_ms([lambda: ours.run(feeds), lambda: peer.run(None, feeds)], rounds, min_time=min_time)
    c, = interleaved_median_ms([host_step], rounds, min_time=min_time)
    return {"case": name, "threads": threads, "ours_ms": round(a, 4), "ort_ms": round(b, 4), "host_ms": round(c, 4),
            "ratio": round(a / b, 4)}
