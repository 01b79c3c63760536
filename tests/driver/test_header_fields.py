"""Typed reads of an artifact header's fields (vdla.driver.header_fields): each accepts what its
name says and refuses anything else with an ArtifactError naming the field's path, what it must
be and (shortened) what it was; sizes are exact Python integers."""
import pytest

from vdla.driver.artifact_errors import ArtifactError
from vdla.driver import header_fields as hf


def test_good_values_come_back():
    assert hf.obj({"a": 1}, "h") == {"a": 1} and hf.field({"k": 3}, "k", "h") == 3
    assert hf.integer(7, "n", 0, 7) == 7 and hf.string("x", "s") == "x"
    assert hf.strings(["a", "b"], "names") == ["a", "b"] and hf.shape([1, 2, 3], "shape") == (1, 2, 3)
    assert hf.dtype("float16", "dtype") == "float16" and hf.array([], "l") == []


@pytest.mark.parametrize("read, match", [
    (lambda: hf.obj([1], "plan"), r"artifact header: plan must be an object, got \[1\]"),
    (lambda: hf.field({}, "offset", "plan.tensors['x']"), r"plan.tensors\['x'\].offset must be present$"),
    (lambda: hf.integer(True, "n"), r"n must be an integer, got True"),
    (lambda: hf.integer(2.0, "n"), r"n must be an integer, got 2.0"),
    (lambda: hf.integer(-1, "n"), r"n must be >= 0, got -1"),
    (lambda: hf.integer(9, "n", 1, 8), r"n must be in \[1, 8\], got 9"),
    (lambda: hf.string(None, "name"), r"name must be a string, got None"),
    (lambda: hf.strings(["a", 2], "inputs"), r"inputs\[1\] must be a string, got 2"),
    (lambda: hf.shape([2, -3], "t.shape"), r"t.shape\[1\] must be >= 0, got -3"),
    (lambda: hf.shape("2x3", "t.shape"), r"t.shape must be a list, got '2x3'"),
    (lambda: hf.dtype("object", "t.dtype"), r"t.dtype must be one of bool, float16, .*, got 'object'"),
])
def test_bad_values_name_the_field_and_what_it_must_be(read, match):
    with pytest.raises(ArtifactError, match=match):
        read()


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(ArtifactError) as info:
        hf.integer("y" * 500, "n")
    assert str(info.value).endswith("got '" + "y" * 56 + "...")   # repr cut to 57 characters and len(str(info.value)) < 120


def test_sizes_are_exact_for_huge_shapes():
    assert hf.nbytes((2**40, 2**20), "float64") == 2**63
    assert hf.nbytes((), "int8") == 1 and hf.MAX_BYTES == 2**48
