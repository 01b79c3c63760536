"""A stand-in synthesizer for the DSE tests about tables, Pareto fronts and caching (real
Yosys runs in test_dse_yosys.py): resources that grow with BLOCK, BATCH and the buffers, and
a record of every call in a folder named by VDLA_TEST_SYNTH_LOG (worker processes too)."""
import json
import os
import uuid


def fake_synthesize(config, timeout=None):
    log = os.environ.get("VDLA_TEST_SYNTH_LOG")
    if log:
        with open(os.path.join(log, uuid.uuid4().hex), "w") as f:
            json.dump(config.to_dict(), f)
    macs = config.batch * config.block * config.block
    kib = sum(1 << getattr(config, f"LOG_{m}_BUFF_SIZE") for m in ("UOP", "INP", "WGT", "ACC")) // 1024
    return {"lut": 4000 + 60 * macs, "ff": 3000 + 12 * macs, "dsp": macs * 11 // 16, "bram36": kib / 4,
            "tool": "test stub"}


def failing_synthesize(config, timeout=None):
    raise RuntimeError("the stub refuses")


def calls(folder) -> list[dict]:
    return [json.loads((folder / name).read_text()) for name in sorted(os.listdir(folder))]


# ---- work items for the pool tests (importable by the pools' worker processes) -------------
def work(item, common):
    """item: ('echo', x) -> (x, common); ('raise', msg); ('exit', code): the worker dies;
    ('sleep', seconds) -> os.getpid() after sleeping."""
    import time
    kind, value = item
    if kind == "raise":
        raise ValueError(value)
    if kind == "exit":
        os._exit(value)
    if kind == "sleep":
        time.sleep(value)
        return os.getpid()
    return value, common


def dies_on_the_first_try(item, marker_dir):
    """A task whose worker process dies the first time it runs an item (as a worker the OS
    kills would), and answers the second time."""
    marker = os.path.join(marker_dir, f"tried-{item}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return item * 10
