"""Pareto plots of a DSE: latency against LUT, DSP and BRAM, one panel each, every point
marked by the smallest FPGA part it fits (vdla.hw.parts), each part's limit a dashed line,
and the panel's Pareto front (latency vs that resource) drawn as a staircase. A point whose
SRAMs hold no tiling of some layers (they run on the CPU) is drawn hollow and kept off the
staircase: its latency leaves those layers out. Where a point uses UltraRAM a fourth panel shows
it; a point that fits its board only with SRAMs moved to UltraRAM (part_memory, vdla.hw.uram_split)
has an arrow from Yosys's block RAM / UltraRAM to that split's; a board's fastest fitting point
(fastest.py) is ringed."""
from __future__ import annotations

import math

from vdla.hw.parts import PARTS

from .pareto import pareto_front

PANELS = (("lut", "LUT"), ("dsp", "DSP"), ("bram36", "BRAM36"))
URAM_PANEL = ("uram", "URAM288")
PART_STYLES = {"xc7z010": ("#1a9850", "o"), "xc7z020": ("#66bd63", "s"), "xczu3eg": ("#fdae61", "D"),
               "xck26": ("#d6604d", "P"), "xczu7ev": ("#f46d43", "^"), None: ("#a50026", "X")}


def label_positions(rows: list[dict], key: str) -> list[tuple[str, tuple, tuple]]:
    """(id, its point (x, latency), the label's offset in points) for every row: each label at its
    own marker; points that would print their ids on top of each other (within ~4% of the x
    span and 6% of a decade of latency) stack their labels upward, each with a leader line."""
    xs = [r[key] for r in rows]
    span = (max(xs) - min(xs)) or 1.0
    crowd: dict[tuple, int] = {}
    out = []
    for r in rows:
        cell = (round(r[key] / (0.04 * span)), round(math.log10(max(r["ms"], 1e-12)) / 0.06))
        k = crowd[cell] = crowd.get(cell, -1) + 1
        out.append((r["id"], (r[key], r["ms"]), (3, 3 + 9 * k)))
    return out


def write_pareto_plots(rows: list[dict], path: str, title: str = "", mapping: str = "7-series mapping",
                       highlight: str | None = None) -> int:
    """Write the PNG; -> how many points it shows (those with latency and resources). mapping: the
    synthesis flow the axes name; highlight: a row id to ring (a board's fastest fitting point)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [r for r in rows if r.get("ms") is not None and r.get("lut") is not None]
    whole = [r for r in shown if not r.get("untiled")]
    moved = [r for r in shown if (r.get("part_memory") or {}).get("moved")]
    panels = PANELS + ((URAM_PANEL,) if any(r.get("uram") for r in shown) or moved else ())
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.8), squeeze=False)
    for ax, (key, name) in zip(axes[0], panels):
        if not shown:
            ax.text(0.5, 0.5, "no point has both latency and resources", ha="center", va="center",
                    transform=ax.transAxes)
            continue
        for part, (colour, marker) in PART_STYLES.items():
            group = [r for r in whole if r.get("smallest_part") == part]
            if group:
                ax.scatter([r[key] for r in group], [r["ms"] for r in group], c=colour, marker=marker, s=42,
                           edgecolors="black", linewidths=0.5, zorder=3,
                           label=f"fits {part} and up" if part else "fits no listed part")
            group = [r for r in shown if r.get("smallest_part") == part and r not in whole]
            if group:
                ax.scatter([r[key] for r in group], [r["ms"] for r in group], facecolors="none", marker=marker,
                           s=42, edgecolors=colour, linewidths=1.0, zorder=3,
                           label="layers without a tiling on the CPU")
        for r in moved if key in ("bram36", "uram") else ():
            split = r["part_memory"][key]
            ax.annotate("", xy=(split, r["ms"]), xytext=(r[key], r["ms"]), zorder=3,
                        arrowprops={"arrowstyle": "->", "linestyle": ":", "color": "#2166ac"})
            ax.scatter([split], [r["ms"]], s=42, facecolors="none", edgecolors="#2166ac", zorder=3,
                       label="with SRAMs moved to UltraRAM")
        ringed = [r for r in shown if r["id"] == highlight]
        if ringed:
            ax.scatter([ringed[0][key]], [ringed[0]["ms"]], s=170, facecolors="none", edgecolors="#2166ac",
                       linewidths=1.6, zorder=4, label="fastest that fits the board's part")
        for label, point, offset in label_positions(shown, key):
            leader = {"arrowprops": {"arrowstyle": "-", "linewidth": 0.4, "color": "#777777"}} if offset[1] > 3 else {}
            ax.annotate(label, point, fontsize=6, xytext=offset, textcoords="offset points", **leader)
        front = [whole[i] for i in pareto_front(whole, (key, "ms"))]
        front.sort(key=lambda r: r[key])
        if front:
            xs, ys = [front[0][key]], [front[0]["ms"]]
            for r in front[1:]:
                xs += [r[key], r[key]]
                ys += [ys[-1], r["ms"]]
            ax.plot(xs, ys, color="#4d4d4d", linewidth=1.0, zorder=2, label="Pareto front")
        top = max([r[key] for r in shown] + [r["part_memory"][key] for r in moved if key in ("bram36", "uram")])
        for part, limit in ((p, PARTS[p][key]) for p in PARTS):
            if 0 < limit <= 1.6 * top:
                ax.axvline(limit, color=PART_STYLES[part][0], linestyle="--", linewidth=0.9, zorder=1)
                ax.text(limit, 1.0, f" {part}", rotation=90, fontsize=6, va="top", ha="right",
                        color=PART_STYLES[part][0], transform=ax.get_xaxis_transform())
        ax.set_xlabel(f"{name} (Yosys, {mapping})")
        ax.set_ylabel("latency, ms at each point's clock")
        ax.set_yscale("log")
        ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
        ax.set_title(f"latency vs {name}", fontsize=10)
    legend = {}                                  # the hollow points of every part share one entry
    for ax in axes[0]:
        handles, labels = ax.get_legend_handles_labels()
        legend.update({label: handle for label, handle in zip(labels, handles) if label not in legend})
    if legend:
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend), fontsize=8,
                   frameon=False)
    fig.suptitle(title or "design-space exploration", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return len(shown)
