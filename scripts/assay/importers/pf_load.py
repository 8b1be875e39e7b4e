"""Reading a promptfoo config and everything it points at with `file://`.

`load_config(path)` returns a `Config`: the parsed document, where each key sits (file and
line), and the loaders for `file://` references relative to the config's directory. Tests
come back as `RawTest`s (one per inline test, CSV row or item of a test file), each with its
own file and line; prompts as `RawPrompt`s. References the import cannot read (scripts,
datasets on the network, globs that match nothing) are `Skipped` entries with the reason,
never dropped. YAML is read strictly (assay.core.strict_yaml) by YAML 1.2's core schema, as
promptfoo's js-yaml reads it (`Yes`, `off` stay text); JSON is YAML.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.strict_yaml import MAX_DEPTH, LineIndex, check_flow_depth, loads
from .pf_files import read_text
from .pf_keys import TOP_CARRYING, TOP_KEYS, refuse_near_misses
from .pf_refs import dereference

DATA_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv")
TEXT_SUFFIXES = (".txt", ".md", ".j2", ".njk")
SCRIPT_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".py", ".rb")


@dataclass(frozen=True)
class Where:
    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class Skipped:
    """Something in the config the import did not convert, and why."""
    where: Where
    what: str
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.where.file, "line": self.where.line, "what": self.what, "why": self.why}


@dataclass
class RawTest:
    doc: dict[str, Any]
    where: Where
    lines: LineIndex | None = None       # key paths inside this test, for its assertions
    path: tuple[Any, ...] = ()           # this test's key path in `lines`

    def line_of(self, *keys: Any) -> Where:
        if self.lines is None:
            return self.where
        return Where(self.where.file, self.lines.line_of(self.path + keys) or self.where.line)


@dataclass
class RawPrompt:
    raw: str
    label: str
    where: Where


@dataclass
class Config:
    path: Path
    doc: dict[str, Any]
    lines: LineIndex
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def base(self) -> Path:
        return self.path.parent

    @property
    def label(self) -> str:
        return self.path.name

    def where(self, *keys: Any) -> Where:
        return Where(self.label, self.lines.line_of(keys))

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.base.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def resolve(self, ref: str, where: Where | None = None) -> list[Path]:
        """`file://x` (a glob allowed) -> the files, relative to the config's directory. Every
        path, after symlinks are resolved, must lie inside that directory: anything else (`../`,
        an absolute path, a symlink or a glob match leading out) is refused by name, never read."""
        target = ref[len("file://"):] if ref.startswith("file://") else ref
        if ":" in target and not (self.base / target).exists():   # file://tests.py:generate
            target = target.split(":", 1)[0]
        pattern = str(self.base / target)
        if any(ch in target for ch in "*?["):
            return [self.inside(Path(p), ref, where) for p in sorted(glob.glob(pattern, recursive=True))]
        return [self.inside(Path(pattern), ref, where)]

    def inside(self, path: Path, ref: str, where: Where | None) -> Path:
        root = Path(os.path.realpath(self.base))
        real = Path(os.path.realpath(path))
        if real != root and root not in real.parents:
            at = f"{where}: " if where else ""
            raise AssayError(f"{at}{ref} resolves to {real}, outside the config's folder {root}: the import reads "
                             "only files inside that folder (symlinks resolved); copy the file into it", 2,
                             file=str(where.file if where else self.label), line=where.line if where else None)
        return real


def read_data(path: Path, label: str) -> tuple[Any, LineIndex | None]:
    """A YAML/JSON document with its line index, a JSONL file as a list, a CSV as rows."""
    text = read_text(path, label)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise AssayError(f"{label}:{n}: not a JSON line ({exc})", 2, file=label, line=n) from None
        return rows, LineIndex({(i,): n for i, n in enumerate(range(1, len(rows) + 1))})
    if suffix == ".csv":
        return csv_rows(text, label), None
    try:
        return loads(text, label, core=True)
    except AssayError:
        if suffix == ".json":   # JSON that YAML reads differently (tabs, escapes): no lines
            check_flow_depth(text, label, MAX_DEPTH)    # the strict YAML reader's limit, for JSON read without it
            try:
                return json.loads(text), None
            except RecursionError:
                raise AssayError(f"{label}: nested too deep to read; flatten the structure", 2, file=label) from None
            except ValueError as exc:
                raise AssayError(f"{label}: not valid JSON ({exc})", 2, file=label) from None
        raise


def csv_rows(text: str, label: str) -> list[tuple[int, dict[str, str]]]:
    """(line, row) pairs; the header is line 1. Columns are trimmed like promptfoo's. A row whose number
    of fields is not the header's, or a quote left open to the end of the file, is refused as promptfoo's
    CSV reader refuses it (read on, the fields would shift: a value with a comma would make its tail the
    next column's assertion, or drop one)."""
    read = [1]      # the last line read whole
    try:
        return _csv_rows(text, label, strict=True, read=read)
    except csv.Error as exc:
        if "unexpected end of data" not in str(exc):    # a stray quote inside a value: promptfoo reads on too
            return _csv_rows(text, label, strict=False, read=read)
        line = read[0] + 1
        raise AssayError(f"{label}:{line}: a double quote opened in this row is never closed: promptfoo refuses "
                         'this file too (Quote Not Closed); close it (a quote inside a quoted value is written '
                         'twice: "say ""hi""") and import again', 2, file=label, line=line) from None


def _csv_rows(text: str, label: str, strict: bool, read: list[int]) -> list[tuple[int, dict[str, str]]]:
    reader = csv.reader(io.StringIO(text), strict=strict)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return []
    rows = []
    for values in reader:
        read[0] = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            start = reader.line_num - sum(v.count("\n") for v in values)
            raise AssayError(
                f"{label}:{start}: {len(values)} field(s), but the header (line 1) names {len(header)} "
                f"({', '.join(header)}): promptfoo refuses this file (Invalid Record Length); put a value that "
                'holds a comma in double quotes ("a, b"), or add the missing fields, and import again', 2,
                file=label, line=start)
        rows.append((reader.line_num, dict(zip(header, values))))
    return rows


def load_config(path: str | Path) -> Config:
    p = Path(path)
    if not p.exists():
        raise AssayError(f"{p}: no such promptfoo config (pass promptfooconfig.yaml or a .json config)", 2,
                         file=str(p))
    doc, lines = read_data(p, p.name)
    doc = dereference(doc)
    if not isinstance(doc, dict):
        raise AssayError(f"{p.name}: a promptfoo config is a mapping with prompts, providers and tests "
                         f"(got {type(doc).__name__})", 2, file=p.name)
    cfg = Config(p, doc, lines or LineIndex())
    refuse_near_misses(doc, TOP_KEYS, TOP_CARRYING, cfg.where, "the config")
    return cfg


def _tests_from_file(cfg: Config, ref: str, where: Where) -> list[RawTest]:
    files = cfg.resolve(ref, where)
    if not files:
        cfg.skipped.append(Skipped(where, f"tests {ref}", "the glob matches no file"))
        return []
    out: list[RawTest] = []
    for f in files:
        label = cfg.rel(f)
        suffix = f.suffix.lower()
        if suffix in SCRIPT_SUFFIXES:
            cfg.skipped.append(Skipped(Where(label), f"tests {ref}",
                                       "tests generated by a script are not run by the import; export them to "
                                       "YAML, JSON or CSV and import that"))
            continue
        if suffix not in DATA_SUFFIXES:
            cfg.skipped.append(Skipped(Where(label), f"tests {ref}", f"unknown test file type {suffix or '(none)'}"))
            continue
        data, lines = read_data(f, label)
        if suffix != ".csv":
            data = dereference(data)
        if suffix == ".csv":
            for line, row in data:
                out.append(RawTest(csv_test(row), Where(label, line)))
            continue
        if data is None or data == []:
            cfg.skipped.append(Skipped(Where(label), f"tests {ref}", "the file holds no test (it is empty); write "
                                       "the tests in it, or remove the reference"))
            continue
        items = data if isinstance(data, list) else [data]
        for i, item in enumerate(items):
            key = (i,) if isinstance(data, list) else ()
            line = lines.line_of(key) if lines else None
            if isinstance(item, dict):
                out.append(RawTest(item, Where(label, line), lines, key))
            else:
                cfg.skipped.append(Skipped(Where(label, line), "a test", f"is a {type(item).__name__}, not a mapping"))
    return out


def load_tests(cfg: Config) -> list[RawTest]:
    """Every test of `tests` (inline, a file, a list of both) in promptfoo's order."""
    tests = cfg.doc.get("tests")
    if tests is None:
        return [RawTest({}, cfg.where())]
    if isinstance(tests, str):
        if not tests.startswith("file://"):
            cfg.skipped.append(Skipped(cfg.where("tests"), f"tests {tests}",
                                       "only file:// test sources are read (a dataset on the network is not fetched)"))
            return []
        return _tests_from_file(cfg, tests, cfg.where("tests"))
    if not isinstance(tests, list):
        raise AssayError(f"{cfg.where('tests')}: tests must be a list or a file:// reference", 2, file=cfg.label)
    out: list[RawTest] = []
    for i, item in enumerate(tests):
        where = cfg.where("tests", i)
        if isinstance(item, str):
            if item.startswith("file://"):
                out.extend(_tests_from_file(cfg, item, where))
            else:
                cfg.skipped.append(Skipped(where, f"tests {item}", "only file:// test sources are read"))
        elif isinstance(item, dict):
            out.append(RawTest(item, where, cfg.lines, ("tests", i)))
        else:
            cfg.skipped.append(Skipped(where, "a test", f"is a {type(item).__name__}, not a mapping"))
    return out


def load_default_test(cfg: Config) -> RawTest | None:
    dt = cfg.doc.get("defaultTest")
    if dt is None:
        return None
    if isinstance(dt, str) and dt.startswith("file://"):
        found = _tests_from_file(cfg, dt, cfg.where("defaultTest"))
        return found[0] if found else None
    if not isinstance(dt, dict):
        raise AssayError(f"{cfg.where('defaultTest')}: defaultTest must be a mapping or a file:// reference", 2,
                         file=cfg.label)
    return RawTest(dt, cfg.where("defaultTest"), cfg.lines, ("defaultTest",))


def _prompt_file(cfg: Config, ref: str, label: str | None, where: Where) -> list[RawPrompt]:
    out: list[RawPrompt] = []
    files = cfg.resolve(ref, where)
    for f in files:
        rel = cfg.rel(f)
        suffix = f.suffix.lower()
        if suffix in SCRIPT_SUFFIXES:
            cfg.skipped.append(Skipped(Where(rel), f"prompt {ref}", "a prompt function is not run by the import"))
            continue
        text = read_text(f, rel)
        if suffix in (".yaml", ".yml"):
            doc, _ = loads(text, rel, core=True)
            out.append(RawPrompt(json.dumps(doc, ensure_ascii=False), label or rel, Where(rel, 1)))
        elif suffix in (".json", ".jsonl") or suffix in TEXT_SUFFIXES or not suffix:
            if suffix == ".jsonl":
                parts = [ln for ln in text.splitlines() if ln.strip()]
            elif suffix == ".json":
                parts = [text]
            else:   # a text file holds several prompts separated by a line of `---`
                parts = [p.strip("\n") for p in _split_delimited(text)]
            for n, part in enumerate(parts):
                tag = label or (rel if len(parts) == 1 else f"{rel}#{n + 1}")
                out.append(RawPrompt(part, tag, Where(rel, 1)))
        else:
            cfg.skipped.append(Skipped(Where(rel), f"prompt {ref}", f"unknown prompt file type {suffix}"))
    if not files:
        cfg.skipped.append(Skipped(where, f"prompt {ref}", "the glob matches no file"))
    return out


def _split_delimited(text: str) -> list[str]:
    parts, cur = [], []
    for line in text.splitlines():
        if line.strip() == "---":
            parts.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    parts.append("\n".join(cur))
    return [p for p in parts if p.strip()]


def load_prompts(cfg: Config) -> list[RawPrompt]:
    prompts = cfg.doc.get("prompts")
    if prompts is None:
        return [RawPrompt("{{prompt}}", "{{prompt}}", cfg.where())]
    items: list[tuple[Any, str | None, Where]] = []
    if isinstance(prompts, str):
        items.append((prompts, None, cfg.where("prompts")))
    elif isinstance(prompts, dict):   # {file://path: label}
        items.extend((k, str(v), cfg.where("prompts", k)) for k, v in prompts.items())
    elif isinstance(prompts, list):
        items.extend((p, None, cfg.where("prompts", i)) for i, p in enumerate(prompts))
    else:
        raise AssayError(f"{cfg.where('prompts')}: prompts must be a list, a string or a mapping", 2, file=cfg.label)
    out: list[RawPrompt] = []
    for value, label, where in items:
        if isinstance(value, dict):
            raw = value.get("raw", value.get("content"))
            if raw is None and isinstance(value.get("id"), str) and value["id"].startswith("file://"):
                raw = value["id"]      # {id: file://prompt.json, label: ...}: the id names the file
            label = value.get("label") or value.get("id") or label
            if isinstance(raw, list):
                raw = json.dumps(raw, ensure_ascii=False)
            if isinstance(raw, str) and raw.startswith("file://"):
                out.extend(_prompt_file(cfg, raw, label, where))
            elif isinstance(raw, str):
                out.append(RawPrompt(raw, label or raw[:60], where))
            else:
                cfg.skipped.append(Skipped(where, "a prompt", "has no raw text (a function prompt?)"))
        elif isinstance(value, list):      # an inline chat array
            raw = json.dumps(value, ensure_ascii=False)
            out.append(RawPrompt(raw, label or raw[:60], where))
        elif isinstance(value, str) and value.startswith("file://"):
            out.extend(_prompt_file(cfg, value, label, where))
        elif isinstance(value, str):
            out.append(RawPrompt(value, label or value[:60], where))
        else:
            cfg.skipped.append(Skipped(where, "a prompt", f"is a {type(value).__name__}"))
    return out


def csv_test(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row as a promptfoo test: `__expected*` columns are assertions in promptfoo's
    string form, `__description`/`__threshold`/`__metadata:<key>` as promptfoo reads them,
    every other column a var."""
    from .pf_asserts import assertion_from_string
    test: dict[str, Any] = {"vars": {}, "assert": []}
    for key, value in row.items():
        key = (key or "").strip()
        value = value if isinstance(value, str) else ""
        if key.startswith("__expected"):
            if value.strip():
                test["assert"].append(assertion_from_string(value.strip()))
        elif key == "__description":
            test["description"] = value
        elif key == "__threshold":
            try:
                test["threshold"] = float(value)
            except ValueError:
                pass
        elif key.startswith("__metadata:"):
            if value.strip():
                test.setdefault("metadata", {})[key[len("__metadata:"):]] = value
        elif key.startswith("__"):
            test.setdefault("_unread_columns", []).append(key)
        else:
            test["vars"][key] = value
    return test
