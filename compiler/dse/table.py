"""The DSE's table: one row per point, written as CSV (a spreadsheet) and JSON (everything)."""
from __future__ import annotations

import csv
import json

from vdla.hw.parts import PARTS

CONFIG_COLUMNS = ("LOG_BATCH", "LOG_BLOCK", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
                  "LOG_ACC_BUFF_SIZE", "bus_width_bits", "clock_mhz")
RESULT_COLUMNS = ("status", "cycles", "ms", "gemm_utilization", "launches", "macs_offloaded", "macs_on_cpu",
                  "macs_untiled", "synth_status", "lut", "ff", "dsp", "bram36", "uram", "smallest_part", "fits_part",
                  "pareto", "cached", "error")


def csv_row(row: dict) -> dict:
    out = {"id": row["id"], "label": row["label"], "config": row.get("config_name") or ""}
    out.update({k: row["config"].get(k) for k in CONFIG_COLUMNS})
    out["clock_basis"] = row.get("clock_basis") or ""
    for key in RESULT_COLUMNS:
        value = row.get(key)
        out[key] = "" if value is None else value
    for part in PARTS:
        fits = row.get("fits")
        out[f"fits_{part}"] = "" if fits is None else part in fits
    if row.get("synth_error") and not row.get("error"):
        out["error"] = row["synth_error"]
    return out


def write_csv(rows: list[dict], path: str) -> None:
    columns = ["id", "label", "config", *CONFIG_COLUMNS, "clock_basis", *RESULT_COLUMNS[:-1],
               *[f"fits_{p}" for p in PARTS],
               "error"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(csv_row(row))


def write_json(doc: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def _status(row: dict) -> str:
    """The point's status, and its synthesis's where the point itself went through."""
    if row["status"] != "ok":
        return row["status"]
    return "ok" if row.get("synth_status") in ("ok", "skipped", None) else f"synth {row['synth_status']}"


def format_table(rows: list[dict]) -> str:
    """The table as text for the terminal, with each failed point's reason below it."""
    lines = [f"{'id':<5}{'config':<38}{'status':<18}{'cycles':>12}{'ms':>9}{'util':>6}{'LUT':>8}{'FF':>8}"
             f"{'DSP':>6}{'BRAM':>7}{'URAM':>5}  {'smallest part':<15}pareto"]
    notes = []
    for r in rows:
        def num(key, fmt):
            return fmt.format(r[key]) if r.get(key) is not None else "-"
        ms = num("ms", "{:.3f}") + ("~" if r.get("clock_basis") == "assumed" and r.get("ms") is not None else "")
        lines.append(f"{r['id']:<5}{r['label'][:37]:<38}{_status(r):<18}{num('cycles', '{:,}'):>12}"
                     f"{ms:>9}{num('gemm_utilization', '{:.0%}'):>6}{num('lut', '{:,}'):>8}"
                     f"{num('ff', '{:,}'):>8}{num('dsp', '{:,}'):>6}{num('bram36', '{:g}'):>7}"
                     f"{num('uram', '{:,}'):>5}  "
                     f"{(r.get('smallest_part') or '-'):<15}{'*' if r.get('pareto') else ''}")
        reason = r.get("error") or (r.get("synth_error") if r.get("synth_status") in ("failed", "unsupported")
                                    else None)
        if reason:
            notes.append(f"  {r['id']}: {reason}")
    if any(r.get("clock_basis") == "assumed" and r.get("ms") is not None for r in rows):
        notes.append("  ~ ms at a clock no timing analysis supports (an assumption; vdla.hw.parts.clock_basis)")
    return "\n".join(lines + notes)
