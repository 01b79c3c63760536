"""The onnx package's backend node tests (those of test_onnx_node_tests.py that have a kernel op) compiled with
--target cuda: each model's GPU programs run in the executor on a device whose launches run the
kernels' CPU emulation (tests/emulated_gpu.py; with VDLA_TESTS_ON_GPU=1 on the CUDA GPU) and must match the onnx reference outputs, and
their PTX must assemble (ptxas: for its own architecture and the newest vdla emits). Ops without a GPU kernel run as host steps."""
import numpy as np
import pytest
from onnx.backend.test.runner import Runner

from emulated_gpu import gpu_for_tests, record_gpu_kernels
from test_onnx_node_tests import CASES as ALL_CASES, _array
from vdla.compiler.codegen.nvptx import ptxas
from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import UnsupportedModelError
from vdla.compiler.lower_ops import RULES
from vdla.compiler.onnx_backend import operand_inputs
from vdla.driver import gpu_limits as limits
from vdla.driver.executor import Executor


# The cases with an op the tensor compiler has a kernel rule for (lower_ops.RULES, which the GPU
# lowering also uses): a case of host ops alone compiles no GPU program, and the CPU node tests run
# it through the same frontend, passes and executor already (892 of 1,487 cases).
CASES = [c for c in ALL_CASES if {n.op_type for n in c.model.graph.node} & set(RULES)]


def _feeds(case, inputs):
    model = case.model
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {n: np.asarray(_array(v)) for n, v in zip(names, inputs)}
    frozen = operand_inputs(model)
    return feeds, {k: feeds.pop(k) for k in list(feeds) if k in frozen}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node_on_the_gpu_path(case, monkeypatch):
    try:
        for inputs, ref_outputs in case.data_sets:
            feeds, constants = _feeds(case, inputs)
            with record_gpu_kernels(monkeypatch) as kernels:
                artifact = compile_model(case.model, target="cuda", constant_inputs=constants,
                                         input_shapes={k: list(v.shape) for k, v in feeds.items()})
            failed = {n: r for n, r in artifact.header["compile"]["host_reasons"].items() if "FAILED" in r}
            assert not failed, failed
            outputs = Executor(artifact, device=gpu_for_tests(kernels)).run(feeds)
            got = [outputs[o.name] for o in case.model.graph.output]
            Runner.assert_similar_outputs([_array(r) for r in ref_outputs], got, rtol=case.rtol, atol=case.atol)
            if ptxas.find_ptxas() is not None:
                for doc in artifact.header.get("gpu_programs", []):
                    for arch in sorted({doc["arch"], limits.ARCHS[-1]}):  # its own and the newest
                        ptxas.assemble(doc["ptx"], arch, what=doc["name"])
    except UnsupportedModelError as why:
        pytest.skip(f"unsupported: {why}")
