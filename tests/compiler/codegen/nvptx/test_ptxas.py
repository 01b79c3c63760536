"""ptxas assembles the PTX of every GPU test kernel (tests/gpu_kernels.py) for every architecture vdla emits,
so invalid PTX fails here, without a GPU. ptxas comes with the dev extra (nvidia-cuda-nvcc-cu12);
the tests skip only on a platform that wheel does not exist for."""
import pytest

from gpu_kernels import CASES
from vdla.compiler.codegen.nvptx import ptxas
from vdla.compiler.codegen.nvptx.build import build_cuda
from vdla.driver import gpu_limits as limits

if ptxas.find_ptxas() is None and not ptxas.wheel_supported():
    pytest.skip("no ptxas, and nvidia-cuda-nvcc-cu12 has no wheel for this platform", allow_module_level=True)


@pytest.mark.parametrize("arch", limits.ARCHS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_ptxas_assembles_every_gpu_kernel(name, arch):
    case = CASES[name]()
    module = build_cuda(case.schedule, case.args, name, arch=arch)
    out = ptxas.assemble(module.ptx, arch, what=name)
    assert out.cubin[:4] == b"\x7fELF"
    for k in module.kernels:   # ptxas -v reports each entry, with its static shared memory
        report = out.log.split(f"Compiling entry function '{k.kernel}' for '{arch}'")[1].split("Compile time")[0]
        assert f"{k.shared_bytes} bytes smem" in report if k.shared_bytes else "smem" not in report


def test_ptxas_errors_carry_its_message():
    case = CASES["matmul_shared"]()
    bad = build_cuda(case.schedule, case.args, "mm").ptx.replace("bar.sync", "bar.snyc", 1)
    with pytest.raises(ptxas.PtxasError, match=r"mm: ptxas -arch=sm_80 rejected the PTX \(exit \d+\):\n.*Unknown modifier '.snyc'"):
        ptxas.assemble(bad, "sm_80", what="mm")


def test_vdla_ptxas_names_the_assembler(monkeypatch, tmp_path):
    monkeypatch.setenv("VDLA_PTXAS", str(tmp_path / "missing-ptxas"))
    assert ptxas.find_ptxas() == str(tmp_path / "missing-ptxas")
    with pytest.raises(ptxas.PtxasError, match="running .*missing-ptxas failed"):
        ptxas.assemble(".version 7.0", "sm_80")
