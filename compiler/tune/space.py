"""The schedules of one kernel that a search may measure: the knob settings that fit the
hardware (topi.vdla.plan's knob spaces) and are worth a measurement, the cost model's order
over them, and the neighbours of a setting for evolutionary steps.

Worth a measurement: estimated within MAX_COST_RATIO of the cost model's best, and with at
most MAX_STEP_RATIO times the default schedule's tile steps. The model estimates cycles
well enough to drop what cannot win, but not the wall time of a trial, which grows with
the tile steps (a one-pixel-wide tile over ResNet-18's first layer takes a minute to
compile and simulate, its default two seconds)."""
from __future__ import annotations

from dataclasses import fields, replace

from ..vdla.registry import op_named
from .errors import TuningError

MAX_COST_RATIO = 1.5
MAX_STEP_RATIO = 4
# the knobs that shape a tile's size; the others (threads, chunking, order) are its structure
_SIZE_KNOBS = ("tile_h", "tile_w", "tile_m", "tile_n")


def _value_order(v):
    """Knob values in increasing size; a chunk of 0 means the whole reduction, the largest."""
    return (isinstance(v, str), v == 0 and not isinstance(v, str), v)


class KnobSpace:
    def __init__(self, config, spec, name: str = "kernel", default=None):
        """`default`: the default schedule, whose tile steps bound the others' (None: no bound)."""
        op = op_named(spec.op)
        if op is None or op.tuning is None:
            raise TuningError(f"{name}: {spec.op} kernels have no schedule knobs to tune")
        space, cost, steps = op.tuning.knob_space, op.tuning.cost, op.tuning.steps
        fitting = space(config, spec.layer, spec.ep)
        if not fitting:
            raise TuningError(f"{name}: no schedule of {spec.layer} fits the {config.name} SRAMs")
        costs = {p: cost(config, spec.layer, p, spec.ep) for p in fitting}
        best = min(costs.values())
        max_steps = MAX_STEP_RATIO * steps(spec.layer, default) if default is not None else None
        points = [p for p in fitting if costs[p] <= MAX_COST_RATIO * best and
                  (max_steps is None or steps(spec.layer, p) <= max_steps)]
        self.fitting = len(fitting)
        self.points = points or [min(fitting, key=costs.__getitem__)]
        self.members = set(self.points)
        self.ranked = sorted(self.points, key=costs.__getitem__)
        self.fields = [f.name for f in fields(type(self.points[0]))]
        self.values = {f: sorted({getattr(p, f) for p in self.points}, key=_value_order) for f in self.fields}

    def __len__(self) -> int:
        return len(self.points)

    def model_order(self) -> list:
        """The cost model's ranking, interleaved over structures (everything but the tile
        sizes): the best tile of each structure first, in the order of those tiles' costs,
        then every structure's second best, ... The model does not tell virtual-thread
        axes and loop orders apart, so one structure must not fill the budget."""
        seen: dict[tuple, int] = {}
        keyed = []
        for rank, p in enumerate(self.ranked):
            structure = tuple(getattr(p, f) for f in self.fields if f not in _SIZE_KNOBS)
            seen[structure] = seen.get(structure, -1) + 1
            keyed.append(((seen[structure], rank), p))
        return [p for _, p in sorted(keyed, key=lambda kp: kp[0])]

    def neighbour(self, knobs, rng, tries: int = 32):
        """A fitting setting one or two knobs away from `knobs` (a step to an adjacent value,
        or now and then a jump to any value), or None if none was found in `tries`."""
        movable = [f for f in self.fields if len(self.values[f]) > 1]
        if not movable:
            return None
        knobs = self.canonical(knobs)
        for _ in range(tries):
            k = knobs
            count = min(len(movable), 1 + int(rng.random() < 0.3))
            for f in [movable[i] for i in rng.choice(len(movable), size=count, replace=False)]:
                values = self.values[f]
                i = values.index(getattr(k, f)) if getattr(k, f) in values else 0
                j = int(rng.integers(len(values))) if rng.random() < 0.2 else i + int(rng.choice((-1, 1)))
                k = replace(k, **{f: values[min(max(j, 0), len(values) - 1)]})
            if k != knobs and k in self.members:
                return k
        return None

    @staticmethod
    def canonical(knobs):
        """One name per schedule: with one virtual thread a conv's thread axis means nothing (a
        dense's does: over rows its weights stay for all row tiles)."""
        if knobs.vthreads == 1 and getattr(knobs, "vthread_axis", "oc") == "h":
            return replace(knobs, vthread_axis="oc")
        return knobs

    def random(self, rng):
        return self.points[int(rng.integers(len(self.points)))]
