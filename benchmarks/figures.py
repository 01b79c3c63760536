"""README's figures table, from the benchmarks' saved JSON: never typed by hand.

benchmarks/results/vdla_e2e.json is `python benchmarks/vdla_e2e.py --out` (run it again after a
change that moves the figures); this script renders its deterministic figures (accelerator
cycles and time at the config's clock, the ratio to the GEMM bound, the MACs offloaded, SQNR,
bit-exactness) as the table between README's figures markers. Host timings (compile, CPU
fallback, simulator wall time) stay out: they belong to the machine that measured them.
tests/test_figures.py fails when the table is not this rendering, or when the JSON's cycles and
offload are not what the compiler gives now.

    python benchmarks/figures.py [--check]      # rewrite the table, or only say whether it is current
"""
from __future__ import annotations

import argparse
import json
import pathlib
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if README's table is not current")
    args = ap.parse_args(argv)
    text = README.read_text()
    want = rendered(text, json.loads(RESULTS.read_text()))
    if args.check:
        print("README's figures table is current" if want == text else "README's figures table is stale: run "
              "python benchmarks/figures.py")
        return 0 if want == text else 1
    README.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
