"""The import graph of the vdla packages: no import circles, and the layering of
ARCHITECTURE.md ("Who may import whom").

Every import statement counts, at module level or inside a function: an import moved into a
function to dodge a circle is still a circle (it only fails later, at the call, or loads a
half-initialised module). A package's implicit import when one of its submodules is imported
is not an edge: `import vdla.compiler.tir.expr` runs tir/__init__.py first, and an __init__
that imports its own submodules is no circle with them. Explicit imports of a package (`from
. import x` where x is a name its __init__ defines) are edges to the __init__, so a submodule
that reaches back through its package's __init__ is reported. Imports computed at run time
(importlib.import_module with a built name) are not seen; the CLI and vdla.driver.remote load
their own submodules that way.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Imports that break the layering on purpose: (importing module, imported module) -> why.
# None today; an entry needs a reason a reviewer accepts, and the layering rule it breaks.
LAYERING_EXCEPTIONS: dict[tuple[str, str], str] = {}


def package_folders(repo: Path = REPO) -> dict[str, str]:
    """Import name -> folder, read from setup.py's FOLDERS (the one statement of the mapping)."""
    for node in ast.parse((repo / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FOLDERS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no FOLDERS = {...} mapping the folders into the vdla namespace")


def modules(repo: Path, folders: dict[str, str]) -> dict[str, Path]:
    """Module name -> source file, for every module of a package (a folder with __init__.py,
    as setup.py finds them)."""
    found = {}
    for package, folder in folders.items():
        root = repo / folder
        for init in sorted(root.rglob("__init__.py")):
            parts = init.parent.relative_to(root).parts
            if any(p.startswith((".", "__")) for p in parts):
                continue
            if not all((root.joinpath(*parts[:k]) / "__init__.py").is_file() for k in range(len(parts))):
                continue   # a folder with __init__.py below one without is not a subpackage
            name = ".".join((package, *parts))
            found[name] = init
            for path in sorted(init.parent.glob("*.py")):
                if path.name != "__init__.py":
                    found[f"{name}.{path.stem}"] = path
    return found


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str         # file:line
    in_function: bool  # the import statement is inside a function (runs when it is called)


def _enclosing_functions(tree):
    """Yield (node, inside a function) for every node of the tree."""
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        yield node, inside
        nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((child, nested) for child in ast.iter_child_nodes(node))


def _owner(name: str, known) -> str | None:
    """The longest prefix of the dotted `name` that is one of our modules."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_edges(repo: Path, mods: dict[str, Path]) -> list[Edge]:
    edges = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        where = path.relative_to(repo)
        for node, inside in _enclosing_functions(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [_owner(a.name, mods) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    if node.level - 1 >= len(parts):
                        raise AssertionError(f"{where}:{node.lineno}: relative import beyond the top package")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in mods else _owner(base, mods))
            for target in targets:
                if target and target != name:
                    edges.append(Edge(name, target, f"{where}:{node.lineno}", inside))
    return edges


def strongly_connected(nodes, edges: list[Edge]) -> list[list[str]]:
    """Tarjan's components (iterative: a deep import chain must not hit the recursion limit)."""
    succ = {n: [] for n in nodes}
    for e in edges:
        succ[e.importer].append(e.imported)
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in succ:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                out.append(sorted(component))
    return out


def import_circles(repo: Path, folders: dict[str, str]) -> list[str]:
    """Each circle (a strongly connected component of more than one module) with the imports
    that close it."""
    mods = modules(repo, folders)
    edges = import_edges(repo, mods)
    report = []
    for component in strongly_connected(mods, edges):
        if len(component) > 1:
            inner = sorted({(e.importer, e.imported, e.where, e.in_function) for e in edges
                            if e.importer in component and e.imported in component})
            lines = [f"  {a} -> {b} ({where}{', inside a function' if lazy else ''})" for a, b, where, lazy in inner]
            report.append(f"circle of {len(component)} modules:\n" + "\n".join(lines))
    return report


def _top(module: str) -> str:
    return ".".join(module.split(".")[:2])


# Inside the compiler, its parts in tiers, lowest first: a module imports from its own tier or
# below, never above (the graph IR knows nothing of kernels; the VDLA target sits on topi's
# accelerator kernels; the pipelines sit on everything they run). A part is the first name
# below vdla.compiler (a subpackage or a top-level module); the package itself is the top.
COMPILER_TIERS = (
    ("tir", "graph", "target", "file_lock", "process_pool"),
    ("te", "frontend", "artifact_build"),
    ("intrin",),
    ("schedule",),
    ("codegen", "build"),
    ("topi",),
    ("lower_ops", "vdla"),
    ("lower_graph", "lower_gpu_winograd", "kernel_jobs"),
    ("lower_gpu_graph", "tune"),
    ("compile_cuda",),
    ("compile_model",),
    ("dse", "onnx_backend"),
)


def _compiler_tier(module: str) -> tuple[str, int] | None:
    """(part, tier) of a module of vdla.compiler, or None for one outside it."""
    parts = module.split(".")
    if parts[:2] != ["vdla", "compiler"]:
        return None
    if len(parts) == 2:
        return "vdla.compiler", len(COMPILER_TIERS)
    tier = next((i for i, names in enumerate(COMPILER_TIERS) if parts[2] in names), None)
    if tier is None:
        raise AssertionError(f"{module}: vdla.compiler.{parts[2]} is in no tier of COMPILER_TIERS; add it")
    return parts[2], tier


def compiler_violations(edges: list[Edge]) -> list[str]:
    """Imports inside the compiler from a higher tier (COMPILER_TIERS)."""
    out = []
    for e in edges:
        src, dst = _compiler_tier(e.importer), _compiler_tier(e.imported)
        if src is None or dst is None or src[1] >= dst[1] or (e.importer, e.imported) in LAYERING_EXCEPTIONS:
            continue
        out.append(f"{e.where}: {e.importer} imports {e.imported}, a higher tier of the compiler ({src[0]} is in "
                   f"tier {src[1]}, {dst[0]} in tier {dst[1]}; see COMPILER_TIERS)")
    return out


def layering_violations(repo: Path, folders: dict[str, str]) -> list[str]:
    """ARCHITECTURE.md's rules: vdla.hw imports no other vdla package; vdla.simulator only
    vdla.hw; vdla.driver never vdla.compiler, except the CLI's compiler commands, and those only
    inside the function that runs them (the parser imports every command module, so a
    module-level import would load the compiler for every `vdla run` on a board); inside the
    compiler, no import from a higher tier (COMPILER_TIERS)."""
    ours = set(folders)
    edges = import_edges(repo, modules(repo, folders))
    out = compiler_violations(edges)
    for e in edges:
        src, dst = _top(e.importer), _top(e.imported)
        if src == dst or (e.importer, e.imported) in LAYERING_EXCEPTIONS:
            continue
        if src == "vdla.hw" and dst in ours:
            out.append(f"{e.where}: vdla.hw imports {e.imported} (it imports no other vdla package)")
        elif src == "vdla.simulator" and dst != "vdla.hw":
            out.append(f"{e.where}: vdla.simulator imports {e.imported} (it imports vdla.hw only)")
        elif src == "vdla.driver" and dst == "vdla.compiler":
            if not e.importer.startswith("vdla.driver.cli"):
                out.append(f"{e.where}: the deploy runtime imports {e.imported} (only the CLI's compile "
                           "commands may reach the compiler)")
            elif not e.in_function:
                out.append(f"{e.where}: {e.importer} imports {e.imported} at module level (a CLI command "
                           "imports the compiler inside the function that runs it)")
    return out


# ---- the repository ---------------------------------------------------------------------

def test_the_folders_hold_the_packages():
    mods = modules(REPO, package_folders())
    for package in ("vdla.hw", "vdla.simulator", "vdla.compiler", "vdla.driver", "vdla.bitstreams",
                    "vdla.compiler.tir.expr", "vdla.compiler.codegen.llvm_codegen", "vdla.driver.kernel_abi"):
        assert package in mods


def test_no_import_circles():
    circles = import_circles(REPO, package_folders())
    assert not circles, "\n".join(circles)


def test_layering():
    violations = layering_violations(REPO, package_folders())
    assert not violations, "\n".join(violations)


def test_layering_exceptions_are_still_needed():
    edges = {(e.importer, e.imported) for e in import_edges(REPO, modules(REPO, package_folders()))}
    assert not [pair for pair in LAYERING_EXCEPTIONS if pair not in edges]


# ---- the checker on small trees -----------------------------------------------------------

def _tree(tmp_path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


FOLDERS = {"vdla.hw": "hw", "vdla.compiler": "comp", "vdla.driver": "drv"}


def test_a_function_level_import_still_closes_a_circle(tmp_path):
    repo = _tree(tmp_path, {
        "hw/__init__.py": "", "drv/__init__.py": "",
        "comp/__init__.py": "",
        "comp/a.py": "from .b import helper\n",
        "comp/b.py": "def helper():\n    from . import a\n    return a\n",
    })
    [circle] = import_circles(repo, FOLDERS)
    assert "vdla.compiler.a -> vdla.compiler.b (comp/a.py:1)" in circle
    assert "vdla.compiler.b -> vdla.compiler.a (comp/b.py:2, inside a function)" in circle


def test_a_package_importing_its_submodules_is_no_circle(tmp_path):
    repo = _tree(tmp_path, {
        "hw/__init__.py": "", "drv/__init__.py": "",
        "comp/__init__.py": "from .tir import expr\n",
        "comp/tir/__init__.py": "from .expr import Var\nfrom .stmt import For\n",
        "comp/tir/expr.py": "class Var: pass\n",
        "comp/tir/stmt.py": "from .expr import Var\nfrom vdla.compiler.tir.expr import Var as V\n",
    })
    assert import_circles(repo, FOLDERS) == []


def test_a_submodule_reaching_back_through_its_package_is_a_circle(tmp_path):
    repo = _tree(tmp_path, {
        "hw/__init__.py": "", "drv/__init__.py": "",
        "comp/__init__.py": "",
        "comp/sim/__init__.py": "ENV = 'X'\ndef activate():\n    from .device import Device\n",
        "comp/sim/device.py": "from . import ENV\n",
    })
    [circle] = import_circles(repo, FOLDERS)
    assert "vdla.compiler.sim.device -> vdla.compiler.sim (comp/sim/device.py:1)" in circle


def test_layering_rules(tmp_path):
    repo = _tree(tmp_path, {
        "hw/__init__.py": "from vdla.driver import x\n",
        "comp/__init__.py": "from vdla.hw import config\nfrom vdla.driver import kernel_abi\n",
        "drv/__init__.py": "",
        "drv/x.py": "from ..compiler import build\n",
        "drv/cli/__init__.py": "",
        "drv/cli/compile.py": ("from vdla.compiler import build\n"
                               "def run():\n    from vdla.compiler import compile_model\n"),
    })
    assert layering_violations(repo, FOLDERS) == [
        "hw/__init__.py:1: vdla.hw imports vdla.driver.x (it imports no other vdla package)",
        "drv/x.py:1: the deploy runtime imports vdla.compiler (only the CLI's compile commands may reach "
        "the compiler)",
        "drv/cli/compile.py:1: vdla.driver.cli.compile imports vdla.compiler at module level (a CLI command "
        "imports the compiler inside the function that runs it)",
    ]


def test_an_upward_import_inside_the_compiler_is_reported(tmp_path):
    """A graph pass that reaches up into the accelerator's kernels (as quantization once did,
    inside a function) breaks the compiler's tiers, wherever the import statement sits."""
    repo = _tree(tmp_path, {
        "hw/__init__.py": "", "drv/__init__.py": "",
        "comp/__init__.py": "",
        "comp/graph/__init__.py": "", "comp/topi/__init__.py": "",
        "comp/graph/passes.py": "def quantize():\n    from ..topi import kernels\n",
        "comp/topi/kernels.py": "from ..graph import passes\n",
    })
    [violation] = layering_violations(repo, FOLDERS)
    assert violation.startswith("comp/graph/passes.py:2: vdla.compiler.graph.passes imports vdla.compiler.topi.kernels")
    assert "tier 0" in violation and "tier 5" in violation


def test_every_part_of_the_compiler_has_a_tier():
    parts = {m.split(".")[2] for m in modules(REPO, package_folders()) if m.startswith("vdla.compiler.")}
    tiered = {name for names in COMPILER_TIERS for name in names}
    assert parts <= tiered, f"parts of vdla.compiler in no tier: {sorted(parts - tiered)}"
    assert not tiered - parts, f"COMPILER_TIERS names parts that no longer exist: {sorted(tiered - parts)}"
