"""ONNX operator coverage: every node test of the installed onnx package through vdla and through
onnxruntime, in the same run, each against the test's own reference outputs and tolerances.

vdla runs through its onnx.backend adapter (vdla.compiler.onnx_backend.VdlaBackend: compiled
kernels, numpy host steps for ops without one); onnxruntime through an InferenceSession on its CPU
execution provider (the model's IR version lowered to 13, the highest onnxruntime 1.3x takes; the
node tests are written by onnx 1.23 at up to 14). Per case: its ops, onnxruntime's result
(pass/fail/error) and vdla's (pass/fail/unsupported with the frontend's reason/error).

In scope, as the coverage issue defines it: every op of the default ONNX domain except the training
ops (Adagrad, Adam, Momentum, Gradient, SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss) and
the string ops (StringNormalizer, StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer);
a case is out of scope when one of its nodes is outside that set (ai.onnx.ml and the other
domains included) or when its tensors use a dtype vdla does not take (bfloat16, float8*,
int4/uint4, float4, string, complex).

Cases run in a pool of worker processes (fork: they inherit the loaded tests), each case under a
timeout: a case past it, or one whose worker dies, is an error and its worker is replaced, so a
hanging case cannot stop the run.

Usage: python benchmarks/onnx_coverage.py [--json] [--jobs N] [--timeout S] [--ops A,B] [--limit N]
With --json the last line is one JSON object: cases, ort_pass, vdla_pass, ort_ops, vdla_ops (distinct
ops with a passing case), ort_only_ops (in-scope ops onnxruntime passes a case of and vdla none),
in_scope_cases, in_scope_ort_pass, in_scope_vdla_pass, vdla_pass_ratio_in_scope (in-scope vdla
passes / in-scope onnxruntime passes), and the per-case rows.
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import multiprocessing
import re
import sys
import time
import warnings
from multiprocessing.connection import wait

from ort_peer import ort_session

TRAINING_OPS = {"Adagrad", "Adam", "Momentum", "Gradient", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}
STRING_OPS = {"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer"}
DEFAULT_DOMAINS = ("", "ai.onnx")
ORT_MAX_IR_VERSION = 13
# A worker is replaced after this many cases: what compiling hundreds of models leaves behind in
# one process (kernels loaded, caches) goes with it.
CASES_PER_WORKER = 200

# The loaded node tests: set before the workers fork, which inherit them.
_CASES: list = []


# -- what a case is ---------------------------------------------------------------------------

def _elem_types(type_proto) -> list[int]:
    """The tensor element types in a value's type (sequences, optionals and maps unwrapped)."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        return [getattr(type_proto, kind).elem_type]
    if kind in ("sequence_type", "optional_type"):
        return _elem_types(getattr(type_proto, kind).elem_type)
    if kind == "map_type":
        return [type_proto.map_type.key_type] + _elem_types(type_proto.map_type.value_type)
    return []


def _dtype_out_of_scope(elem_type: int) -> str | None:
    from onnx import TensorProto
    name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else str(elem_type)
    if name in ("BFLOAT16", "STRING", "COMPLEX64", "COMPLEX128", "INT4", "UINT4", "INT2", "UINT2") or \
            name.startswith(("FLOAT8", "FLOAT4")):
        return name.lower()
    return None


def describe(model) -> tuple[list[str], str]:
    """A case's ops (its graph's node types) and its scope: 'in' or why it is out."""
    graph = model.graph
    ops = sorted({n.op_type for n in graph.node})
    for node in graph.node:
        if node.domain not in DEFAULT_DOMAINS:
            return ops, "training op" if node.domain == "ai.onnx.preview.training" else f"domain {node.domain}"
    if set(ops) & TRAINING_OPS:
        return ops, "training op"
    if set(ops) & STRING_OPS:
        return ops, "string op"
    types = [t for v in list(graph.input) + list(graph.output) + list(graph.value_info) for t in _elem_types(v.type)]
    types += [t.data_type for t in graph.initializer]
    types += [a.t.data_type for n in graph.node for a in n.attribute if a.HasField("t")]
    bad = sorted({d for d in map(_dtype_out_of_scope, types) if d})
    if bad:
        return ops, f"dtype {', '.join(bad)}"
    return ops, "in"


def op_in_scope(op: str) -> bool:
    return op not in TRAINING_OPS and op not in STRING_OPS


# -- running one case (in a worker) -----------------------------------------------------------

def _value(v):
    """A test's input or reference output as onnxruntime and vdla take it."""
    import numpy as np
    from onnx import numpy_helper
    if hasattr(v, "SerializeToString"):
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v if v is None else np.asarray(v)


