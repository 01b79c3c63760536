"""Lowering of a quantized graph's accelerator nodes (vdla.compiler.vdla.lower): placement
settles with the kernels that run on the hardware (Kernels.unfit), lowering takes the same
compiled programs (each distinct kernel compiled once, never a node sent back; nodes that differ
in the requantizer's constants alone share one; compiled here or on worker processes alike), and
a graph lowered without settling names the nodes whose kernels do not fit."""
import numpy as np
import pytest

from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.compiler.graph.passes.memory_plan import plan_memory
from vdla.compiler.vdla import Kernels, KernelsDoNotFit, lower_vdla, quantize_for_vdla
from vdla.compiler.vdla import lower as lower_module
from vdla.hw import HwConfig, load_config

PYNQ = load_config("pynq")
# legal timing under which some default schedules cannot run (tests/compiler/test_untileable_on_cpu.py)
SHALLOW = HwConfig.from_dict({**PYNQ.to_dict(), "timing": {**PYNQ.to_dict()["timing"], "acc_raw_min_distance": 64}})


@pytest.fixture(scope="module")
def calib():
    return {"input": np.random.default_rng(1).standard_normal((4, 1, 3, 32, 32)).astype(np.float32)}


def _counting(monkeypatch):
    calls = []
    real = lower_module.compile_kernel

    def counted(config, spec, knobs=None, name="kernel", vta_compat=False):
        calls.append(repr(spec))
        return real(config, spec, knobs, name, vta_compat)
    monkeypatch.setattr(lower_module, "compile_kernel", counted)
    return calls


def test_lowering_takes_the_kernels_placement_settled_with(calib, monkeypatch):
    kernels = Kernels(PYNQ)
    graph, *_ = quantize_for_vdla(small_residual_cnn(), PYNQ, calib, kernels=kernels)
    calls = _counting(monkeypatch)
    steps, programs, single = lower_vdla(plan_memory(graph), PYNQ, kernels=kernels)
    assert calls == []                                  # nothing compiled twice
    assert [p["name"].split("_")[0] for p in programs] == [f"v{i}" for i in range(len(programs))]   # artifact order
    assert len(programs) == len(single) == len({s["program"] for s in steps.values()})


def test_a_settled_placement_keeps_unfit_kernels_on_the_cpu():
    """(16x16: at 32x32 one layer's schedules meet the accumulator distance)"""
    kernels = Kernels(SHALLOW)
    calib = {"input": np.random.default_rng(1).standard_normal((4, 1, 3, 16, 16)).astype(np.float32)}
    graph, _, place, _ = quantize_for_vdla(small_residual_cnn(image=16), SHALLOW, calib, kernels=kernels)
    unfit = {n for n, p in place.items() if p["reason"].startswith("no schedule of this layer runs on this hardware")}
    assert unfit and not kernels.unfit(graph)
    steps, _, _ = lower_vdla(plan_memory(graph), SHALLOW, kernels=kernels)
    assert not unfit & set(steps)


def test_kernels_compiled_on_workers_are_the_ones_compiled_here():
    """Kernels(jobs=2) compiles the default programs on spawned processes: the same programs,
    and the same reasons for the kernels that do not fit (SHALLOW at 16x16 has some)."""
    calib = {"input": np.random.default_rng(1).standard_normal((4, 1, 3, 16, 16)).astype(np.float32)}
    results = []
    for jobs in (1, 2):
        kernels = Kernels(SHALLOW, jobs=jobs)
        graph, _, place, _ = quantize_for_vdla(small_residual_cnn(image=16), SHALLOW, calib, kernels=kernels)
        results.append((place, lower_vdla(plan_memory(graph), SHALLOW, kernels=kernels)))
    (place_here, lowered_here), (place_spawned, lowered_spawned) = results
    assert any(p["reason"].startswith("no schedule of this layer runs") for p in place_here.values())
    assert place_spawned == place_here and lowered_spawned == lowered_here


