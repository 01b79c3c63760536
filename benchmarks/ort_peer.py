"""onnxruntime as the peer in the CPU benchmarks: one way to open a session, shared by them.

Spinning is off. By default onnxruntime's idle intra-op workers spin after each run; on the
2-core machines we measure on, that spinning occupies the core our own thread pool needs in
the next (interleaved) run. vdla's 2-thread ResNet-18 measured 34.4 ms with the peer spinning
and 18.6 ms without, while the peer itself ran 18.8 ms spinning and 17.6 ms not, so turning it
off is fair to both.
"""
from __future__ import annotations


def ort_session(model, threads: int, fused: bool = True):
    """An onnxruntime CPU session of `model` (ModelProto or bytes) on `threads` intra-op threads;
    fused=False: none of its graph optimizations, so a QDQ model runs each op in float between
    its DequantizeLinear and QuantizeLinear instead of as QLinearConv and its kin."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    if not fused:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