def _failure(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def run_ort(case) -> tuple[str, str]:
    from onnx.backend.test.runner import Runner
    try:
        model = copy.deepcopy(case.model)
        model.ir_version = min(model.ir_version, ORT_MAX_IR_VERSION)
        session = ort_session(model, 1)
        names = [i.name for i in case.model.graph.input]
        for inputs, ref in case.data_sets:
            feeds = {n: v for n, v in zip(names, map(_value, inputs)) if v is not None}
            outputs = session.run(None, feeds)
            Runner.assert_similar_outputs([_value(r) for r in ref], outputs, rtol=case.rtol, atol=case.atol)
    except AssertionError as exc:
        return "fail", _failure(exc)
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {_failure(exc)}"
    return "pass", ""


def run_vdla(case) -> tuple[str, str]:
    from onnx.backend.test.runner import Runner
    from vdla.compiler.frontend import UnsupportedModelError
    from vdla.compiler.onnx_backend import VdlaBackend
    try:
        rep = VdlaBackend.prepare(case.model)
        for inputs, ref in case.data_sets:
            outputs = rep.run([_value(i) for i in inputs])
            Runner.assert_similar_outputs([_value(r) for r in ref], list(outputs), rtol=case.rtol, atol=case.atol)
    except UnsupportedModelError as exc:     # (the list of every supported operator left out)
        return "unsupported", str(exc).split("; supported operators:")[0][:500]
    except AssertionError as exc:
        return "fail", _failure(exc)
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {_failure(exc)}"
    return "pass", ""


def _serve(conn) -> None:
    """A worker: runs the cases it is sent, answering onnxruntime's result, then vdla's."""
    import onnxruntime
    onnxruntime.set_default_logger_severity(4)
    warnings.simplefilter("ignore")
    while True:
        index = conn.recv()
        if index is None:
            return
        conn.send(("ort", index, *run_ort(_CASES[index])))
        conn.send(("vdla", index, *run_vdla(_CASES[index])))


class _Worker:
    def __init__(self, context):
        self.conn, child = context.Pipe()
        self.proc = context.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.index, self.deadline, self.served = None, None, 0

    def give(self, index: int, timeout: float) -> None:
        self.index, self.deadline = index, time.monotonic() + timeout
        self.served += 1
        self.conn.send(index)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


def run_cases(indices: list[int], jobs: int, timeout: float, progress=None) -> dict[int, dict]:
    """{case index: {"ort": (status, detail), "vdla": (status, detail)}} for every case."""
    context = multiprocessing.get_context("fork")
    results = {i: {} for i in indices}
    pending = collections.deque(indices)
    workers = [_Worker(context) for _ in range(max(1, min(jobs, len(indices))))]

    def next_case(worker):
        worker.index = None
        if pending and worker.served >= CASES_PER_WORKER:
            worker.conn.send(None)
            worker.stop()
            workers[workers.index(worker)] = worker = _Worker(context)
        if pending:
            worker.give(pending.popleft(), timeout)

    def finish(worker, why):
        """The case of a worker that hung or died: what it did not answer is an error."""
        for kind in ("ort", "vdla"):
            results[worker.index].setdefault(kind, ("error", why))
        if progress:
            progress.update(1)
        worker.stop()
        workers[workers.index(worker)] = fresh = _Worker(context)
        next_case(fresh)

    for worker in workers:
        next_case(worker)
    while any(w.index is not None for w in workers):
        busy = [w for w in workers if w.index is not None]
        left = max(0.0, min(w.deadline for w in busy) - time.monotonic())
        for conn in wait([w.conn for w in busy], timeout=left):
            worker = next(w for w in busy if w.conn is conn)
            try:
                kind, index, status, detail = worker.conn.recv()
            except (EOFError, OSError):
                worker.proc.join(1)
                finish(worker, f"worker died (exit code {worker.proc.exitcode})")
                continue
            results[index][kind] = (status, detail)
            if len(results[index]) == 2:
                if progress:
                    progress.update(1)
                next_case(worker)
        now = time.monotonic()
        for worker in [w for w in workers if w.index is not None and w.deadline <= now]:
            finish(worker, f"timed out after {timeout:g} s")
    for worker in workers:
        try:
            worker.conn.send(None)
            worker.proc.join(5)
        except OSError:
            pass
        worker.stop()
    return results


# -- the report -------------------------------------------------------------------------------

def reason(op: str, status: str, detail: str) -> str:
    """Why vdla failed a case of `op`, as one line that groups: node and tensor names, opsets and
    the lists of what is supported dropped; the op named only when it is another op of the case."""
    if status == "fail":
        return "fail: outputs differ from the reference"
    detail = re.sub(r"^node .*? \(op ([^,]+), opset \d+\): ", r"\1: ", detail)
    detail = re.sub(r"node '[^']*' \(([^)]*)\)", r"\1", detail)
    detail = re.sub(r"(graph input|input \d+ \(\w+\) =) '[^']*'", r"\1 …", detail)
    detail = re.split(r"; supported (?:operators|attributes):", detail)[0]
    if detail.startswith(f"{op}: "):
        detail = detail[len(op) + 2:]
    return f"{status}: {detail[:160]}"


def summarize(rows: list[dict]) -> dict:
    in_scope = [r for r in rows if r["scope"] == "in"]
    ort_ops = {op for r in rows if r["ort"] == "pass" for op in r["ops"]}
    vdla_ops = {op for r in rows if r["vdla"] == "pass" for op in r["ops"]}
    ort_in_scope = {op for r in in_scope if r["ort"] == "pass" for op in r["ops"] if op_in_scope(op)}
    ort_only = sorted(ort_in_scope - vdla_ops)
    why = collections.defaultdict(list)
    for op in ort_only:
        reasons = collections.Counter(reason(op, r["vdla"], r["vdla_detail"]) for r in in_scope
                                      if op in r["ops"] and r["ort"] == "pass")
        why[reasons.most_common(1)[0][0]].append(op)
    ort_pass = sum(r["ort"] == "pass" for r in in_scope)
    vdla_pass = sum(r["vdla"] == "pass" for r in in_scope)
    return {
        "cases": len(rows),
        "ort_pass": sum(r["ort"] == "pass" for r in rows),
        "vdla_pass": sum(r["vdla"] == "pass" for r in rows),
        "ort_ops": len(ort_ops),
        "vdla_ops": len(vdla_ops),
        "ort_only_ops": ort_only,
        "in_scope_cases": len(in_scope),
        "in_scope_ort_pass": ort_pass,
        "in_scope_vdla_pass": vdla_pass,
        "vdla_pass_ratio_in_scope": round(vdla_pass / ort_pass, 4) if ort_pass else None,
        "ort_status": dict(collections.Counter(r["ort"] for r in rows)),
        "vdla_status": dict(collections.Counter(r["vdla"] for r in rows)),
        "out_of_scope": dict(collections.Counter(r["scope"] for r in rows if r["scope"] != "in")),
        "ort_only_reasons": dict(sorted(why.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
    }


def print_report(rows: list[dict], summary: dict) -> None:
    per_op = collections.defaultdict(lambda: [0, 0, 0, True])
    for r in rows:
        for op in r["ops"]:
            entry = per_op[op]
            entry[0] += 1
            entry[1] += r["ort"] == "pass"
            entry[2] += r["vdla"] == "pass"
            entry[3] &= r["scope"] != "in"
    width = max([len(op) for op in per_op] + [2])
    print(f"{'op':<{width}}  cases  ort  vdla")
    for op in sorted(per_op):
        cases, ort, vdla, all_out = per_op[op]
        note = "  (out of scope)" if all_out or not op_in_scope(op) else ""
        print(f"{op:<{width}}  {cases:5d}  {ort:3d}  {vdla:4d}{note}")
    print(f"\n{summary['cases']} cases: onnxruntime passes {summary['ort_pass']}, vdla {summary['vdla_pass']}; "
          f"ops with a passing case: onnxruntime {summary['ort_ops']}, vdla {summary['vdla_ops']}")
    print(f"in scope: {summary['in_scope_cases']} cases, onnxruntime passes {summary['in_scope_ort_pass']}, vdla "
          f"{summary['in_scope_vdla_pass']} (ratio {summary['vdla_pass_ratio_in_scope']})")
    print("out of scope (cases): " + (", ".join(f"{k} {v}" for k, v in sorted(summary["out_of_scope"].items()))
                                      or "none"))
    print("note: cases with a dtype vdla does not take (bfloat16, float8*, int4/uint4, float4, string, complex) "
          "count as out of scope")
    print(f"\nin-scope ops onnxruntime passes and vdla does not ({len(summary['ort_only_ops'])}), by vdla's reason:")
    for why, ops in summary["ort_only_reasons"].items():
        print(f"  {why}\n      {', '.join(ops)}")


def load_cases(ops: set[str] | None, limit: int | None) -> list:
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the onnx test generators compute log(0) and casts on purpose
        cases = sorted(load_model_tests(kind="node"), key=lambda c: c.name)
    if ops:
        cases = [c for c in cases if ops & {n.op_type for n in c.model.graph.node}]
    return cases[:limit] if limit is not None else cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures and rows")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    parser.add_argument("--ops", help="only the cases whose ops include one of these (comma-separated)")
    parser.add_argument("--limit", type=int, help="only the first N cases (by name, after --ops)")
    args = parser.parse_args(argv)
    from tqdm import tqdm

    started = time.monotonic()
    ops = {o.strip() for o in args.ops.split(",") if o.strip()} if args.ops else None
    _CASES[:] = load_cases(ops, args.limit)
    with tqdm(total=len(_CASES), desc="node tests", unit="case", file=sys.stderr) as bar:
        results = run_cases(list(range(len(_CASES))), args.jobs, args.timeout, bar)
    rows = []
    for index, case in enumerate(_CASES):
        case_ops, scope = describe(case.model)
        (ort, ort_detail), (vdla, vdla_detail) = results[index]["ort"], results[index]["vdla"]
        rows.append({"name": case.name, "ops": case_ops, "scope": scope, "ort": ort, "ort_detail": ort_detail,
                     "vdla": vdla, "vdla_detail": vdla_detail})
    summary = summarize(rows)
    print_report(rows, summary)
    if args.json:
        import onnx
        import onnxruntime
        print(json.dumps({**summary, "jobs": args.jobs, "timeout_s": args.timeout,
                          "seconds": round(time.monotonic() - started, 1), "onnx": onnx.__version__,
                          "onnxruntime": onnxruntime.__version__, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
