"""Arrays on the command line (vdla.driver.cli.array_files): `--input NAME=FILE.npy` reads one
numeric .npy array and names the flag and what the file holds otherwise; the other inputs are
random from the seed, the same for the same seed; unknown names are listed."""
import pickle

import numpy as np
import pytest

from vdla.driver.cli.array_files import describe, input_feeds, random_input, read_input
from vdla.driver.plan import ValueSpec


def test_a_npy_array_is_read_back_exactly(tmp_path, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    name, value = read_input(f"input={tmp_path / 'x.npy'}")
    assert name == "input" and value.dtype == np.float32
    np.testing.assert_array_equal(value, x)


def _write(path, kind):
    if kind == "npz":
        with open(path, "wb") as f:                 # a file handle: savez would append .npz to the name
            np.savez(f, a=np.zeros(2), b=np.ones(3))
    elif kind == "pickle":
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif kind == "text":
        path.write_text("1 2 3\n")
    elif kind == "strings":
        np.save(path, np.array(["a", "b"]))
    elif kind == "truncated":
        np.save(path, np.zeros(1000))
        path.write_bytes(path.read_bytes()[:200])
    elif kind == "raw pickle":
        path.write_bytes(pickle.dumps([1, 2]))


@pytest.mark.parametrize("kind, match", [
    ("npz", r"the file is an \.npz archive \(arrays: a, b\), not a \.npy array"),
    ("pickle", r"the file holds Python objects \(a pickle\), which vdla does not load"),
    ("text", r"the file is not a \.npy array \(it lacks numpy's \.npy header"),
    ("raw pickle", r"the file is not a \.npy array"),
    ("strings", r"the file holds <U1 data; expected a numeric array"),
    ("truncated", r"the file is not a readable \.npy array|cannot read the file"),
])
def test_anything_but_one_numeric_npy_array_is_named(tmp_path, kind, match):
    path = tmp_path / "bad.npy"
    _write(path, kind)
    with pytest.raises(ValueError, match=rf"--input x={path}: " + f"(?:{match})"):
        read_input(f"x={path}")


@pytest.mark.parametrize("item, match", [("x", r"--input 'x': expected NAME=FILE.npy"),
                                         ("=f.npy", r"expected NAME=FILE.npy"),
                                         ("x=/no/such/file.npy", r"--input x=/no/such/file.npy: no such file")])
def test_malformed_items_and_missing_files_are_named(item, match):
    with pytest.raises(ValueError, match=match):
        read_input(item)


def test_random_inputs_follow_the_spec_and_the_seed(tmp_path):
    specs = [ValueSpec("f", (2, 3), "float32"), ValueSpec("q", (50,), "uint8"), ValueSpec("m", (4,), "bool"),
             ValueSpec("i", (50,), "int32")]
    a, b = input_feeds(specs, [], seed=7), input_feeds(specs, [], seed=7)
    for s in specs:
        assert a[s.name].dtype == np.dtype(s.dtype) and a[s.name].shape == s.shape
        np.testing.assert_array_equal(a[s.name], b[s.name])
    assert a["q"].max() <= 127 and a["i"].min() >= -128 and a["i"].max() <= 127
    np.save(tmp_path / "f.npy", np.ones((2, 3), np.float32))
    given = input_feeds(specs, [f"f={tmp_path / 'f.npy'}"], seed=7)
    np.testing.assert_array_equal(given["f"], np.ones((2, 3)))
    np.testing.assert_array_equal(random_input(specs[0], np.random.default_rng(0)),
                                  random_input(specs[0], np.random.default_rng(0)))


def test_an_input_the_model_lacks_is_named_with_the_models_inputs(tmp_path):
    np.save(tmp_path / "z.npy", np.ones(2))
    with pytest.raises(ValueError, match=r"unknown inputs \['zz'\]; the model's inputs are \['x'\]"):
        input_feeds([ValueSpec("x", (2,), "float32")], [f"zz={tmp_path / 'z.npy'}"], seed=0)


def test_describe_gives_dtype_shape_and_statistics():
    assert describe(np.array([1, 2, 6], np.int8)) == "int8[3] min 1 max 6 mean 3"
    assert describe(np.zeros((0, 2), np.float32)) == "float32[0, 2] (empty)"
