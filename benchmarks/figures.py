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
    return (f"{r['trials_per_layer']} trials each: {r['default_cycles'] / 1e6:.2f} M -> "
            f"{r['tuned_cycles'] / 1e6:.2f} M "
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


BOARDS = {"pynq": "PYNQ-Z1/Z2", "kv260": "KV260", "aup_zu3": "AUP-ZU3"}
# how a DSE table names the config keys a point changes (the sweep labels' abbreviations)
SHORT = {"LOG_UOP_BUFF_SIZE": "u", "LOG_INP_BUFF_SIZE": "i", "LOG_WGT_BUFF_SIZE": "w", "LOG_ACC_BUFF_SIZE": "a",
         "bus_width_bits": "bus"}


def _dse_config(point: dict, r: dict, clock: bool = True) -> str:
    """BATCHxBLOCK and the keys the point changes from the sweep's base (the board's preset)."""
    c, base = point["config"], r["base"]
    shape = f"{1 << c['LOG_BATCH']}x{1 << c['LOG_BLOCK']}"
    # in SHORT's order (the sweep labels'), whatever order the results file keeps the keys in
    keys = sorted(c, key=lambda k: (list(SHORT).index(k) if k in SHORT else len(SHORT), k))
    changed = [f"{SHORT.get(k, k)}{c[k]}" for k in keys if k not in ("LOG_BATCH", "LOG_BLOCK", "clock_mhz")
               and c[k] != base.get(k)]
    at = f" at {c['clock_mhz']} MHz" if clock and c["clock_mhz"] != base["clock_mhz"] else ""
    if not changed and c["LOG_BATCH"] == base["LOG_BATCH"] and c["LOG_BLOCK"] == base["LOG_BLOCK"]:
        return f"{shape} (`{r['board']}`){at}"
    return " ".join([shape, *changed]) + at


def _dse_fit(point: dict, part: str) -> str:
    from vdla.hw.parts import PARTS, RESOURCES
    if point["fits_part"] is None:
        return f"unknown ({point['status']})"
    if point["fits_part"]:
        moved = (point.get("part_memory") or {}).get("moved") or []
        return f"yes, with {', '.join(moved)} in UltraRAM" if moved else "yes"
    over = [f"{k.upper()} {point[k] or 0:,g} > {PARTS[part][k]:,}" for k in RESOURCES
            if (point[k] or 0) > PARTS[part][k]]
    return f"no: {', '.join(over)}" if over else "no: block RAM even with UltraRAM"


def _dse_table(r: dict) -> str:
    """One board's DSE: every point's ResNet-18 time, Yosys figures (the UltraRAM split where a fit
    moves SRAMs) and verdict; the fastest fitting point in bold."""
    part = r["part"]
    fastest = (r.get("fastest_fitting") or {}).get("id")
    lines = [f"| config | ResNet-18 ms | LUT | FF | DSP | BRAM36 | URAM | fits the {part} |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for p in r["points"]:
        memory = p.get("part_memory") or {}
        split = bool(memory.get("moved"))
        bram = f"{p['bram36']:g}" + (f" ({memory['bram36']:g} split)" if split else "")
        uram = f"{p['uram'] or 0}" + (f" ({memory['uram']} split)" if split else "")
        bold = "**" if p["id"] == fastest else ""
        ms = f"{p['ms']:.1f}" if p["ms"] is not None else "-"
        figures = [f"{p[k]:,}" if p[k] is not None else "-" for k in ("lut", "ff", "dsp")]
        lines.append(f"| {bold}{_dse_config(p, r)}{bold} | {bold}{ms}{bold} | {' | '.join(figures)} | "
                     f"{bram} | {uram} | {_dse_fit(p, part)} |")
    return "\n" + "\n".join(lines) + "\n"


def _dse_fastest(r: dict) -> str:
    f = r.get("fastest_fitting")
    if f is None:
        return f"on the {BOARDS[r['board']]} no point fits the {r['part']}"
    return (f"on the {BOARDS[r['board']]} the {_dse_config(f, r)}: ResNet-18 in "
            f"{f['resnet18_ms']:.1f} ms and MobileNetV2 in {f['mobilenetv2_ms']:.1f} ms at {f['clock_mhz']} MHz "
            f"({f['clock_basis']} clock); its Yosys runs took {_synth_minutes(r):.0f} min on {r['host']}")


def _synth_minutes(r: dict) -> float:
    """Each distinct RTL's synthesis once (points that differ in clock share one)."""
    runs = {json.dumps({k: v for k, v in p["config"].items() if k != "clock_mhz"}, sort_keys=True): p["synth_seconds"]
            for p in r["points"] if p.get("synth_seconds")}
    return sum(runs.values()) / 60


def _dse_clock_table(r: dict) -> str:
    """The pynq sweep: points that differ only in clock on one row (their RTL is one synthesis)."""
    rows: dict = {}
    for p in r["points"]:
        key = json.dumps({k: v for k, v in p["config"].items() if k != "clock_mhz"}, sort_keys=True)
        rows.setdefault(key, []).append(p)
    lines = ["| config | cycles | ms | LUT | DSP | BRAM36 | smallest part |", "|---|---:|---:|---:|---:|---:|---|"]
    for group in rows.values():
        first = group[0]
        clocks = " / ".join(str(p["config"]["clock_mhz"]) for p in group)
        ms = " / ".join(f"{p['ms']:.0f}" for p in group)
        lines.append(f"| {_dse_config(first, r, clock=False)}, {clocks} MHz | {first['cycles'] / 1e6:.1f} M | {ms} | "
                     f"{first['lut']:,} | {first['dsp']} | {first['bram36']:g} | {first['smallest_part'] or 'none'} |")
    return "\n" + "\n".join(lines) + "\n"


def _dse_front(r: dict) -> str:
    return "; ".join(_dse_config(p, r) for p in r["pareto"])


def _vta_compat(r: dict) -> str:
    return (f"the small CNN: {r['vta_compat_sqnr_db']:.1f} dB against the float model, "
            f"{r['default_sqnr_db']:.1f} dB in the default mode, {r['vta_compat_cycles']:,} against "
            f"{r['default_cycles']:,} accelerator cycles; "
            f"`vdla disasm --check vta` finds {r['vta_compat_vta_problems']} and {r['default_vta_problems']} "
            "instructions VTA would compute otherwise: `benchmarks/vta_compat.py`")


def _remote_tls(r: dict) -> str:
    return (f"{r['tls_vs_hmac_large']:.2f}x the shared secret's time for a run with {r['mib']} MiB in and out "
            f"({r['tls_mib_per_s']:.0f} against {r['hmac_mib_per_s']:.0f} MiB/s) and "
            f"{r['tls_vs_hmac_small']:.2f}x for a small one (its handshakes), on loopback on {r['host']} "
            "(`benchmarks/remote_tls.py`)")


def _e2e_cpu(r: dict) -> str:
    rows = {row["model"]: row for row in r["rows"]}
    parts = [f"{label} {r[f'{key}_ratio_vs_ort']:.2f}x ({rows[key]['vdla_ms_2t']:.2f} against "
             f"{rows[key]['ort_ms_2t']:.2f} ms)" for key, label in
             (("resnet18", "ResNet-18"), ("mobilenetv2", "MobileNetV2"), ("vit_tiny", "ViT-Tiny"),
              ("bert", "the BERT-style encoder"))]
    return (", ".join(parts[:-1]) + f" and {parts[-1]} onnxruntime's time with 2 threads on {r['host']} "
            "(`benchmarks/e2e_cpu.py`)")


def _torchvision_cpu(r: dict) -> str:
    labels = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "mobilenet_v2": "MobileNetV2",
              "mobilenet_v3_small": "MobileNetV3-small", "efficientnet_b0": "EfficientNet-B0", "googlenet": "GoogLeNet",
              "squeezenet1_0": "SqueezeNet", "shufflenet_v2_x1_0": "ShuffleNetV2", "densenet121": "DenseNet-121",
              "regnet_x_400mf": "RegNet-X-400MF", "resnext50_32x4d": "ResNeXt-50"}
    parts = [f"{labels.get(name, name)} {row['ratio_2t']:.2f}x" for name, row in r["models"].items()]
    return (", ".join(parts) + f" (geomean {r['geomean_ratio_2t']:.2f}x) onnxruntime's time with 2 threads on "
            f"{r['host']} (`benchmarks/torchvision_cpu.py`)")


def _recurrent_cpu(r: dict) -> str:
    rows = {(row["case"], row["threads"]): row for row in r["cases"]}
    speech = rows[("lstm_speech_100x1x80_h256", 2)]
    return (f"{r['geomean_ratio_vs_ort_2t']:.2f}x onnxruntime's time with 2 threads and "
            f"{r['geomean_ratio_vs_ort_1t']:.2f}x with 1 (geomeans over {len(r['cases']) // 2} layers; an LSTM of "
            f"100 steps and 256 units {speech['ours_ms']:.2f} against {speech['ort_ms']:.2f} ms, and "
            f"{speech['host_ms']:.2f} ms as numpy host steps) on {r['host']} (`benchmarks/recurrent_cpu.py`)")


# span name -> its rendering from the saved results of the benchmark the name starts with
SPANS = {"remote_tls": _remote_tls, "vta_compat": _vta_compat, "e2e_cpu": _e2e_cpu,
         "torchvision_cpu": _torchvision_cpu, "recurrent_cpu": _recurrent_cpu,
         "dse_resnet18.table": _dse_clock_table, "dse_resnet18.front": _dse_front,
         "dse_kv260.table": _dse_table, "dse_kv260.fastest": _dse_fastest,
         "dse_aup_zu3.table": _dse_table, "dse_aup_zu3.fastest": _dse_fastest,
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
