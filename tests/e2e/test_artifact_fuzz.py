"""Seeded fuzzing of the artifact loader and executor: truncations, single bit flips anywhere
(unsigned files, and signed ones under a trust policy), and header edits with every digest
recomputed, at random and aimed at what decides memory (tensor shapes, offsets, the arena,
kernel arguments, parameters, aliases). Every case must end in the project's own error with a
message, or run, within a time bound; never a crash, a bare Python exception, or a kernel
handed a buffer that reaches outside the arena and the parameters (header edits run in a
worker process: tests/e2e/artifact_fuzz_worker.py)."""
import copy
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import model_builders as builders
from artifact_edits import read_header, with_header
from vdla.driver import artifact as art
from vdla.driver.artifact_trust import TRAILER, TrustPolicy, generate_key_file

BUDGET_S = 10.0            # per case: generous; these take milliseconds
WORKER = os.path.join(os.path.dirname(__file__), "artifact_fuzz_worker.py")


@pytest.fixture(scope="module")
def artifacts():
    """A CPU artifact with compiled kernels (host steps and aliases too) and one with
    accelerator steps (simulator), as bytes."""
    from vdla.compiler.compile_model import compile_model
    cpu = compile_model(builders.small_cnn())
    calibration = {"input": np.random.default_rng(0).standard_normal((4, 1, 3, 32, 32)).astype(np.float32)}
    vdla = compile_model(builders.vdla_cnn(), target="vdla", calibration=calibration)
    kinds = {s.kind for a in (cpu, vdla) for s in a.plan.steps}
    assert kinds == {"kernel", "host", "alias", "vdla"}
    return {"cpu": cpu.to_bytes(), "vdla": vdla.to_bytes()}


def _expect_refusal(data: bytes, policy, what: str) -> None:
    start = time.perf_counter()
    try:
        art.from_bytes(data, source="fuzz", policy=policy)
    except art.ArtifactError as exc:
        assert str(exc), f"{what}: an ArtifactError without a message"
    else:
        pytest.fail(f"{what}: the damaged artifact loaded")
    assert time.perf_counter() - start < BUDGET_S, f"{what}: took {time.perf_counter() - start:.1f} s"


