"""Tests mirror the packages: every module of a vdla package has a test module of its own at the
mirrored path, or an entry in mirror_allowlist.ALLOWLIST that names the test modules covering
it and says why it has none of its own. A named test module must mention the module, or, for an
entry that says the module is exercised `via` another one, mention that one (which must reach the
module through its imports).

The mirrored folder of package vdla.P.Q is TEST_ROOTS[vdla.P]/Q (the longest root that is a
prefix wins). In that folder, module M (a leading underscore dropped) is covered by
test_M.py, test_M_<aspect>.py, or a folder M/ or test_M/ holding test modules. A file
test_A_B.py counts for the longest sibling module its name starts with, so test_artifact_header.py
covers artifact_header.py, not artifact.py. A package's __init__.py is covered by any test
module in its mirrored folder.

Run as a script to list what is missing: .venv/bin/python tests/test_layout_mirror.py
"""
from __future__ import annotations

import re
from pathlib import Path

from mirror_allowlist import ALLOWLIST
from test_imports import REPO, import_edges, modules, package_folders

# Package -> its tests' folder. vdla.hw has two: its Python facts are tested in tests/hw_unit,
# its RTL (and the simulation harness under vdla.hw.rtl) by the cocotb benches of tests/hw.
TEST_ROOTS = {
    "vdla.hw": "tests/hw_unit",
    "vdla.hw.rtl": "tests/hw",
    "vdla.simulator": "tests/simulator",
    "vdla.compiler": "tests/compiler",
    "vdla.driver": "tests/driver",
    "vdla.bitstreams": "tests/bitstreams",
}


def mirrored_folder(package: str, roots: dict[str, str] = TEST_ROOTS) -> str:
    """tests/... folder of a package's tests: its longest root, then the rest of its name."""
    root = max((r for r in roots if package == r or package.startswith(r + ".")), key=len, default=None)
    if root is None:
        raise AssertionError(f"package {package} has no test root: add its folder to TEST_ROOTS")
    rest = package[len(root):].lstrip(".")
    return "/".join([roots[root]] + (rest.split(".") if rest else []))


def owner(test_stem: str, siblings: set[str]) -> str | None:
    """The sibling module a test file named test_<...>.py is about: the longest sibling whose
    name the rest equals or starts with followed by '_'."""
    rest = test_stem[len("test_"):]
    names = [s for s in siblings if rest == s or rest.startswith(s + "_")]
    return max(names, key=len) if names else None


def _has_tests(folder: Path) -> bool:
    return folder.is_dir() and any(folder.rglob("test_*.py"))


