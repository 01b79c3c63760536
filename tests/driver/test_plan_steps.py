"""The steps of a plan (vdla.driver.plan_steps): one class per kind, each read from its JSON form
with the loader's checks (the buffers it names exist, an alias is the same bytes, a device step
passes its program exactly the buffers the program takes) and written back unchanged."""
import copy
from types import SimpleNamespace

import pytest

from artifact_edits import relu_artifact
from vdla.driver.artifact import ArtifactError
from vdla.driver.plan import AliasStep, GpuStep, KernelStep, PartsStep, Plan, VdlaStep

PARAMS = {"bias": ((16,), "float32")}


def _doc():
    return copy.deepcopy(relu_artifact().header["plan"])


def _vdla_step(**changes):
    step = {"name": "acc", "op": "VdlaAdd", "kind": "vdla", "program": 0, "args": ["x", "bias", "h"],
            "outputs": ["h"], "body": [{"op": "Add", "name": "acc", "inputs": ["x", "bias"], "outputs": ["h"],
                                        "attrs": {}}]}
    return {**step, **changes}


def _program(name, n_params, outputs=()):
    """What the plan reads of a parsed program: its name, its parameters, (GPU) which it writes."""
    return SimpleNamespace(name=name, params=[(f"p{i}", (16,), "float32") for i in range(n_params)],
                           outputs=list(outputs))


def test_every_step_class_round_trips_with_its_kind():
    doc = _doc()
    doc["tensors"]["h2"] = {"shape": [4, 4], "dtype": "float32", "offset": 64}
    doc["tensors"].update(_HALVES)
    doc["steps"] += [{"name": "k", "op": "Relu", "kind": "kernel", "kernel": "k0", "args": ["x", "h"]},
                     {"name": "r", "op": "Reshape", "kind": "alias", "inputs": ["h"], "outputs": ["h2"]},
                     _parts(),
                     _vdla_step(),
                     {"name": "g", "op": "Add", "kind": "gpu", "program": 0, "args": ["x", "bias", "y"]}]
    programs = {"vdla_programs": [_program("v0", 3)], "gpu_programs": [_program("g0", 3, outputs=[2])]}
    plan = Plan.from_dict(doc, PARAMS, programs)
    assert [(type(s), s.kind) for s in plan.steps[2:]] == [(KernelStep, "kernel"), (AliasStep, "alias"),
                                                           (PartsStep, "parts"), (VdlaStep, "vdla"), (GpuStep, "gpu")]
    assert plan.steps[3].source == "h" and plan.steps[3].view == "h2" and plan.steps[5].args[-1] == "h"
    assert plan.steps[4].whole == "x" and plan.steps[4].parts == ("x0", "x1")
    assert plan.to_dict() == {**doc, "dynamic": {}}
    assert Plan.from_dict(plan.to_dict(), PARAMS, programs) == plan


# x (float32[16] at offset 0) as two halves of 32 bytes, and a half that lies elsewhere
_HALVES = {"x0": {"shape": [8], "dtype": "float32", "offset": 0}, "x1": {"shape": [8], "dtype": "float32",
                                                                          "offset": 32},
           "h0": {"shape": [8], "dtype": "float32", "offset": 64}}


def _parts(**changes):
    return {"name": "p", "op": "VdlaSplit", "kind": "parts", "whole": "x", "parts": ["x0", "x1"], **changes}


def _with_step(step, tensors=None):
    def edit(doc):
        doc["tensors"].update(tensors or {})
        doc["steps"].append(step)
    return edit


