"""`explore`: the whole design-space exploration of one model over one sweep, top to bottom:
read the sweep -> look every point up in the cache -> evaluate the rest on the pool (local
processes or Ray; one synthesis per distinct RTL), caching each point as it finishes (an
interrupted run keeps them) -> Pareto front -> table (CSV, JSON) and plots (PNG) in the
output folder, which one run at a time may write (dse.lock). A sweep that names its board's
FPGA part is synthesized with that part's flow (vdla.hw.synth.flow) and answers with its fastest
point that fits the part (fastest.py)."""
from __future__ import annotations

import functools
import hashlib
import os
import time
from dataclasses import dataclass, field

from vdla.hw import load_config
from vdla.hw.parts import PARTS, REFERENCE_CLOCK_MHZ, clock_basis, family
from vdla.hw.synth import flow as synth_flow
from vdla.hw.synth import synthesize as yosys_synthesize
from vdla.hw.uram_split import fitting_parts, split

from ..file_lock import exclusive
from . import cache as cache_mod
from .fastest import fastest_fitting
from .pareto import pareto_front
from .plots import write_pareto_plots
from .progress import dse_progress
from .point import evaluate_point, sample_inputs
from .sweep import Sweep, load_sweep
from .table import format_table, write_csv, write_json
from .workers import InlinePool, WorkerFailure

LOCK = "dse.lock"   # held by the run writing the folder

# all minimized; macs_on_cpu because the cycles are the accelerator's only
OBJECTIVES = ("ms", "macs_on_cpu", "lut", "ff", "dsp", "bram36", "uram")
_SYNTH_FIELDS = ("synth_status", "synth_error", "lut", "ff", "dsp", "bram36", "uram", "fits", "synth_seconds",
                 "synth_tool")


@dataclass
class DseResult:
    rows: list
    pareto: list                 # ids of the rows on the front of OBJECTIVES
    files: dict                  # csv, json, png -> path
    evaluated: int = 0           # points computed in this run (the rest came from the cache)
    synthesized: int = 0         # syntheses run in this run
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    part: str | None = None      # the sweep's FPGA part, when it names one
    fastest: str | None = None   # id of the fastest row that fits `part` (fastest.py); None: none fits

    def row(self, point_id: str) -> dict:
        return next(r for r in self.rows if r["id"] == point_id)

    def fastest_line(self) -> str | None:
        """The board's answer in one line (None when the sweep names no part)."""
        if self.part is None:
            return None
        where = f"the {self.part} ({PARTS[self.part]['boards']})"
        if self.fastest is None:
            return f"no point fits {where}"
        r = self.row(self.fastest)
        memory = r.get("part_memory") or {"bram36": r["bram36"], "uram": r.get("uram") or 0, "moved": []}
        moved = f" with {', '.join(memory['moved'])} moved to UltraRAM" if memory["moved"] else ""
        return (f"fastest fitting {where}: {r['id']} {r['label']}: {r['ms']:.2f} ms "
                f"({r['clock_basis']} clock), {r['lut']:,} LUT {r['ff']:,} FF {r['dsp']} DSP "
                f"{memory['bram36']:g} BRAM36 {memory['uram']} URAM{moved}")

    def summary_lines(self) -> list[str]:
        """What a run tells its reader (vdla dse, benchmarks/dse.py): the notes, the counts and
        the front, the files written."""
        return [*(f"note: {note}" for note in self.notes),
                f"{len(self.rows)} point(s), {self.evaluated} evaluated now, {self.synthesized} synthesized, "
                f"{self.seconds:.1f} s; Pareto front: {', '.join(self.pareto) or 'none'}",
                *([self.fastest_line()] if self.part else []),
                f"wrote {self.files['csv']}, {self.files['json']}, {self.files['png']}"]


def _model_bytes(model) -> tuple[bytes, str]:
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ValueError(f"cannot read the model {os.fspath(model)!r}: {exc.strerror or exc}") from None
        return data, os.path.splitext(os.path.basename(os.fspath(model)))[0]
    return model.SerializeToString(), model.graph.name or "model"


def part_synthesizer(part: str):
    """Yosys with the part's flow: the default synthesizer itself for a 7-series part (its cache
    keys unchanged), bound to the part otherwise (a partial: it pickles, and names its part)."""
    return yosys_synthesize if family(part) == "xc7" else functools.partial(yosys_synthesize, part=part)


