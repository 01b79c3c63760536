"""The typed execution plan (vdla.driver.plan): Plan.from_dict reads the JSON form a header holds
with every check of the loader, and to_dict writes that form back unchanged, for a hand-written
plan and a compiled one (through the file too). The header-level edits (a tensor past the arena,
an unknown read, ...) are refused through the loader in test_artifact_header.py, the steps'
own checks in test_plan_steps.py."""
import copy

import numpy as np
import pytest

from artifact_edits import relu_artifact
from vdla.driver.artifact import ArtifactError, from_bytes
from vdla.driver.artifact_trust import TrustPolicy
from vdla.driver.plan import HostStep, KernelStep, Plan, ValueSpec, VdlaStep

PARAMS = {"bias": ((16,), "float32")}


def _doc():
    return copy.deepcopy(relu_artifact().header["plan"])


def test_the_hand_written_plan_reads_into_typed_steps_and_writes_back_unchanged():
    doc = _doc()
    plan = Plan.from_dict(doc, PARAMS, {})
    assert plan.name == "relu" and plan.arena_bytes == 192 and plan.inputs == (ValueSpec("x", (16,), "float32"),)
    assert [type(s) for s in plan.steps] == [HostStep, HostStep]
    assert plan.steps[1].outputs == ("y",) and plan.tensors["h"].offset == 64 and plan.tensors["h"].nbytes == 64
    assert plan.to_dict() == {**doc, "dynamic": {}}       # the form make_artifact writes: dynamic always


_REFUSED = {
    "not an object": (lambda doc: [doc], "header.plan must be an object"),
    "no name": (lambda doc: {k: v for k, v in doc.items() if k != "name"}, "plan.name must be present"),
    "negative naive bytes": (lambda doc: {**doc, "naive_bytes": -1}, r"plan.naive_bytes must be in \[0, "),
    "input kind": (lambda doc: {**doc, "inputs": [{**doc["inputs"][0], "kind": "map"}]},
                   r"plan.inputs\[0\].kind must be one of tensor, sequence, optional"),
    "input is a parameter": (lambda doc: {**doc, "inputs": doc["inputs"] + [{"name": "bias", "shape": [16],
                                                                            "dtype": "float32"}]},
                             r"plan.inputs\[1\] names 'bias', which is no tensor of the plan"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_a_malformed_plan_is_refused_with_the_field_named(case):
    edited, message = _REFUSED[case]
    with pytest.raises(ArtifactError, match="artifact header: " + message):
        Plan.from_dict(edited(_doc()), PARAMS, {})


def test_an_output_may_be_a_parameter_and_a_dynamic_value_may_have_unknown_dims():
    doc = _doc()
    doc["outputs"].append({"name": "bias", "shape": [16], "dtype": "float32"})
    doc["dynamic"] = {"nz": {"shape": [2, -1], "dtype": "int64", "kind": "sequence"}}
    doc["steps"][1]["body"].append({"op": "NonZero", "name": "nz", "inputs": ["h"], "outputs": ["nz"], "attrs": {}})
    doc["steps"][1]["outputs"].append("nz")
    plan = Plan.from_dict(doc, PARAMS, {})
    assert plan.dynamic == {"nz": ValueSpec("nz", (2, -1), "int64", "sequence")}
    assert plan.to_dict() == doc


@pytest.fixture(scope="module")
def vdla_artifact():
    from e2e.model_builders import vdla_cnn   # tests/ is on sys.path

    from vdla.compiler.compile_model import compile_model
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((2, 1, 3, 32, 32)).astype(np.float32)}
    return compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib)


def test_a_compiled_plan_round_trips_through_its_dict_and_the_file(vdla_artifact):
    plan = vdla_artifact.plan
    kinds = {type(s) for s in plan.steps}
    assert {VdlaStep, KernelStep} <= kinds, kinds
    doc = plan.to_dict()
    assert doc == vdla_artifact.header["plan"]
    params = vdla_artifact.param_types()
    loaded = from_bytes(vdla_artifact.to_bytes(), policy=TrustPolicy())
    assert loaded.plan == plan and loaded.header["plan"] == doc
    # a vdla step's program takes exactly its buffers, the one-virtual-thread variant too
    for key in ("vdla_programs", "vdla_programs_1vt"):
        programs = loaded.header[key]
        assert len(programs) == len(vdla_artifact.header["vdla_programs"])
        for step in (s for s in plan.steps if isinstance(s, VdlaStep)):
            assert len(programs[step.program]["params"]) == len(step.args)
    assert all(name in params or name in plan.tensors for s in plan.steps if isinstance(s, VdlaStep)
               for name in s.args)