_VDLA = {"vdla_programs": [_program("v0", 3)]}
_REFUSED = {
    "alias of other bytes": (_with_step({"name": "r", "op": "Reshape", "kind": "alias", "inputs": ["x"],
                                         "outputs": ["h"]}), {},
                             "step 'r' makes 'h' a view of 'x', but they are 64 bytes at offset 64 and 64 bytes "
                             "at offset 0: an alias must be the same bytes"),
    "alias of two": (_with_step({"name": "r", "op": "Reshape", "kind": "alias", "inputs": ["x", "h"],
                                 "outputs": ["h"]}), {}, r"plan.steps\[2\].inputs must be one tensor name"),
    "alias of a parameter": (_with_step({"name": "r", "op": "Reshape", "kind": "alias", "inputs": ["bias"],
                                         "outputs": ["h"]}), {}, "step 'r' aliases 'bias', which is no activation"),
    "kernel without args": (_with_step({"name": "k", "op": "Relu", "kind": "kernel", "kernel": "k0"}), {},
                            r"plan.steps\[2\].args must be present"),
    "vdla without programs": (_with_step(_vdla_step()), {}, "step 'acc' runs on the accelerator, but the artifact "
                                                             "has no vdla_programs"),
    "vdla without args": (_with_step(_vdla_step(args=[])), _VDLA,
                          r"plan.steps\[2\].args must be the kernel's buffers, the output last"),
    "vdla writes a parameter": (_with_step(_vdla_step(args=["x", "h", "bias"])), _VDLA,
                                "step 'acc' writes 'bias', which is no activation"),
    "vdla program index": (_with_step(_vdla_step(program=1)), _VDLA, r"plan.steps\[2\].program must be in \[0, 0\]"),
    "vdla program arity": (_with_step(_vdla_step(args=["x", "h"])), _VDLA,
                           r"step 'acc': program v0 \(vdla_programs\) takes 3 buffers, the step passes 2"),
    "vdla 1vt arity": (_with_step(_vdla_step()), {**_VDLA, "vdla_programs_1vt": [_program("v0", 2)]},
                       r"step 'acc': program v0 \(vdla_programs_1vt\) takes 2 buffers, the step passes 3"),
    "gpu without programs": (_with_step({"name": "g", "op": "Add", "kind": "gpu", "program": 0, "args": ["x"]}), {},
                             "step 'g' runs on the GPU, but the artifact has no gpu_programs"),
    "gpu arity": (_with_step({"name": "g", "op": "Add", "kind": "gpu", "program": 0, "args": ["x"]}),
                  {"gpu_programs": [_program("g0", 3, [2])]},
                  "step 'g': GPU program g0 takes 3 buffers, the step passes 1"),
    "gpu type": (_with_step({"name": "g", "op": "Add", "kind": "gpu", "program": 0, "args": ["x", "bias", "y"]}),
                 {"gpu_programs": [SimpleNamespace(name="g0", params=[("a", (8,), "float32")] * 3, outputs=[2])]},
                 r"step 'g' passes 'x' \(float32\[16\]\) as GPU program g0's a \(float32\[8\]\)"),
    "gpu writes a parameter": (_with_step({"name": "g", "op": "Add", "kind": "gpu", "program": 0,
                                           "args": ["x", "bias", "y"]}),
                               {"gpu_programs": [_program("g0", 3, [1])]}, "step 'g' writes 'bias'"),
    "step kind not text": (_with_step({"name": "s", "op": "Relu", "kind": ["host"]}), {},
                           r"plan.steps\[2\].kind must be one of kernel, host, alias, parts, vdla, gpu"),
    "parts out of order": (_with_step(_parts(parts=["x1", "x0"]), _HALVES), {},
                           r"step 'p' lays 'x1' \(float32, 32 bytes at offset 32\) inside 'x' \(float32, offset 0\), "
                           "where the parts before it end at 0: the parts must be the whole's bytes in order"),
    "parts elsewhere": (_with_step(_parts(parts=["x0", "h0"]), _HALVES), {}, "step 'p' lays 'h0'"),
    "parts short of the whole": (_with_step(_parts(parts=["x0"]), _HALVES), {},
                                 "step 'p': the parts of 'x' end at offset 32, the whole at 64: the parts must be "
                                 "all of its bytes"),
    "parts none": (_with_step(_parts(parts=[]), _HALVES), {},
                   r"plan.steps\[2\].parts must be the tensors laid side by side in the whole"),
    "parts of a parameter": (_with_step(_parts(whole="bias"), _HALVES), {},
                             "step 'p' lays out 'bias', which is no activation"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_a_malformed_step_is_refused_with_the_field_named(case):
    edit, programs, message = _REFUSED[case]
    doc = _doc()
    edit(doc)
    with pytest.raises(ArtifactError, match="artifact header: " + message):
        Plan.from_dict(doc, PARAMS, programs)