def _figures(row: dict) -> dict | None:
    return {k: row[k] for k in ("lut", "ff", "dsp", "bram36", "uram")} if row.get("lut") is not None else None


def _flatten_synthesis(row: dict, synthesis: dict | None) -> None:
    synthesis = synthesis or {"synth_status": "skipped"}
    for key in _SYNTH_FIELDS:
        row[key] = synthesis.get(key)
    if _figures(row) is not None:       # judged now: a cached synthesis keeps its figures, not its verdicts
        row["uram"] = row["uram"] or 0
        row["fits"] = fitting_parts(_figures(row), load_config(row["config"]))
    fits = row["fits"]
    row["smallest_part"] = fits[0] if fits else None
    row["fits_xc7z020"] = None if fits is None else "xc7z020" in fits


@dataclass
class _Plan:
    """What a run has to do, and the synthesis bookkeeping shared by its steps."""
    rows: list
    todo: list                                         # items for evaluate_point
    synth_keys: dict = field(default_factory=dict)     # point id -> synthesis cache key (None: unbuildable)
    owners: dict = field(default_factory=dict)         # synthesis key -> the point that synthesizes it
    fresh: dict = field(default_factory=dict)          # synthesis key -> result of this run
    synthesized: int = 0


def _plan(sweep, store, keys: dict, synthesizer, use_cache: bool) -> _Plan:
    """One row per point; cached points filled in; the rest to evaluate, each distinct RTL
    synthesized by one of them (none when its synthesis is cached)."""
    plan = _Plan([], [])
    synth_name = cache_mod.synthesizer_name(synthesizer)
    for point in sweep.points:
        row = {"id": point.id, "label": point.label, "config": point.doc, "overrides": point.overrides,
               "status": "invalid", "error": point.invalid, "cached": False}
        plan.rows.append(row)
        if point.invalid:
            _flatten_synthesis(row, {"synth_status": "skipped"})
            continue
        row.update(config_name=point.config.name, config_hash=point.config.hash,
                   clock_basis=clock_basis(point.config.clock_mhz),
                   key=cache_mod.point_key(point.doc, synth_name=synth_name, **keys))
        hit = store.get("point", row["key"]) if use_cache else None
        if hit is not None:
            row.update({k: v for k, v in hit.items() if k not in ("id", "label", "format")}, cached=True)
            continue
        skey = cache_mod.synth_key(point.config, synth_name) if synthesizer is not None else None
        plan.synth_keys[point.id] = skey
        synthesized_before = use_cache and store.get("synth", skey) is not None
        owner = skey is None or (not synthesized_before and skey not in plan.owners)
        if skey is not None and owner:
            plan.owners[skey] = point.id
        plan.todo.append({"id": point.id, "config": point.doc, "synthesize": synthesizer is not None and owner})
    # longest first: syntheses before the rest, the largest GEMM core (the slowest Yosys run) first
    plan.todo.sort(key=lambda item: (not item["synthesize"],
                                     -(1 << (item["config"]["LOG_BATCH"] + 2 * item["config"]["LOG_BLOCK"]))))
    return plan


def _evaluate(plan: _Plan, pool, common: dict, store, synthesizer, log, progress=None) -> None:
    """Run the plan's items on the pool; rows filled in as results arrive, syntheses cached,
    and each point cached as soon as its synthesis is known too (an interrupted run keeps the
    points it finished, and a rerun evaluates only the rest). `progress`: a DseProgress that
    takes the per-point lines instead of `log`."""
    by_id = {r["id"]: r for r in plan.rows}
    waiting = []        # evaluated points whose RTL's synthesis another point is still running
    for done, (index, outcome) in enumerate(pool.map(evaluate_point, plan.todo, common), 1):
        item = plan.todo[index]
        row = by_id[item["id"]]
        if isinstance(outcome, WorkerFailure):
            row.update(status="failed", error=str(outcome))
            synthesis = {"synth_status": "failed", "synth_error": "its point failed"} if item["synthesize"] else None
        else:
            row.update({k: v for k, v in outcome.items() if k not in ("id", "synthesis")})
            synthesis = outcome.get("synthesis")
        skey = plan.synth_keys.get(item["id"])
        if item["synthesize"] and synthesis is not None:
            plan.synthesized += synthesis.get("synth_status") == "ok"
            row["_synthesis"] = synthesis
            if skey is not None:
                plan.fresh[skey] = synthesis
                if synthesis["synth_status"] in ("ok", "unsupported"):   # a failure is retried next run
                    store.put("synth", skey, synthesis)
        res = f"{row['cycles']:,} cycles" if row.get("cycles") is not None else row["status"]
        if synthesis and synthesis.get("synth_status") == "ok":
            res += f", {synthesis['lut']:,} LUT {synthesis['dsp']} DSP {synthesis['bram36']:g} BRAM36"
        elif not item["synthesize"] and skey in plan.owners:
            res += f" (RTL shared with {plan.owners[skey]})"
        waiting.append(item)
        for ready in [i for i in waiting if _synthesis_known(plan, i, by_id[i["id"]], synthesizer)]:
            waiting.remove(ready)
            _finish(plan, ready, by_id[ready["id"]], store, synthesizer)
        line = f"  [{done}/{len(plan.todo)}] {row['id']} {row['label']}: {res}"
        if progress is not None:
            progress.done(item["synthesize"], line)
        else:
            log(line)
    for item in waiting:        # an owner that gave no synthesis: the cache's, if any
        _finish(plan, item, by_id[item["id"]], store, synthesizer)