def test_progress_shows_the_accelerator_kernels_compiled(calib, capsys):
    kernels = Kernels(PYNQ, progress=True)
    quantize_for_vdla(small_residual_cnn(), PYNQ, calib, kernels=kernels)
    err = capsys.readouterr().err
    assert "accelerator kernels: 100%" in err and f"{len(kernels._compiled)}/{len(kernels._compiled)}" in err, err


def test_a_graph_lowered_without_settling_names_the_nodes_that_do_not_fit(calib):
    graph, *_ = quantize_for_vdla(small_residual_cnn(), SHALLOW, calib)       # tiling checked, not compiled
    with pytest.raises(KernelsDoNotFit) as info:
        lower_vdla(plan_memory(graph), SHALLOW)
    assert info.value.nodes and all("no schedule of this layer runs" in why for why in info.value.nodes.values())


def test_the_default_is_the_fastest_of_its_choices_and_their_one_thread_twins():
    from vdla.compiler.topi.vdla import ConvLayer, Epilogue
    from vdla.compiler.vdla.op import KernelSpec
    spec = KernelSpec("VdlaConv", ConvLayer(1, 60, 7, 7, 10, 1, 1, 1, (0, 0, 0, 0)),
                      Epilogue(requantizer=True, shift=20, zero=-128))
    choices = lower_module.default_choices(PYNQ, spec)
    variants = lower_module.default_variants(choices)
    assert len(choices) == 2 and variants == [v for k in choices for v in (k, lower_module.one_thread(k))]
    cycles = {k: lower_module._cycles(PYNQ, lower_module.compile_kernel(PYNQ, spec, k)[0]) for k in variants}
    # _cycles computes no results: a run with data (random operands) takes the same cycles
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.runtime import run_program
    rng = np.random.default_rng(5)
    for k in variants:
        prog = lower_module.compile_kernel(PYNQ, spec, k)[0]
        inputs = [rng.integers(0, 256, p.nbytes, dtype=np.uint8) for p in prog.params[:-1]]
        device = SimulatorDevice(PYNQ, dram_bytes=lower_module.dram_for(prog))
        assert run_program(device, prog, inputs)[1].cycles == cycles[k], k
    program, single = lower_module._default_programs(PYNQ, spec, "conv", False)
    fastest = min(variants, key=cycles.get)
    assert lower_module._cycles(PYNQ, program) == cycles[fastest] == min(cycles.values())
    assert lower_module._cycles(PYNQ, single) == cycles[lower_module.one_thread(fastest)]


def test_default_variants_keep_the_order_and_drop_repeats():
    from vdla.compiler.topi.vdla import ConvKnobs
    a, b = ConvKnobs(1, 2, 4, vthreads=2), ConvKnobs(2, 2, 4, vthreads=1)
    assert lower_module.default_variants([a, b, lower_module.one_thread(a)]) == [a, lower_module.one_thread(a), b]


def test_nodes_differing_in_the_requantizers_constants_share_one_program(calib):
    """Their kernels are one instruction stream (the constants are each node's qparams); an
    ALU immediate of the epilogue (its multiplier) makes another."""
    graph, *_ = quantize_for_vdla(small_residual_cnn(), PYNQ, calib)
    node = next(n for n in graph.nodes if n.op == "VdlaConv" and n.attrs["epilogue"]["requantizer"])
    ep = node.attrs["epilogue"]
    twin = type(node)(node.op, "twin", node.inputs, node.outputs,
                      {**node.attrs, "epilogue": {**ep, "shift": ep["shift"] - 1, "zero": 5, "lo": -3, "hi": 99}})
    assert Kernels.key(graph, twin) == Kernels.key(graph, node)
    other = type(node)(node.op, "other", node.inputs, node.outputs, {**node.attrs, "epilogue": {**ep, "mul": 2}})
    assert Kernels.key(graph, other) != Kernels.key(graph, node)
