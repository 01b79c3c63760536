"""The accelerator ops' registry (vdla.compiler.vdla.registry): every op module is gathered,
every accelerator kernel the deploy runtime knows has a compiler record and the other way
round, the ONNX ops they take do not overlap, and no table of accelerator op names lives
outside the op's own modules."""
import ast
from pathlib import Path

from vdla.compiler.vdla import registry
from vdla.compiler.vdla.op import VdlaOp
from vdla.driver.host_ops import vdla as semantics

REPO = Path(__file__).resolve().parents[3]
SOURCE_FOLDERS = ("compiler", "driver", "simulator", "vdla_hw", "benchmarks")


def test_every_op_module_is_gathered():
    modules = sorted(p.stem for p in (REPO / "compiler/vdla/ops").glob("*.py") if p.stem != "__init__")
    assert sorted(op.semantics.run.__module__.rpartition(".")[2] for op in registry.OPS.values()) == modules
    assert all(isinstance(op, VdlaOp) for op in registry.OPS.values())


def test_the_compiler_and_the_runtime_know_the_same_kernels():
    assert set(registry.OPS) == set(semantics.KERNELS)
    assert registry.QUANTIZE in semantics.OPS and registry.DEQUANTIZE in semantics.OPS


def test_each_onnx_op_goes_to_one_accelerator_op():
    sources = [s for op in registry.OPS.values() for s in op.sources]
    assert len(sources) == len(set(sources))
    for op in registry.OPS.values():
        assert all(registry.op_for_source(s) is op for s in op.sources)


def test_tuning_records_name_one_op_each():
    names = [op.tuning.record_op for op in registry.tunable_ops()]
    assert len(names) == len(set(names)) and names
    assert all(registry.op_for_record(n).tuning.record_op == n for n in names)


def _string_constants(path: Path):
    """(line, value) of the string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and (body := node.body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_no_table_of_accelerator_op_names_outside_their_modules():
    """An accelerator op's name is a string in one place, its semantics module in the deploy
    runtime; everything else asks the registry (or that record). A name, or the "Vdla" prefix
    matched by hand, anywhere else is a table that the next op would have to be added to."""
    home = {name: Path(s.run.__code__.co_filename).resolve() for name, s in semantics.SEMANTICS.items()}
    found = []
    for folder in SOURCE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, value in _string_constants(path):
                if (value in home and path.resolve() != home[value]) or value == "Vdla":
                    found.append(f"{path.relative_to(REPO)}:{line}: {value!r}")
    assert not found, "accelerator op names outside their modules:\n" + "\n".join(found)
