"""Per-layer profiles (vdla.driver.profile): the micro-op cache and DMA figures of each
accelerator layer agree with the kernel's stream as `vdla disasm` assembles it (LOAD UOPs are
the misses; the other GEMM/ALU instructions found their micro-ops resident) and with the
simulator's own statistics of the launch (bytes loaded and stored), and the table prints them."""
import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.driver.artifact_disasm import kernel_streams
from vdla.driver.devices import SimulatorDevice
from vdla.driver.profile import format_table, profile_run
from vdla.hw import AluInsn, GemmInsn, MemInsn, MemType, Opcode


@pytest.fixture(scope="module")
def profiled():
    from e2e.model_builders import vdla_cnn     # tests/ is on sys.path
    rng = np.random.default_rng(0)
    art = compile_model(vdla_cnn(), target="vdla", hw_config="pynq",
                        calibration={"input": rng.standard_normal((2, 1, 3, 32, 32)).astype(np.float32)})
    device = SimulatorDevice(art.header["hardware"]["config"])
    _, rows = profile_run(art, {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}, device)
    return art, device, rows


def test_uop_cache_figures_match_the_assembled_stream(profiled):
    art, _, rows = profiled
    streams = {node: k for k in kernel_streams(art) for node in k.nodes}
    accel = [r for r in rows if r.placement == "vdla"]
    assert accel and {r.name for r in accel} == set(streams)
    for r in accel:
        insns = streams[r.name].insns
        loads = sum(isinstance(i, MemInsn) and i.memory_type == MemType.UOP and i.opcode == Opcode.LOAD
                    for i in insns)
        computes = sum(isinstance(i, (GemmInsn, AluInsn)) for i in insns)
        assert (r.uop_misses, r.uop_hits + r.uop_misses) == (loads, computes), r.name
        assert r.uop_misses > 0


def test_dma_bytes_are_the_simulators(profiled):
    art, device, rows = profiled
    from vdla.driver.executor import Executor
    ex = Executor(art, device=device)
    ex.run({"input": np.zeros((1, 3, 32, 32), np.float32)})
    for r in (r for r in rows if r.placement == "vdla"):
        sim = ex.last_launches[r.name].stats       # the simulator's SimStats of the same stream
        assert r.dma_bytes == sum(sim["load_bytes"].values()) - sim["load_bytes"]["UOP"] + sim["store_bytes"] > 0


def test_the_table_prints_them(profiled):
    _, _, rows = profiled
    text = format_table(rows)
    header, *lines = text.splitlines()
    assert "DMA KB" in header and "uop hit/miss" in header
    r = next(r for r in rows if r.placement == "vdla")
    line = next(line for line in lines if line.startswith(r.name + " "))
    assert f"{r.uop_hits}/{r.uop_misses}" in line and f"{r.dma_bytes / 1024:.1f}" in line
