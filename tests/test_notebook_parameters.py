"""Every parameter of every notebook, given a value of the wrong type, is refused with an error that names it,
before anything is computed: the notebook's own parameters cell and its checking cell (the code cell after the
parameters, which validates everything before any data or model exists) run with the wrong value injected, as
papermill would inject it."""

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def parameters(path: Path) -> tuple[str, str, list[tuple[str, str]]]:
    """The parameters cell's source, the checking cell's source, and ``(name, annotation)`` of each parameter."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    index = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(cells[index]["source"])
    names = [
        (node.target.id, ast.unparse(node.annotation))
        for node in ast.parse(source).body
        if isinstance(node, ast.AnnAssign)
    ]
    return source, "".join(cells[index + 1]["source"]), names


def wrong_value(annotation: str):
    """A value of another type than ``annotation`` allows."""
    if "list" in annotation or "tuple" in annotation:
        return {"not": "a list"}
    if "bool" in annotation:
        return "yes"
    if "int" in annotation or "float" in annotation:
        return "many"
    return 7  # str, Optional[str]


CASES = [(path, name, annotation) for path in NOTEBOOKS for name, annotation in parameters(path)[2]]


@pytest.mark.parametrize("path, name, annotation", CASES, ids=[f"{p.stem}-{n}" for p, n, _ in CASES])
def test_wrong_type_is_refused_naming_the_parameter(path, name, annotation, monkeypatch):
    from vlp_lib import experiment
    from vlp_lib.data import world

    def forbidden(*args, **kwargs):
        raise AssertionError("computed before validating")

    monkeypatch.setattr(world, "generate", forbidden)
    monkeypatch.setattr(experiment, "run", forbidden)
    params, checks, _ = parameters(path)
    namespace: dict = {}
    exec(compile(params, f"{path.stem}:parameters", "exec"), namespace)
    namespace[name] = wrong_value(annotation)
    with pytest.raises((ValueError, TypeError)) as error:
        exec(compile(checks, f"{path.stem}:checks", "exec"), namespace)
    assert name in str(error.value), f"{path.stem}: {name} = {namespace[name]!r} gave {error.value!r}"
