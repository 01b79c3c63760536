"""benchmarks/onnx_coverage.py on a handful of node tests (Relu and Abs, one worker) in a subprocess:
the JSON line's keys, and its counts restated from its own per-case rows; and its worker pool,
where a case past the timeout or a worker that dies is that case's error and the run goes on."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "onnx_coverage.py"
KEYS = {"cases", "ort_pass", "vdla_pass", "ort_ops", "vdla_ops", "ort_only_ops", "in_scope_cases",
        "in_scope_ort_pass", "in_scope_vdla_pass", "vdla_pass_ratio_in_scope"}


@pytest.fixture(scope="module")
def figures():
    done = subprocess.run([sys.executable, str(BENCH), "--ops", "Relu,Abs", "--jobs", "1", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=BENCH.parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_json_line_has_the_keys(figures):
    assert KEYS <= set(figures)


def test_the_counts_are_those_of_the_rows(figures):
    rows = figures["rows"]
    in_scope = [r for r in rows if r["scope"] == "in"]
    assert rows and all({"Relu", "Abs"} & set(r["ops"]) for r in rows)
    assert all(r["ort"] in ("pass", "fail", "error") for r in rows)
    assert all(r["vdla"] in ("pass", "fail", "unsupported", "error") for r in rows)
    assert figures["cases"] == len(rows)
    assert figures["ort_pass"] == sum(r["ort"] == "pass" for r in rows)
    assert figures["vdla_pass"] == sum(r["vdla"] == "pass" for r in rows)
    assert figures["in_scope_cases"] == len(in_scope)
    assert figures["in_scope_ort_pass"] == sum(r["ort"] == "pass" for r in in_scope)
    assert figures["in_scope_vdla_pass"] == sum(r["vdla"] == "pass" for r in in_scope)
    assert figures["vdla_pass_ratio_in_scope"] == round(figures["in_scope_vdla_pass"] / figures["in_scope_ort_pass"], 4)
    ort_ops = {op for r in rows if r["ort"] == "pass" for op in r["ops"]}
    vdla_ops = {op for r in rows if r["vdla"] == "pass" for op in r["ops"]}
    assert (figures["ort_ops"], figures["vdla_ops"]) == (len(ort_ops), len(vdla_ops))
    assert figures["ort_only_ops"] == sorted({op for r in in_scope if r["ort"] == "pass" for op in r["ops"]} - vdla_ops)
    by_name = {r["name"]: r for r in rows}
    assert by_name["test_relu"]["ort"] == by_name["test_relu"]["vdla"] == "pass"
    assert by_name["test_abs"]["scope"] == "in"


@pytest.fixture
def coverage(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))     # its neighbour ort_peer, as when run as a script
    spec = importlib.util.spec_from_file_location("onnx_coverage", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_hanging_case_or_a_dead_worker_is_that_cases_error(coverage, monkeypatch):
    def vdla(case):
        if case == "hang":
            time.sleep(60)
        if case == "die":
            os._exit(3)
        return "pass", ""
    monkeypatch.setattr(coverage, "run_ort", lambda case: ("pass", ""))
    monkeypatch.setattr(coverage, "run_vdla", vdla)            # the forked workers inherit both
    monkeypatch.setattr(coverage, "_CASES", ["hang", "ok", "die", "ok"])
    started = time.monotonic()
    results = coverage.run_cases([0, 1, 2, 3], jobs=2, timeout=2)
    assert time.monotonic() - started < 30
    assert results[0] == {"ort": ("pass", ""), "vdla": ("error", "timed out after 2 s")}
    assert results[2] == {"ort": ("pass", ""), "vdla": ("error", "worker died (exit code 3)")}
    assert results[1] == results[3] == {"ort": ("pass", ""), "vdla": ("pass", "")}


def test_scope_by_ops_domains_and_dtypes(coverage):
    from onnx import TensorProto, helper

    def model(op, elem=TensorProto.FLOAT, domain=""):
        node = helper.make_node(op, ["x"], ["y"], domain=domain or None)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, [2])],
                                  [helper.make_tensor_value_info("y", elem, [2])])
        return helper.make_model(graph)
    assert coverage.describe(model("Relu")) == (["Relu"], "in")
    assert coverage.describe(model("Relu", TensorProto.BFLOAT16))[1] == "dtype bfloat16"
    assert coverage.describe(model("Relu", TensorProto.FLOAT8E4M3FN))[1] == "dtype float8e4m3fn"
    assert coverage.describe(model("StringNormalizer", TensorProto.STRING))[1] == "string op"
    assert coverage.describe(model("Adam", domain="ai.onnx.preview.training"))[1] == "training op"
    assert coverage.describe(model("Scaler", domain="ai.onnx.ml"))[1] == "domain ai.onnx.ml"