def _synthesis_known(plan: _Plan, item: dict, row: dict, synthesizer) -> bool:
    """False while the point's RTL is synthesized by another point of this run that has not
    finished."""
    skey = plan.synth_keys.get(item["id"])
    return (synthesizer is None or "_synthesis" in row or skey is None or skey not in plan.owners
            or skey in plan.fresh)


def _finish(plan: _Plan, item: dict, row: dict, store, synthesizer) -> None:
    """The row gets its synthesis (its own, its RTL owner's, or the cache's) and is cached."""
    skey = plan.synth_keys.get(item["id"])
    synthesis = row.pop("_synthesis", None)
    if synthesis is None and skey is not None:
        synthesis = plan.fresh.get(skey) or store.get("synth", skey)
    if synthesizer is None:
        synthesis = {"synth_status": "skipped", "synth_error": "synthesis not requested"}
    _flatten_synthesis(row, synthesis)
    if row["status"] in ("ok", "compile_failed") and row["synth_status"] != "failed":
        store.put("point", row["key"], {k: v for k, v in row.items() if k != "cached"})


def explore(model, sweep, out_dir, pool=None, calibration: dict | None = None, input_shapes: dict | None = None,
            synthesizer=yosys_synthesize, synth_timeout: float = 1800.0, seed: int = 0, log=print,
            use_cache: bool = True, progress: bool | None = None) -> DseResult:
    """Evaluate every point of `sweep` (a Sweep, a sweep file or its parsed JSON) for `model`
    (ONNX path or ModelProto) and write dse.csv, dse.json and pareto.png into `out_dir`.
    synthesizer=None leaves synthesis out (cycles only); `pool` defaults to this process.
    progress: a progress bar on stderr with the stage (None: where stderr is a terminal)."""
    import onnx
    started = time.perf_counter()
    quiet, log = log is None, log or (lambda *_: None)
    sweep = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    if sweep.part is not None and synthesizer is yosys_synthesize:
        synthesizer = part_synthesizer(sweep.part)
    data, model_name = _model_bytes(model)
    calib, inputs = sample_inputs(onnx.load_from_string(data), calibration, seed, input_shapes)
    keys = {"model_sha": hashlib.sha256(data).hexdigest(), "code_sha": cache_mod.code_digest(),
            "samples_sha": cache_mod.arrays_digest({**{f"calib/{k}": v for k, v in calib.items()},
                                                    **{f"input/{k}": v for k, v in inputs.items()}})}
    os.makedirs(out_dir, exist_ok=True)
    # a second run on the folder would redo the first one's points and overwrite its table
    with exclusive(os.path.join(out_dir, LOCK), wait=False, what=f"DSE folder {os.fspath(out_dir)}"):
        store = cache_mod.Cache(os.path.join(out_dir, "cache"))

        plan = _plan(sweep, store, keys, synthesizer, use_cache)
        pool = pool or InlinePool()
        rows = plan.rows
        if plan.todo:
            log(f"dse: {len(plan.todo)} of {len(rows)} point(s) to evaluate ({len(rows) - len(plan.todo)} cached "
                f"or invalid), {sum(i['synthesize'] for i in plan.todo)} synthesis run(s), on {pool.where}")
        else:
            log(f"dse: all {len(rows)} point(s) from the cache or invalid; nothing to evaluate")
        common = {"model": data, "calibration": calib, "inputs": inputs, "synthesizer": synthesizer,
                  "synth_timeout": synth_timeout, "input_shapes": input_shapes}
        with dse_progress(len(plan.todo), sum(i["synthesize"] for i in plan.todo),
                          False if quiet or not plan.todo else progress) as bar:
            _evaluate(plan, pool, common, store, synthesizer, log, bar)

        # without synthesis the front trades latency against the MACs left to the CPU; with it, a
        # point lacking resources is on no front
        objectives = OBJECTIVES if synthesizer is not None else OBJECTIVES[:2]
        if sweep.part is not None:
            for row in rows:
                figures = _figures(row)
                placed = split(figures, sweep.part, load_config(row["config"])) if figures else None
                row["fits_part"] = None if figures is None else placed is not None
                row["part_memory"] = placed      # RAMB36 / URAM288 on the part, and the SRAMs moved to UltraRAM
        fastest = fastest_fitting(rows, sweep.part) if sweep.part is not None else None
        front = pareto_front([r if r["status"] == "ok" else {} for r in rows], objectives)
        for k, row in enumerate(rows):
            row["pareto"] = k in front
        pareto_ids = [rows[k]["id"] for k in front]
        notes = []
        if sweep.dropped_duplicates:
            notes.append(f"{sweep.dropped_duplicates} duplicate point(s) of the sweep dropped")
        untiled = [r["id"] for r in rows if r["status"] == "ok" and r.get("untiled")]
        if untiled:
            notes.append(f"{', '.join(untiled)}: layers no tiling fits these SRAMs run on the CPU (untiled, "
                         "macs_untiled, why in cpu_reasons), which the latency leaves out")
        assumed = [r["id"] for r in rows if r.get("clock_basis") == "assumed"]
        if assumed:
            clocks = sorted({r["config"]["clock_mhz"] for r in rows if r["id"] in assumed})
            notes.append(f"{', '.join(assumed)}: ms at assumed clocks ({', '.join(f'{c:g}' for c in clocks)} MHz): no "
                         f"timing analysis supports them; figures at {REFERENCE_CLOCK_MHZ:g} MHz are the reference "
                         "(vdla.hw.parts.clock_basis)")
        if synthesizer is not None and sweep.part is not None and family(sweep.part) != "xc7":
            notes.append(f"resources: Yosys `{synth_flow(sweep.part)}`, the {sweep.part}'s flow, which fits and "
                         "smallest_part judge against every part; BRAM36 and URAM as Yosys split them, and a fit may "
                         "also move SRAMs Yosys left in block RAM to UltraRAM (part_memory; vdla.hw.uram_split); "
                         "latency at each point's clock_mhz, which synthesis does not check (no timing analysis)")
        elif synthesizer is not None:
            notes.append("resources: Yosys synth_xilinx with the 7-series mapping for every part "
                         "(vdla.hw.parts); latency at each point's clock_mhz, which synthesis does not check (no "
                         "timing analysis)")
        files = {"csv": os.path.join(out_dir, "dse.csv"), "json": os.path.join(out_dir, "dse.json"),
                 "png": os.path.join(out_dir, "pareto.png")}
        elapsed = time.perf_counter() - started
        write_csv(rows, files["csv"])
        write_json({"model": model_name, "model_sha256": keys["model_sha"], "sweep": sweep.name,
                    "base": sweep.base.to_dict(), "points": rows, "pareto": pareto_ids,
                    "pareto_objectives": list(objectives), "parts": PARTS, "evaluated": len(plan.todo),
                    "synthesized": plan.synthesized, "seconds": round(elapsed, 1), "notes": notes,
                    "part": sweep.part, "fastest_fitting": fastest["id"] if fastest else None},
                   files["json"])
        mapping = "7-series mapping" if sweep.part is None or family(sweep.part) == "xc7" else f"{sweep.part} mapping"
        write_pareto_plots(rows, files["png"], f"{model_name}: {len(rows)} configurations ({sweep.name})",
                           mapping=mapping, highlight=fastest["id"] if fastest else None)
        log(format_table(rows))
        return DseResult(rows, pareto_ids, files, len(plan.todo), plan.synthesized, elapsed, notes,
                         sweep.part, fastest["id"] if fastest else None)
