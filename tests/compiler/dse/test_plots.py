"""The DSE's Pareto plots (vdla.compiler.dse.plots): every point's id is printed once, at its
own marker; points that crowd one spot stack their labels, each with its own offset, instead
of sharing one label on one marker (two ids on one point read as two configs there)."""
import matplotlib

from vdla.compiler.dse.plots import label_positions, write_pareto_plots

matplotlib.use("Agg")


def _rows():
    return [{"id": "p0", "lut": 20000, "ms": 100.0}, {"id": "p1", "lut": 20100, "ms": 101.0},   # crowded
            {"id": "p2", "lut": 20050, "ms": 99.5}, {"id": "p3", "lut": 40000, "ms": 50.0}]


def test_each_id_once_at_its_own_point_and_crowded_labels_stack():
    placed = label_positions(_rows(), "lut")
    assert [p[0] for p in placed] == ["p0", "p1", "p2", "p3"]
    assert [p[1] for p in placed] == [(r["lut"], r["ms"]) for r in _rows()]
    crowded = [p[2] for p in placed[:3]]
    assert len(set(crowded)) == 3 and placed[3][2] == (3, 3)


def test_the_png_is_written(tmp_path):
    rows = [dict(r, dsp=10, bram36=20, smallest_part="xc7z020") for r in _rows()]
    assert write_pareto_plots(rows, str(tmp_path / "p.png")) == 4
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
