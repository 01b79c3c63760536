"""README's figures, from the benchmarks' saved JSON: never typed by hand.

benchmarks/results/vdla_e2e.json is `python benchmarks/vdla_e2e.py --out` (run it again after a
change that moves the figures); this script renders its deterministic figures (accelerator
cycles and time at the config's clock, the ratio to the GEMM bound, the MACs offloaded, SQNR,
bit-exactness) as the table between README's figures markers. Host timings (compile, CPU
fallback, simulator wall time) stay out of the table: they belong to the machine that measured them.

The figures inside README's prose are spans, `<!-- figure:NAME -->text<!-- /figure -->`, each the
rendering of benchmarks/results/STEM.json (STEM: NAME up to its first dot) as the benchmark's
`--results` saved it; a timing names the host it came from.

tests/test_figures.py fails when the table or a span is not this rendering, or when the saved
deterministic figures (cycles, offload) are not what the compiler and simulator give now.

    python benchmarks/figures.py [--check]      # rewrite the table and spans, or only say whether they are current
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "vdla_e2e.json"
README = ROOT / "README.md"
BEGIN, END = "<!-- figures:begin (benchmarks/figures.py) -->", "<!-- figures:end -->"
NAMES = {"resnet18": "ResNet-18", "mobilenetv2": "MobileNetV2", "vit_tiny": "ViT-Tiny", "bert": "BERT (seq 128)",
         "yolov8n": "YOLOv8n (320)"}


def table(figures: dict) -> str:
    lines = ["| model | accelerator cycles | ms at 100 MHz | x GEMM bound | MACs offloaded | SQNR dB | "
             "onnxruntime int8 SQNR dB | bit-exact |", "|---|---|---|---|---|---|---|---|"]
    for name, f in figures.items():
        lines.append(f"| {NAMES.get(name, name)} | {f['accel_cycles']:,} | {f['accel_ms']:.2f} | "
                     f"{f['ratio_to_bound']:.2f} | {f['offload_mac_fraction']:.1%} | {f['sqnr_db']:.2f} | "
                     f"{f['ort_int8_sqnr_db']:.2f} | {'yes' if f['bit_exact'] else 'NO'} |")
    return "\n".join(lines)


def rendered(readme: str, figures: dict) -> str:
    """`readme` with the table between the markers replaced by the rendering of `figures`."""
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[:start] + "\n" + table(figures) + "\n" + readme[end:]


SPAN = re.compile(r"<!-- figure:(?P<name>[\w.]+) -->(?P<text>.*?)<!-- /figure -->", re.S)


def _timeline(threads: str):
    return lambda r: f"compute busy {r[threads]['compute_busy']:.0%}, {r[threads]['cycles']:,} cycles"


def _tune_vdla(r: dict) -> str:
    rows = r["layers"]
    best = max(rows, key=lambda x: x["default_cycles"] / x["tuned_cycles"])
    gain = 1 - r["tuned_cycles"] / r["default_cycles"]
    return (f"{r['trials_per_layer']} trials each: {r['default_cycles'] / 1e6:.2f} M -> {r['tuned_cycles'] / 1e6:.2f} M "
            f"accelerator cycles ({gain:.1%} fewer; up to {1 - best['tuned_cycles'] / best['default_cycles']:.0%} on "
            f"{best['layer'].split(' (')[0]}) in {r['tune_wall_s']:.0f} s on {r['host']}")


def _tune_vdla_bound(r: dict) -> str:
    """The default schedules of the 3x3 convs over their GEMM bound (where the GEMM dominates)."""
    ratios = [x["default_cycles"] / x["gemm_bound"] for x in r["layers"] if " 3x3/" in x["layer"]]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x"


def _tune_cpu(r: dict) -> str:
    tuned = [k for k in r["kernels"] if k["tuned_ms"] is not None]
    moved = sum(k["tuned_knobs"] != k["default_knobs"] for k in tuned)
    return (f"{len(r['kernels'])} distinct CPU kernels with {r['trials_per_kernel']} trials each in "
            f"{r['tune_wall_s']:.0f} s on {r['host']}, {r['threads']} threads: the kernels "
            f"{r['kernels_default_ms'] / r['kernels_tuned_ms']:.2f}x faster ({moved} records beat their default), "
            f"the whole model {r['default_ms'] / r['tuned_ms']:.2f}x ({r['default_ms']:.2f} -> {r['tuned_ms']:.2f} ms, "
            f"the two run in alternating turns, {'same output' if r['same_output'] else 'OUTPUTS DIFFER'})")


def _vta_compat(r: dict) -> str:
    return (f"the small CNN: {r['vta_compat_sqnr_db']:.1f} dB against the float model, {r['default_sqnr_db']:.1f} dB in "
            f"the default mode, {r['vta_compat_cycles']:,} against {r['default_cycles']:,} accelerator cycles; "
            f"`vdla disasm --check vta` finds {r['vta_compat_vta_problems']} and {r['default_vta_problems']} "
            "instructions VTA would compute otherwise: `benchmarks/vta_compat.py`")


def _remote_tls(r: dict) -> str:
    return (f"{r['tls_vs_hmac_large']:.2f}x the shared secret's time for a run with {r['mib']} MiB in and out "
            f"({r['tls_mib_per_s']:.0f} against {r['hmac_mib_per_s']:.0f} MiB/s) and "
            f"{r['tls_vs_hmac_small']:.2f}x for a small one (its handshakes), on loopback on {r['host']} "
            "(`benchmarks/remote_tls.py`)")


# span name -> its rendering from the saved results of the benchmark the name starts with
SPANS = {"remote_tls": _remote_tls, "vta_compat": _vta_compat,
         "timeline_vthreads.1vt": _timeline("1vt"), "timeline_vthreads.2vt": _timeline("2vt"),
         "tune_vdla": _tune_vdla, "tune_vdla.bound": _tune_vdla_bound,
         "tune_cpu_resnet18": _tune_cpu, "tune_cpu_mobilenetv2": _tune_cpu}


def results(stem: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / f"{stem}.json").read_text())


def with_spans(readme: str) -> str:
    """`readme` with every figure span rendered from its results (an unknown name is an error)."""
    def one(m):
        name = m["name"]
        if name not in SPANS:
            raise KeyError(f"README figure span {name!r}: no renderer in benchmarks/figures.py SPANS")
        return f"<!-- figure:{name} -->{SPANS[name](results(name.split('.')[0]))}<!-- /figure -->"
    return SPAN.sub(one, readme)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if README's table is not current")
    args = ap.parse_args(argv)
    text = README.read_text()
    want = with_spans(rendered(text, json.loads(RESULTS.read_text())))
    if args.check:
        print("README's figures are current" if want == text else "README's figures are stale: run "
              "python benchmarks/figures.py")
        return 0 if want == text else 1
    README.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
