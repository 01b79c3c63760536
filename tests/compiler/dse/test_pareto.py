"""The Pareto front against a brute-force oracle: a row is on the front when no row is
<= on every objective and < on one."""
import numpy as np
import pytest

from vdla.compiler.dse import pareto_front


def oracle(rows, keys):
    usable = [i for i, r in enumerate(rows) if all(r.get(k) is not None for k in keys)]
    m = np.array([[rows[i][k] for k in keys] for i in usable], dtype=float).reshape(len(usable), len(keys))
    front = []
    for a in range(len(usable)):
        beaten = any(np.all(m[b] <= m[a]) and np.any(m[b] < m[a]) for b in range(len(usable)) if b != a)
        if not beaten:
            front.append(usable[a])
    return front


def test_hand_example_keeps_ties_and_drops_the_dominated():
    rows = [{"ms": 1.0, "lut": 10}, {"ms": 2.0, "lut": 5}, {"ms": 2.0, "lut": 6}, {"ms": 1.0, "lut": 10},
            {"ms": 3.0, "lut": 5}, {"ms": 0.5, "lut": None}, {}]
    assert pareto_front(rows, ("ms", "lut")) == [0, 1, 3]
    assert pareto_front(rows, ("ms",)) == [5]


@pytest.mark.parametrize("objectives", [1, 2, 3, 5])
def test_random_rows_match_the_brute_force_oracle(rng, objectives):
    keys = tuple(f"k{j}" for j in range(objectives))
    for _ in range(40):
        n = int(rng.integers(0, 30))
        # few distinct values: many ties and exact duplicates
        values = rng.integers(0, 6, (n, objectives))
        rows = [{k: int(v) for k, v in zip(keys, row)} for row in values]
        for r in rows:
            if rng.random() < 0.1:
                r[keys[-1]] = None
        assert pareto_front(rows, keys) == oracle(rows, keys)
