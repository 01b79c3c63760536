"""The check every accelerator op's tests make: a small float model around the op compiled for
the accelerator with calibration puts the op's node there (the placement names the source
ops), the kernel run on the cycle-exact simulator equals bit for bit the op's numpy semantics
(the host ops the deploy runtime falls back to), and the answer stays close to onnxruntime's
float one."""
import numpy as np
import onnx
from onnx import helper

from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor

from ...graph.onnx_graphs import onnx_model, onnxruntime_outputs, tensor


def weights(rng, shape, scale=0.2):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, x_shape, y_shape, inits) -> onnx.ModelProto:
    return onnx_model(nodes, [tensor("x", x_shape)], [tensor("y", y_shape)], inits)


def check_offloaded(m: onnx.ModelProto, op_name: str, nodes: list[str], rng, min_sqnr_db: float = 25.0,
                    vta_compat: bool = False, samples: int = 3):
    """Compile `m` (input x, output y) for the accelerator; `nodes` must run as `op_name` kernels.
    -> the placement."""
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    calib = rng.standard_normal((8, *shape)).astype(np.float32)
    art = compile_model(m, target="vdla", hw_config="pynq", calibration={"x": calib}, vta_compat=vta_compat)
    place = art.header["compile"]["placement"]
    assert all(place[n]["device"] == "vdla" for n in nodes), {n: place[n] for n in nodes}
    kernels = {s.name: s.op for s in art.plan.steps if s.kind == "vdla"}
    assert set(nodes) & set(kernels) and all(kernels.get(n, op_name) == op_name for n in nodes), kernels
    sim, semantics = Executor(art), Executor(art, device="numpy")
    for _ in range(samples):
        x = rng.standard_normal(shape).astype(np.float32)
        got = sim.run({"x": x})["y"]
        np.testing.assert_array_equal(got, semantics.run({"x": x})["y"])
        ref = onnxruntime_outputs(m, {"x": x})[0]
        sqnr = 10 * np.log10((ref.astype(np.float64) ** 2).sum() / ((got - ref).astype(np.float64) ** 2).sum())
        assert sqnr > min_sqnr_db, f"{op_name}: SQNR {sqnr:.1f} dB against onnxruntime's float answer"
    return place


node = helper.make_node