def covered(module: str, mods: dict[str, Path], repo: Path = REPO, roots: dict[str, str] = TEST_ROOTS) -> bool:
    """Whether `module` has a test module of its own at the mirrored path."""
    path = mods[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    folder = repo / mirrored_folder(package, roots)
    if path.name == "__init__.py":
        return any(folder.glob("test_*.py"))
    siblings = {p.stem.lstrip("_") for p in path.parent.glob("*.py") if p.name != "__init__.py"}
    name = path.stem.lstrip("_")
    if _has_tests(folder / name) or _has_tests(folder / f"test_{name}"):
        return True
    return any(owner(f.stem, siblings) == name for f in folder.glob("test_*.py"))


def missing(mods: dict[str, Path], allowlist: dict = ALLOWLIST) -> list[str]:
    return sorted(m for m in mods if m not in allowlist and not covered(m, mods))


def mentions(text: str, module: str) -> bool:
    """The text names the module: its dotted name, or its last name as a word (any case: GEMM
    names gemm)."""
    last = module.rpartition(".")[2].lstrip("_")
    return module in text or re.search(rf"(?<![\w.]){re.escape(last)}(?!\w)", text, re.IGNORECASE) is not None


MODS = modules(REPO, package_folders())


def test_every_package_has_a_test_root():
    for package in package_folders():
        mirrored_folder(package)        # raises naming the package when TEST_ROOTS lacks it


def test_every_module_has_a_test_module_or_an_allowlist_entry():
    gaps = missing(MODS)
    assert not gaps, ("modules without a test module at the mirrored path (test_<module>.py) and without an "
                      "entry in tests/mirror_allowlist.py:\n" + "\n".join(
                          f"  {m} ({MODS[m].relative_to(REPO)}) -> {_expected(m)}" for m in gaps))


def _expected(module: str) -> str:
    path = MODS[module]
    if path.name == "__init__.py":
        return mirrored_folder(module) + "/test_*.py"
    return f"{mirrored_folder(module.rpartition('.')[0])}/test_{path.stem.lstrip('_')}.py"


def _reaches(edges, start: str, goal: str) -> bool:
    """Whether `start` imports `goal`, directly or through other vdla modules."""
    imports: dict[str, set[str]] = {}
    for e in edges:
        imports.setdefault(e.importer, set()).add(e.imported)
    seen, todo = {start}, [start]
    while todo:
        for nxt in imports.get(todo.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_allowlist_entries_are_needed_and_name_tests_that_cover_the_module():
    edges = import_edges(REPO, MODS)
    problems = []
    for module, entry in ALLOWLIST.items():
        if module not in MODS:
            problems.append(f"{module}: no such module (remove the entry)")
            continue
        if covered(module, MODS):
            problems.append(f"{module}: has a test module of its own now (remove the entry)")
        if not entry.why.strip() or not entry.tests:
            problems.append(f"{module}: an entry names its tests and says why the module has none of its own")
        named = entry.via or module
        if entry.via and (entry.via not in MODS or not _reaches(edges, entry.via, module)):
            problems.append(f"{module}: via {entry.via}, which does not import it (directly or not)")
        for test in entry.tests:
            path = REPO / test
            if not (test.startswith("tests/") and path.is_file()):
                problems.append(f"{module}: {test} is not a file under tests/")
            elif not mentions(path.read_text(errors="replace"), named):
                problems.append(f"{module}: {test} does not mention {named.rpartition('.')[2]}")
    assert not problems, "\n".join(problems)


def test_test_folders_under_a_root_mirror_a_package_or_a_module():
    """A folder left behind when a package moves, or misspelt, would hold tests of nothing."""
    packages = {mirrored_folder(m) for m, p in MODS.items() if p.name == "__init__.py"}
    module_folders = {f"{mirrored_folder(m.rpartition('.')[0])}/{prefix}{p.stem.lstrip('_')}"
                      for m, p in MODS.items() if p.name != "__init__.py" for prefix in ("", "test_")}
    stray = []
    for root in set(TEST_ROOTS.values()):
        for folder in sorted((REPO / root).rglob("*")):
            rel = folder.relative_to(REPO).as_posix()
            inside_a_module_folder = any(rel.startswith(f + "/") for f in module_folders)
            if folder.is_dir() and _has_tests(folder) and rel not in packages | module_folders \
                    and not inside_a_module_folder:
                stray.append(rel)
    assert not stray, f"test folders that mirror no package or module: {stray}"


def test_a_test_file_counts_for_the_longest_module_its_name_starts_with():
    siblings = {"artifact", "artifact_header", "uop_kernel", "uop_cache", "layout"}
    assert owner("test_artifact_header", siblings) == "artifact_header"
    assert owner("test_artifact_devices", siblings) == "artifact"
    assert owner("test_artifact", siblings) == "artifact"
    assert owner("test_uop_kernel_cache", siblings) == "uop_kernel"
    assert owner("test_uop", siblings) is None and owner("test_layouts", siblings) is None


def test_coverage_on_a_made_up_tree(tmp_path):
    """pkg/{__init__, art, art_header, _ops, sub/__init__, sub/deep}.py against a tests/pkg folder."""
    files = ["pkg/__init__.py", "pkg/art.py", "pkg/art_header.py", "pkg/_ops.py", "pkg/sub/__init__.py",
             "pkg/sub/deep.py", "tests/pkg/test_art_header_fields.py", "tests/pkg/test_ops.py",
             "tests/pkg/sub/deep/test_one_aspect.py"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    mods = {"x": tmp_path / "pkg/__init__.py", "x.art": tmp_path / "pkg/art.py",
            "x.art_header": tmp_path / "pkg/art_header.py", "x._ops": tmp_path / "pkg/_ops.py",
            "x.sub": tmp_path / "pkg/sub/__init__.py", "x.sub.deep": tmp_path / "pkg/sub/deep.py"}
    found = {m: covered(m, mods, tmp_path, {"x": "tests/pkg"}) for m in mods}
    assert found == {"x": True, "x.art": False, "x.art_header": True, "x._ops": True,
                     "x.sub": False, "x.sub.deep": True}


def test_mirrored_folders_take_the_longest_root():
    assert mirrored_folder("vdla.hw") == "tests/hw_unit"
    assert mirrored_folder("vdla.hw.rtl.sim") == "tests/hw/sim"
    assert mirrored_folder("vdla.hw.presets") == "tests/hw_unit/presets"
    assert mirrored_folder("vdla.driver.devices.pynq_sim") == "tests/driver/devices/pynq_sim"


def test_mentions_is_a_whole_name():
    assert mentions("from vdla.driver.remote import address", "vdla.driver.remote.address")
    assert mentions("the pool (vdla.driver.thread_pool)", "vdla.driver.thread_pool")
    assert not mentions("addresses", "vdla.driver.remote.address")
    assert not mentions("x.address", "vdla.driver.remote.address")


if __name__ == "__main__":
    for m in missing(MODS):
        print(f"{m:55s} {MODS[m].relative_to(REPO)} -> {_expected(m)}")