def test_truncations_and_bit_flips_are_refused(artifacts, tmp_path):
    rng = np.random.default_rng(11)
    key = generate_key_file(tmp_path / "k.key")
    files = [("cpu", artifacts["cpu"], TrustPolicy()), ("vdla", artifacts["vdla"], TrustPolicy())]
    from vdla.driver.artifact_trust import sign
    files.append(("signed cpu", sign(artifacts["cpu"], key), TrustPolicy((key,))))
    for name, data, policy in files:
        n = len(data)
        cuts = set(rng.integers(0, n, 60).tolist()) | {0, 19, 20, n - 1, n - 32, n - TRAILER.size}
        for cut in sorted(cuts):
            _expect_refusal(data[:cut], policy, f"{name} truncated to {cut} of {n} bytes")
        # flips everywhere, denser where the structure is: prefix, header, and the file's tail
        header_end = 20 + int.from_bytes(data[12:20], "little")
        positions = set(rng.integers(0, 20 * 8, 20).tolist()) | set(rng.integers(20 * 8, header_end * 8, 120).tolist()) \
            | set(rng.integers(header_end * 8, n * 8, 60).tolist()) | set(rng.integers((n - 100) * 8, n * 8, 30).tolist())
        for bit in sorted(positions):
            damaged = bytearray(data)
            damaged[bit // 8] ^= 1 << (bit % 8)
            _expect_refusal(bytes(damaged), policy, f"{name} with bit {bit} flipped")


# ---- header edits --------------------------------------------------------------------------
def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _region(path) -> str:
    """Paths are drawn region by region, so the uop lists of the programs do not drown the rest."""
    if not path:
        return "root"
    if path[0] == "plan" and len(path) > 1:
        return f"plan.{path[1]}"
    return str(path[0])


def _get(header, path):
    for p in path:
        header = header[p]
    return header


def _mutants(value, names: list[str], rng) -> list:
    if isinstance(value, bool):
        return [not value, None, 0]
    if isinstance(value, int):
        return [0, -1, value + 1, value - 1, value * 2, value // 2, value + 64, 1 << 40, 1 << 64, str(value), None, 1.5]
    if isinstance(value, float):
        return [0.0, -value, float("nan"), None]
    if isinstance(value, str):
        return [str(rng.choice(names)), "", value + "_", 7, None]
    if isinstance(value, list):
        return [value[:-1], value + value[-1:], value[::-1], [], None, {}, [value]]
    if isinstance(value, dict):
        drop = {k: v for k, v in value.items() if k != (next(iter(value)) if value else None)}
        return [drop, {**value, "junk": 1}, {}, [], None, "x"]
    return [0, {}, "x", []]


def _random_edit(header: dict, rng) -> str:
    by_region: dict[str, list] = {}
    for path in _paths(header):
        by_region.setdefault(_region(path), []).append(path)
    regions = sorted(by_region)
    paths = by_region[regions[rng.integers(len(regions))]]
    path = paths[rng.integers(len(paths))]
    names = sorted(header["plan"]["tensors"]) + sorted(header.get("params", {}))
    options = _mutants(_get(header, path), names, rng)
    new = options[rng.integers(len(options))]
    if not path:
        return "kept the header"
    parent = _get(header, path[:-1])
    parent[path[-1]] = new
    shown = json.dumps(new)[:40] if not isinstance(new, float) else repr(new)
    return f"{'.'.join(map(str, path))} := {shown}"


def _kernel_steps(header):
    return [s for s in header["plan"]["steps"] if s["kind"] == "kernel"]


def _aimed_edit(header: dict, rng) -> str:
    """Coordinated edits an attacker would make so that the header stays self-consistent."""
    plan = header["plan"]
    tensors = plan["tensors"]
    specs = {n: s for index in header.get("kernels", {}).values() for n, s in index["arg_specs"].items()}
    steps = _kernel_steps(header) or [s for s in plan["steps"] if s["kind"] == "vdla"]
    step = steps[rng.integers(len(steps))]
    k = int(rng.integers(len(step["args"])))
    name = step["args"][k]
    which = int(rng.integers(7))

    def retype(new_shape=None, new_dtype=None):
        for table in (tensors.get(name), header["params"].get(name)):
            if table is not None:
                table.update({**({"shape": new_shape} if new_shape is not None else {}),
                              **({"dtype": new_dtype} if new_dtype else {})})
        for spec in plan["inputs"] + plan["outputs"]:
            if spec["name"] == name:
                spec.update({**({"shape": new_shape} if new_shape is not None else {}),
                             **({"dtype": new_dtype} if new_dtype else {})})
        if step.get("kernel") in specs:
            s = specs[step["kernel"]][k]
            s[:] = [new_shape if new_shape is not None else s[0], new_dtype or s[1]]

    if which == 0:
        retype(new_shape=[1] * len(_get_type(header, name)["shape"]))
        return f"shrank {name} (argument {k} of {step['name']}) and its specs"
    if which == 1:
        shape = list(_get_type(header, name)["shape"])
        shape[0] *= 4
        retype(new_shape=shape)
        plan["arena_bytes"] *= 4
        return f"grew {name} (argument {k} of {step['name']}) and the arena 4x"
    if which == 2:
        t = _get_type(header, name)
        retype(new_shape=[int(np.prod(t["shape"]))])
        return f"flattened {name} (argument {k} of {step['name']})"
    if which == 3:
        other = sorted(tensors)[rng.integers(len(tensors))]
        if name in tensors:
            tensors[name]["offset"] = tensors[other]["offset"] + int(rng.choice([0, 4, 64, 4096]))
        return f"moved {name} onto {other}"
    if which == 4 and step.get("kernel"):
        others = sorted(specs)
        step["kernel"] = others[rng.integers(len(others))]
        return f"{step['name']} calls {step['kernel']}"
    if which == 5:
        j = int(rng.integers(len(step["args"])))
        step["args"][k], step["args"][j] = step["args"][j], step["args"][k]
        return f"swapped arguments {k} and {j} of {step['name']}"
    t = _get_type(header, name)
    retype(new_dtype={"float32": "int32", "int32": "float32", "int8": "uint8"}.get(t["dtype"], "int8"))
    return f"retyped {name} (argument {k} of {step['name']})"


def _get_type(header, name):
    return header["plan"]["tensors"].get(name) or header["params"][name]


def _alias_edit(header: dict, rng) -> str:
    aliases = [s for s in header["plan"]["steps"] if s["kind"] == "alias"]
    step = aliases[rng.integers(len(aliases))]
    out = header["plan"]["tensors"][step["outputs"][0]]
    out["offset"] += 64 * int(rng.integers(1, 64))
    return f"moved alias output {step['outputs'][0]}"


def _cases(artifacts, folder, count: int) -> list[dict]:
    rng = np.random.default_rng(2024)
    cases = []
    edits = (_random_edit, _random_edit, _aimed_edit, _alias_edit)
    for i in range(count):
        which = "cpu" if i % 3 else "vdla"
        data = artifacts[which]
        header = copy.deepcopy(read_header(data))
        edit = edits[rng.integers(len(edits))]
        try:
            what = edit(header, rng)
        except (IndexError, KeyError, TypeError, ValueError):
            what = _random_edit(header, rng)   # an aimed edit that does not apply to this artifact
        path = os.path.join(folder, f"case{i}.vdla")
        with open(path, "wb") as f:
            f.write(with_header(data, header))
        cases.append({"path": path, "what": f"{which}: {what}"})
    return cases


def _run_worker(cases_file: str, cases: list[dict]) -> tuple[list[dict], list[str]]:
    """Runs every case; after a crash or hang, goes on with the next one."""
    results, failures, first = [], [], 0
    while first < len(cases):
        proc = subprocess.run([sys.executable, WORKER, cases_file, str(first), str(BUDGET_S)],
                              capture_output=True, text=True, timeout=BUDGET_S * (len(cases) - first) + 60,
                              env={k: v for k, v in os.environ.items() if k != "VDLA_TRUST_KEY"})
        in_flight = None
        for line in proc.stdout.splitlines():
            if line.startswith("start "):
                in_flight = int(line.split()[1])
            elif line.startswith("{"):
                results.append(json.loads(line))
                in_flight = None
        if proc.returncode == 0:
            break
        assert in_flight is not None, f"the worker failed outside a case: {proc.stderr[-3000:]}"
        failures.append(f"case {in_flight} ({cases[in_flight]['what']}): the process died (exit {proc.returncode}) "
                        f"{proc.stderr[-600:]}")
        first = in_flight + 1
    return results, failures


def test_header_edits_end_in_a_project_error_or_a_safe_run(artifacts, tmp_path):
    cases = _cases(artifacts, str(tmp_path), 300)
    cases_file = str(tmp_path / "cases.json")
    with open(cases_file, "w") as f:
        json.dump(cases, f)
    results, failures = _run_worker(cases_file, cases)
    for r in results:
        what = cases[r["case"]]["what"]
        if r["outcome"] in ("bare", "escaped"):
            failures.append(f"case {r['case']} ({what}): {r['outcome']}: {r.get('error', '')} {r['message'][:300]}")
        elif r["outcome"] == "refused" and not r["message"].strip():
            failures.append(f"case {r['case']} ({what}): {r['error']} without a message")
        if r["seconds"] > BUDGET_S:
            failures.append(f"case {r['case']} ({what}): took {r['seconds']:.1f} s")
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures)
    outcomes = [r["outcome"] for r in results]
    # the fuzzer must exercise both paths: refusals, and edits harmless enough to run
    assert outcomes.count("refused") > len(cases) // 2 and outcomes.count("ran") > 0
