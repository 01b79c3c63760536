"""The DSE's progress bar: points done of those to evaluate, the stage the rest are in (Yosys
runs left, or compile and simulation only) and the time that has passed, ticking while a
synthesis takes minutes and no point finishes. Shown where stderr is a terminal (or when asked);
the per-point lines go above it, on stdout as before."""
from __future__ import annotations

import threading
from contextlib import contextmanager

TICK_S = 1.0     # how often the bar redraws on its own (elapsed time) between finished points


class DseProgress:
    def __init__(self, bar, syntheses: int):
        self.bar, self.syntheses_left = bar, syntheses
        self._stage()

    def _stage(self) -> None:
        stage = (f"{self.syntheses_left} Yosys run(s) left" if self.syntheses_left else
                 "compiling and simulating")
        self.bar.set_postfix_str(stage, refresh=False)

    def done(self, synthesized: bool, line: str) -> None:
        """A point finished (its synthesis with it if it ran one); `line` goes above the bar."""
        self.syntheses_left -= synthesized
        self._stage()
        self.bar.write(line)
        self.bar.update()


@contextmanager
def dse_progress(points: int, syntheses: int, show: bool | None = None):
    """-> DseProgress, or None when no bar is shown (`show` None: where stderr is a terminal)."""
    from tqdm import tqdm
    bar = tqdm(total=points, desc="dse", unit="point", dynamic_ncols=True,
               disable=None if show is None else not show)
    if bar.disable:
        bar.close()
        yield None
        return
    stop = threading.Event()

    def tick():
        while not stop.wait(TICK_S):
            bar.refresh()
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield DseProgress(bar, syntheses)
    finally:
        stop.set()
        ticker.join()
        bar.close()
