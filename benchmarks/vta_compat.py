"""What VTA compatibility costs: the small residual CNN (the test suite's vdla_cnn, 32x32)
compiled for the pynq config in the default mode and with --vta-compat (power-of-two
requantization, int8 operands reaching the accumulators through a GEMM, zero padding: streams
VTA's own hardware runs), from the same 8 calibration samples; per mode its SQNR against the
float model (onnxruntime) over --samples inputs, its accelerator cycles, and whether every
stream passes `vdla disasm --check vta`.

    python benchmarks/vta_compat.py [--samples 4] [--json] [--results FILE]
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from e2e_cpu import _builders as model_builders
from ort_peer import ort_session
from results_file import save

CALIBRATION = 8


def _vta_problems(artifact) -> int:
    """Findings of `vdla disasm --check vta` over every kernel's stream (with its DRAM image)."""
    from vdla.driver.artifact_disasm import kernel_streams
    from vdla.simulator.vta_check import check_vta
    return sum(len(check_vta(k.insns, k.dram, k.config)) for k in kernel_streams(artifact, None))


def measure(samples: int) -> dict:
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    model = model_builders().vdla_cnn()
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((CALIBRATION, 1, 3, 32, 32)).astype(np.float32)}
    feeds = [{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(samples)]
    fp32 = ort_session(model.SerializeToString(), 1)
    out = model.graph.output[0].name
    refs = [fp32.run([out], f)[0].astype(np.float64) for f in feeds]
    figures = {"samples": samples, "calibration": CALIBRATION}
    for mode, vta in (("default", False), ("vta_compat", True)):
        art = compile_model(model, target="vdla", hw_config="pynq", calibration=calib, vta_compat=vta)
        ex = Executor(art)
        err = power = 0.0
        for f, ref in zip(feeds, refs):
            y = ex.run(f)[out].astype(np.float64)
            err += float(((y - ref) ** 2).sum())
            power += float((ref ** 2).sum())
        figures[f"{mode}_sqnr_db"] = round(10 * np.log10(power / err), 2)
        figures[f"{mode}_cycles"] = int(sum(r.cycles for r in ex.last_launches.values()))
        figures[f"{mode}_vta_problems"] = _vta_problems(art)
    return figures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=4, help="evaluation inputs (default 4)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save the figures there, with this host")
    args = ap.parse_args(argv)
    f = measure(args.samples)
    for mode in ("default", "vta_compat"):
        print(f"{mode:<11} SQNR {f[f'{mode}_sqnr_db']:6.2f} dB, {f[f'{mode}_cycles']:,} accelerator cycles, "
              f"{f[f'{mode}_vta_problems']} instructions VTA would compute otherwise")
    if args.results:
        save(args.results, f)
    if args.json:
        print(json.dumps(f))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
