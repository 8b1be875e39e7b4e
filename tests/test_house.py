"""The house rule on file size: no .py file under scripts/, hooks/, tools/ or bench/ is over
MAX_LINES lines. A file that grows past it is two concepts: split it by concept (not by
squeezing lines), as docs/architecture.md describes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED_DIRS = ("scripts", "hooks", "tools", "bench")
MAX_LINES = 400


def line_count(path: Path) -> int:
    """Lines as an editor numbers them (a last line without its newline still counts)."""
    return len(path.read_bytes().decode("utf-8").splitlines())


def oversized(root: Path, dirs=CHECKED_DIRS, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(path relative to root, lines) for every .py file under `dirs` with more than `limit` lines."""
    found = []
    for name in dirs:
        for path in sorted((root / name).rglob("*.py")):
            rel = path.relative_to(root).parts
            if "__pycache__" in rel or "node_modules" in rel or any(part.startswith(".") for part in rel):
                continue   # not the project's: .venv, bench/.node (promptfoo, installed by make bench)
            n = line_count(path)
            if n > limit:
                found.append((path.relative_to(root).as_posix(), n))
    return found


def test_no_python_file_in_the_house_is_over_the_limit():
    big = oversized(ROOT)
    assert not big, (f"over {MAX_LINES} lines (split each by concept; docs/architecture.md): "
                     + ", ".join(f"{p} ({n})" for p, n in big))


def test_the_size_check_finds_a_file_over_the_limit(tmp_path):
    # the check can fail: one line over the limit is named, at the limit is not, a file outside
    # the checked dirs is not looked at, and a missing last newline still counts as a line
    (tmp_path / "scripts" / "pkg").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "scripts" / "pkg" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "scripts" / "at_limit.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "bench" / "no_newline.py").write_text("x = 1\n" * MAX_LINES + "y = 2")
    (tmp_path / "docs" / "elsewhere.py").write_text("x = 1\n" * (MAX_LINES + 50))
    vendored = tmp_path / "bench" / ".node" / "node_modules" / "promptfoo" / "wrapper.py"   # make bench's npm install
    vendored.parent.mkdir(parents=True)
    vendored.write_text("x = 1\n" * (MAX_LINES + 80))
    assert oversized(tmp_path) == [("scripts/pkg/big.py", MAX_LINES + 1), ("bench/no_newline.py", MAX_LINES + 1)]
    assert line_count(tmp_path / "scripts" / "at_limit.py") == MAX_LINES


# ------------------------------------------------------------- the docs name rooms that exist

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "references").rglob("*.md")),
        *sorted((ROOT / "skills").rglob("*.md"))]
# `assay.x.y` in backticks is a module (or a name in one); these are schema ids and span
# attributes that look like one
NOT_MODULES = {"assay.calibration", "assay.bucket"}


def named_modules(text: str) -> set[str]:
    """Every `assay.<...>` in backticks and every scripts/assay/<...>.py path a doc names."""
    import re
    dotted = {m.group(1) for m in re.finditer(r"`(assay(?:\.[A-Za-z_]\w*)+)", text)}
    paths = {m.group(0) for m in re.finditer(r"scripts/assay/[\w/]+\.py", text)}
    return (dotted - NOT_MODULES) | paths


def missing_modules(names: set[str], scripts: Path) -> list[str]:
    """The names that are neither a module/package under scripts/ nor a top-level name defined in one."""
    import ast
    bad = []
    for name in sorted(names):
        if name.startswith("scripts/"):
            if not (scripts.parent / name).is_file():
                bad.append(name)
            continue
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            base = scripts.joinpath(*parts[:i])
            path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
            if path.is_file():
                rest = parts[i:]
                if rest:
                    tree = ast.parse(path.read_text(encoding="utf-8"))
                    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                                if isinstance(t, ast.Name)}
                    defined |= {n.target.id for n in tree.body
                                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
                    if rest[0] not in defined:
                        bad.append(name)
                break
        else:
            bad.append(name)
    return bad


def test_every_module_the_docs_name_exists():
    named: dict[str, set[str]] = {}
    for doc in DOCS:
        for name in named_modules(doc.read_text(encoding="utf-8")):
            named.setdefault(name, set()).add(doc.relative_to(ROOT).as_posix())
    bad = missing_modules(set(named), ROOT / "scripts")
    assert not bad, "docs name modules that do not exist (moved? update the doc): " + ", ".join(
        f"{n} in {', '.join(sorted(named[n]))}" for n in bad)


def test_the_architecture_page_names_every_room():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rooms = sorted(p.parent.name for p in (ROOT / "scripts" / "assay").glob("*/__init__.py"))
    assert rooms and [r for r in rooms if f"`{r}/`" not in page] == []


def test_the_module_check_finds_a_moved_module(tmp_path):
    scripts = tmp_path / "scripts"
    (scripts / "assay" / "run").mkdir(parents=True)
    (scripts / "assay" / "__init__.py").write_text("")
    (scripts / "assay" / "run" / "__init__.py").write_text("")
    (scripts / "assay" / "run" / "engine.py").write_text("LIMIT = 3\nTABLE: tuple = ()\n\ndef go():\n    pass\n")
    text = ("`assay.run.engine.go`, `assay.run.engine.LIMIT`, `assay.run.engine.TABLE`, `assay.run` and "
            "scripts/assay/run/engine.py exist; "
            "`assay.run.tracing` moved, `assay.run.engine.gone` never was, nor scripts/assay/run/old.py; "
            "`assay.calibration/1` is a schema id")
    names = named_modules(text)
    assert "assay.calibration" not in names
    assert missing_modules(names, scripts) == ["assay.run.engine.gone", "assay.run.tracing",
                                               "scripts/assay/run/old.py"]
