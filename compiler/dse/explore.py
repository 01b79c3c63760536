"""`explore`: the whole design-space exploration of one model over one sweep, top to bottom:
read the sweep -> look every point up in the cache -> evaluate the rest on the pool (local
processes or Ray; one synthesis per distinct RTL) -> merge -> Pareto front -> table (CSV,
JSON) and plots (PNG) in the output folder."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field

from vdla.hw.parts import PARTS
from vdla.hw.synth import synthesize as yosys_synthesize

from . import cache as cache_mod
from .pareto import pareto_front
from .plots import write_pareto_plots
from .point import evaluate_point, sample_inputs
from .sweep import Sweep, load_sweep
from .table import format_table, write_csv, write_json
from .workers import InlinePool, WorkerFailure

OBJECTIVES = ("ms", "lut", "ff", "dsp", "bram36")
_SYNTH_FIELDS = ("synth_status", "synth_error", "lut", "ff", "dsp", "bram36", "fits", "synth_seconds", "synth_tool")


@dataclass
class DseResult:
    rows: list
    pareto: list                 # ids of the rows on the front of OBJECTIVES
    files: dict                  # csv, json, png -> path
    evaluated: int = 0           # points computed in this run (the rest came from the cache)
    synthesized: int = 0         # syntheses run in this run
    seconds: float = 0.0
    notes: list = field(default_factory=list)

    def row(self, point_id: str) -> dict:
        return next(r for r in self.rows if r["id"] == point_id)


def _model_bytes(model) -> tuple[bytes, str]:
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ValueError(f"cannot read the model {os.fspath(model)!r}: {exc.strerror or exc}") from None
        return data, os.path.splitext(os.path.basename(os.fspath(model)))[0]
    return model.SerializeToString(), model.graph.name or "model"


def _flatten_synthesis(row: dict, synthesis: dict | None) -> None:
    synthesis = synthesis or {"synth_status": "skipped"}
    for key in _SYNTH_FIELDS:
        row[key] = synthesis.get(key)
    fits = row["fits"]
    row["smallest_part"] = fits[0] if fits else None
    row["fits_xc7z020"] = None if fits is None else "xc7z020" in fits


def explore(model, sweep, out_dir, pool=None, calibration: dict | None = None, input_shapes: dict | None = None,
            synthesizer=yosys_synthesize, synth_timeout: float = 1800.0, seed: int = 0, log=print,
            use_cache: bool = True) -> DseResult:
    """Evaluate every point of `sweep` (a Sweep, a sweep file or its parsed JSON) for `model`
    (ONNX path or ModelProto) and write dse.csv, dse.json and pareto.png into `out_dir`.
    synthesizer=None leaves synthesis out (cycles only); `pool` defaults to this process."""
    started = time.perf_counter()
    log = log or (lambda *_: None)
    sweep = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    data, model_name = _model_bytes(model)
    model_sha = hashlib.sha256(data).hexdigest()
    import onnx
    calib, inputs = sample_inputs(onnx.load_from_string(data), calibration, seed, input_shapes)
    samples_sha = cache_mod.arrays_digest({**{f"calib/{k}": v for k, v in calib.items()},
                                           **{f"input/{k}": v for k, v in inputs.items()}})
    os.makedirs(out_dir, exist_ok=True)
    store = cache_mod.Cache(os.path.join(out_dir, "cache"))
    synth_name = cache_mod.synthesizer_name(synthesizer)
    code_sha = cache_mod.code_digest()

    rows, todo, synth_owner, synth_keys = [], [], {}, {}
    for point in sweep.points:
        row = {"id": point.id, "label": point.label, "config": point.doc, "overrides": point.overrides,
               "status": "invalid", "error": point.invalid, "cached": False}
        rows.append(row)
        if point.invalid:
            _flatten_synthesis(row, {"synth_status": "skipped"})
            continue
        row.update(config_name=point.config.name, config_hash=point.config.hash)
        row["key"] = cache_mod.point_key(point.doc, model_sha, samples_sha, code_sha, synth_name)
        hit = store.get("point", row["key"]) if use_cache else None
        if hit is not None:
            row.update({k: v for k, v in hit.items() if k not in ("id", "label", "format")}, cached=True)
            continue
        skey = cache_mod.synth_key(point.config, synth_name) if synthesizer is not None else None
        synth_keys[point.id] = skey
        cached_synth = store.get("synth", skey) if use_cache else None
        owner = skey is None or (cached_synth is None and skey not in synth_owner)
        if skey is not None and owner:
            synth_owner[skey] = point.id
        todo.append({"id": point.id, "config": point.doc, "synthesize": synthesizer is not None and owner})

    # longest first: syntheses before the rest, the largest GEMM core (the slowest Yosys run) first
    todo.sort(key=lambda item: (not item["synthesize"], -(1 << (item["config"]["LOG_BATCH"] +
                                                               2 * item["config"]["LOG_BLOCK"]))))
    pool = pool or InlinePool()
    if todo:
        synth_count = sum(item["synthesize"] for item in todo)
        log(f"dse: {len(todo)} of {len(rows)} point(s) to evaluate ({len(rows) - len(todo)} cached or invalid), "
            f"{synth_count} synthesis run(s), on {pool.where}")
    else:
        log(f"dse: all {len(rows)} point(s) from the cache or invalid; nothing to evaluate")
    common = {"model": data, "calibration": calib, "inputs": inputs, "synthesizer": synthesizer,
              "synth_timeout": synth_timeout, "input_shapes": input_shapes}
    by_id = {r["id"]: r for r in rows}
    fresh_synth, synthesized = {}, 0
    for done, (index, outcome) in enumerate(pool.map(evaluate_point, todo, common), 1):
        item = todo[index]
        row = by_id[item["id"]]
        if isinstance(outcome, WorkerFailure):
            row.update(status="failed", error=str(outcome))
            synthesis = {"synth_status": "failed", "synth_error": "its point failed"} if item["synthesize"] else None
        else:
            row.update({k: v for k, v in outcome.items() if k not in ("id", "synthesis")})
            synthesis = outcome.get("synthesis")
        if item["synthesize"] and synthesis is not None:
            synthesized += synthesis.get("synth_status") == "ok"
            skey = synth_keys.get(item["id"])
            if skey is not None:
                fresh_synth[skey] = synthesis
                if synthesis["synth_status"] in ("ok", "unsupported"):
                    store.put("synth", skey, synthesis)
            row["_synthesis"] = synthesis
        res = f"{row['cycles']:,} cycles" if row.get("cycles") is not None else row["status"]
        syn = f", {synthesis['lut']:,} LUT {synthesis['dsp']} DSP {synthesis['bram36']:g} BRAM36" \
            if synthesis and synthesis.get("synth_status") == "ok" else ""
        if not syn and synth_keys.get(item["id"]) in synth_owner and not item["synthesize"]:
            syn = f" (RTL shared with {synth_owner[synth_keys[item['id']]]})"
        log(f"  [{done}/{len(todo)}] {row['id']} {row['label']}: {res}{syn}")

    for item in todo:
        row = by_id[item["id"]]
        skey = synth_keys.get(item["id"])
        synthesis = row.pop("_synthesis", None)
        if synthesis is None and skey is not None:
            synthesis = fresh_synth.get(skey) or store.get("synth", skey)
        if synthesizer is None:
            synthesis = {"synth_status": "skipped", "synth_error": "synthesis not requested"}
        _flatten_synthesis(row, synthesis)
        if row["status"] in ("ok", "compile_failed") and row["synth_status"] != "failed":
            store.put("point", row["key"], {k: v for k, v in row.items() if k not in ("cached",)})

    # without synthesis the front is the fastest point; with it, a point lacking resources is on no front
    objectives = OBJECTIVES if synthesizer is not None else ("ms",)
    candidates = [r if r["status"] == "ok" else {} for r in rows]
    front = pareto_front(candidates, objectives)
    for k, row in enumerate(rows):
        row["pareto"] = k in front
    pareto_ids = [rows[k]["id"] for k in front]
    files = {"csv": os.path.join(out_dir, "dse.csv"), "json": os.path.join(out_dir, "dse.json"),
             "png": os.path.join(out_dir, "pareto.png")}
    notes = []
    if sweep.dropped_duplicates:
        notes.append(f"{sweep.dropped_duplicates} duplicate point(s) of the sweep dropped")
    if synthesizer is not None:
        notes.append("resources: Yosys synth_xilinx with the 7-series mapping for every part (vdla.hw.parts); "
                     "latency at each point's clock_mhz, which synthesis does not check (no timing analysis)")
    write_csv(rows, files["csv"])
    elapsed = time.perf_counter() - started
    write_json({"model": model_name, "model_sha256": model_sha, "sweep": sweep.name, "base": sweep.base.to_dict(),
                "points": rows, "pareto": pareto_ids, "pareto_objectives": list(objectives),
                "parts": PARTS, "evaluated": len(todo), "synthesized": synthesized, "seconds": round(elapsed, 1),
                "notes": notes}, files["json"])
    write_pareto_plots(rows, files["png"], f"{model_name}: {len(rows)} configurations ({sweep.name})")
    log(format_table(rows))
    return DseResult(rows, pareto_ids, files, len(todo), synthesized, elapsed, notes)
