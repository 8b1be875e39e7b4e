"""The Python modules a command judge's script imports from beside it: part of the judge as surely as
the script (`judge.py` doing `from helpers import grade`: a `helpers.py` edited to pass everything is
another judge). Read with `ast`, never run.

The rule: `python3 judge/judge.py` puts `judge/` first on the import path, so each `import x`,
`from x import y` and `from .x import y` in the script, and in every module found that way
(recursively, at most MAX_FILES), is looked up as `x.py` or `x/__init__.py` under the script's
directory (a package's `__init__.py` included, and `y` when it is a submodule). What is not there
(the standard library, an installed package) is not bound; nor is a file beside the script that no
import names, nor a module imported by a computed name (`importlib.import_module(name)`).
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

MAX_FILES = 100            # modules followed per script: a judge is not a code base
MAX_PARSE_BYTES = 1 << 20  # a larger file is bound by content, its imports not read


def is_python(path: Path) -> bool:
    """A `.py` file, or a script whose first line is a python shebang (`[judge/judge]`)."""
    if path.suffix == ".py":
        return True
    try:
        with path.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _module(root: Path, parts: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The files (as parts under root) importing the dotted module `parts` runs: each package's
    `__init__.py` on the way, then the module's own `.py` or `__init__.py`."""
    out = []
    for i in range(1, len(parts) + 1):
        here = parts[:i]
        if i < len(parts) or (root.joinpath(*here)).is_dir():
            out.append(here + ("__init__.py",))
        if i == len(parts):
            out.append(here[:-1] + (here[-1] + ".py",))
    return [p for p in out if root.joinpath(*p).is_file()]


def _imports(tree: ast.AST, package: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Dotted names (as parts) the module may import: each import's module and, for `from m import a`,
    `m.a` too (a submodule when `m` is a package; a missing file is dropped by the caller)."""
    out: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [tuple(a.name.split(".")) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(package):
                    continue   # beyond the top: Python refuses it too
                base = package[:len(package) - (node.level - 1)]
            else:
                base = ()
            mod = base + tuple(node.module.split(".")) if node.module else base
            if mod:
                out.append(mod)
            out += [mod + (a.name,) for a in node.names if a.name != "*"]
    return out


def local_modules(script: Path) -> list[tuple[str, Path]]:
    """[(path relative to the script's directory, posix), file] of each module the script imports from
    under its directory, recursively; [] for a script that is not Python."""
    script = Path(script)
    if not script.is_file() or not is_python(script):
        return []
    return follow(script.parent, [(script, ())])


def module_files(root: Path, dotted: str) -> list[tuple[str, ...]]:
    """The files `python -m dotted` runs from under `root` (the working directory, first on its import
    path), as parts under root: each package's `__init__.py`, then the module's `.py`, or a package's
    `__init__.py` and `__main__.py`; [] when it is not there (an installed module)."""
    parts = tuple(dotted.split("."))
    if not all(p.isidentifier() for p in parts):
        return []
    if root.joinpath(*parts, "__main__.py").is_file():      # a package: its __init__.py files, then __main__.py
        return _module(root, parts) + [parts + ("__main__.py",)]
    if root.joinpath(*parts[:-1], parts[-1] + ".py").is_file():
        return _module(root, parts)
    return []


def follow(root: Path, start: list[tuple[Path, tuple[str, ...]]], source: str | None = None) -> list[tuple[str, Path]]:
    """[(path relative to root, posix), file] of each module imported from under `root`, recursively,
    by the files in `start` ((file, the package it is in), themselves not listed) and by `source` (the
    code of `python -c`, run with root first on the import path)."""
    root = Path(root)
    skip = {Path(f) for f, _ in start}
    seen: dict[tuple[str, ...], Path] = {}
    todo: list[tuple[Path | None, tuple[str, ...]]] = ([(None, ())] if source is not None else []) + list(start)
    while todo and len(seen) < MAX_FILES:
        path, package = todo.pop(0)
        try:
            data = source.encode("utf-8") if path is None else path.read_bytes()
            tree = ast.parse(data) if len(data) <= MAX_PARSE_BYTES else None
        except (OSError, SyntaxError, ValueError):
            tree = None
        if tree is None:
            continue
        for name in _imports(tree, package):
            for parts in _module(root, name):
                if parts in seen or len(seen) >= MAX_FILES or root.joinpath(*parts) in skip:
                    continue
                seen[parts] = root.joinpath(*parts)
                todo.append((seen[parts], parts[:-1]))
    return sorted((str(PurePosixPath(*parts)), path) for parts, path in seen.items())
