"""The stage order of docs/architecture.md, enforced: every import in ember/ (deferred imports inside
functions included) points to the same stage or one above it in the pipeline, and no two modules
import each other, directly or through a loop. A new module must be given a stage here."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "ember"

# stage number, lowest first; a module may import only from stages <= its own (docs/architecture.md)
STAGES = {
    "ember.symbolic": 0, "ember.dtypes": 0, "ember.arrays": 0, "ember.cache": 0, "ember.precision": 0, "ember.comm": 0,
    "ember.data": 0,
    "ember.view": 1, "ember.graph": 1, "ember.primitives": 1,
    "ember.tensor": 2, "ember.ops": 2, "ember.nn": 2, "ember.optim": 2,
    "ember.reference": 3, "ember.autograd": 3, "ember.sharding": 3,
    "ember.kernel": 4,
    "ember.codegen": 5,
    "ember.runtime": 6,
    "ember.search": 7,
    "ember.backends": 8,
    "ember.pipeline": 9,
    "ember.megakernel_choice": 9,
    "ember.llm": 10, "ember.serve": 10, "ember.distributed": 10,
    "ember.frontends": 10, "ember.train": 10, "ember.testing": 10, "ember.demo": 10, "ember.cli": 10, "ember.export": 10, "ember": 10,
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _stage(module: str) -> int:
    best = None
    for prefix, stage in STAGES.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, stage)
    assert best is not None, f"{module} has no stage in tests/test_architecture.py STAGES"
    return best[1]


def _imports() -> dict:
    """module -> set of ember modules it imports (relative imports resolved; `from pkg import mod`
    counted as pkg.mod when that is a module)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    edges = {}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("ember"):
                    continue
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                found.update(subs or [target])
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("ember"))
        edges[mod] = {t for t in found if t != mod}
    return edges


def test_every_import_points_up_the_pipeline():
    bad = [f"{m} (stage {_stage(m)}) imports {t} (stage {_stage(t)})"
           for m, ts in _imports().items() for t in ts if _stage(t) > _stage(m)]
    assert not bad, "imports pointing down the pipeline:\n" + "\n".join(sorted(bad))


# One algebra split over files for size: its constructors canonicalise by calling the rewrite rules,
# and the rules construct expressions, so its modules import each other (deferred imports inside
# functions). Loops inside it are allowed; a loop leaving it is not.
ONE_UNIT = ("ember.symbolic",)


def _same_unit(a: str, b: str) -> bool:
    return any(a.startswith(u + ".") and b.startswith(u + ".") for u in ONE_UNIT)


def test_no_import_loops_between_modules():
    # package __init__ files re-export their modules (ember/__init__ gathers the whole API): skip them
    edges = {m: {t for t in ts if not (ROOT.parent / t.replace(".", "/") / "__init__.py").exists()
                 and not _same_unit(m, t)}
             for m, ts in _imports().items()
             if not (ROOT.parent / m.replace(".", "/") / "__init__.py").exists()}
    loops, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(edges.get(m, ())):
            if state.get(t) == "open":
                loops.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not loops, "import loops:\n" + "\n".join(loops)


def test_the_walker_resolves_relative_and_deferred_imports():
    # known edges: a relative top-level import, and a deferred one inside a function (the form the
    # old runtime <-> search loop took), so a checker that saw neither could not pass
    edges = _imports()
    assert "ember.backends.target" in edges["ember.pipeline"]
    assert "ember.search.driver" in edges["ember.pipeline"]  # imported inside compile()
    assert _stage("ember.pipeline") > _stage("ember.kernel.lower")
