"""Every exception class of vdla (warnings aside) descends from one category of vdla.hw.errors, so
the CLI has an exit status for it; no two share a name, and no class shadows a Python builtin.
Read from the sources rather than imported: some modules need a board, a GPU or Ray to import."""
import ast
import builtins
from pathlib import Path

from vdla.hw import errors

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("vdla_hw", "simulator", "driver", "compiler")
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
# control flow that its module catches, never an error a caller sees (each says so where it is defined;
# quantize.py turns a ShiftRange into an Unquantizable that names the node, and a KeepOnCpu into the
# node's placement on the CPU)
PRIVATE = {"NotLowerable", "_CannotVectorize", "ShiftRange", "KeepOnCpu"}


def _classes() -> dict[str, list[tuple[str, list[str]]]]:
    """name -> [(file, base names)] of every class the packages define."""
    classes: dict[str, list[tuple[str, list[str]]]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                    classes.setdefault(node.name, []).append((str(path.relative_to(ROOT)), bases))
    return classes


def _exception_classes() -> dict[str, list[tuple[str, list[str]]]]:
    """The classes of _classes() whose bases lead to a builtin exception."""
    classes = _classes()
    exceptions: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, defs in classes.items():
            if name not in exceptions and any(b in exceptions or b in BUILTIN_EXCEPTIONS
                                              for _, bases in defs for b in bases if b != name):
                exceptions.add(name)
                grew = True
    return {name: defs for name, defs in classes.items() if name in exceptions}


def _reaches(name: str, goal: str, classes) -> bool:
    if name == goal:
        return True
    if name in BUILTIN_EXCEPTIONS:
        return goal in BUILTIN_EXCEPTIONS and issubclass(getattr(builtins, name), getattr(builtins, goal))
    return any(_reaches(b, goal, classes) for _, bases in classes.get(name, []) for b in bases if b != name)


def test_the_scan_sees_the_classes_it_checks():
    classes = _exception_classes()
    assert {"GraphError", "StepError", "SimulatorError", "ReferenceModelError", "InsnDecodeError",
            "AuthenticationError", "DegenerateCalibration"} <= set(classes)
    assert _reaches("AuthenticationError", "RemoteError", classes) and not _reaches("GraphError", "RunError", classes)


def test_every_error_descends_from_a_category():
    classes = _exception_classes()
    categories = {c.__name__ for c in errors.CATEGORIES}
    outside = sorted(f"{name} ({defs[0][0]})" for name, defs in classes.items()
                     if name not in PRIVATE | categories | {"VdlaError"}
                     and not any(_reaches(name, c, classes) for c in categories)
                     and not _reaches(name, "Warning", classes))
    assert not outside, f"exception classes outside the vdla.hw.errors tree: {outside}"


def test_no_two_exception_classes_share_a_name():
    doubles = {name: [f for f, _ in defs] for name, defs in _exception_classes().items() if len(defs) > 1}
    assert not doubles, doubles


def test_no_class_shadows_a_builtin():
    shadowing = set(_classes()) & set(dir(builtins))
    assert not shadowing, shadowing


def test_categories_are_vdla_errors_and_distinct():
    assert len(set(errors.CATEGORIES)) == len(errors.CATEGORIES) == 6
    for category in errors.CATEGORIES:
        assert issubclass(category, errors.VdlaError)
        assert not any(issubclass(category, other) for other in errors.CATEGORIES if other is not category)
