"""Rubric files `<state>/rubrics/<rubric_id>.md`: YAML front matter between `---` lines, then a
Markdown body for people. Validated against `rubric.schema.json`; a case pins a version as
`<rubric_id>-v<version>` (the pin), the one name annotations and calibration use too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..core.errors import AssayError

RUBRICS_DIR = "rubrics"
PIN_RE = re.compile(r"^(?P<id>[a-z0-9][a-z0-9-]*[a-z0-9])-v(?P<version>[1-9][0-9]*)$")
_VERSION_SUFFIX = re.compile(r"-v\d+$")
MAX_RUBRIC_BYTES = 256 * 1024


def parse_pin(pin: Any) -> tuple[str, int] | None:
    """`refund-eta-v2` -> ("refund-eta", 2); None when it is not a pin."""
    if not isinstance(pin, str):
        return None
    m = PIN_RE.match(pin)
    return (m.group("id"), int(m.group("version"))) if m else None


def pin_of(rubric: dict[str, Any]) -> str:
    return f"{rubric['rubric_id']}-v{rubric['version']}"


def split_front_matter(text: str, label: str) -> tuple[str, str, int]:
    """(front matter YAML, body, line number of the first front-matter line)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise AssayError(f"{label}:1: a rubric file starts with a `---` line, then YAML front matter "
                         "(rubric_id, version, nodes), then `---` and the Markdown body", 2, file=label, line=1)
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1:]), 2
    raise AssayError(f"{label}: the front matter is never closed; add a `---` line after it", 2, file=label)


def parse_rubric_text(text: str, label: str, *, expected_id: str | None = None) -> dict[str, Any]:
    """Parse and validate one rubric file's text -> {rubric_id, version, nodes, reference_guided, body, source}."""
    from ..schemas import validate
    from ..core.strict_yaml import loads

    front, body, first_line = split_front_matter(text, label)
    doc, lines = loads(front, label)
    if not isinstance(doc, dict):
        raise AssayError(f"{label}: the front matter must be a YAML mapping with rubric_id, version and nodes",
                         2, file=label)

    def line_of(path: list[Any]) -> int | None:
        line = lines.line_of(path) if path else lines.get(())
        return line + first_line - 1 if line is not None else None

    validate(doc, "rubric", source=label, what=f"rubric {label}", line_of=line_of)
    rid = doc["rubric_id"]
    if _VERSION_SUFFIX.search(rid):
        raise AssayError(f"{label}: rubric_id {rid!r} ends in -v<digits>; the version goes in `version`, "
                         "and the pin is <rubric_id>-v<version>", 2, file=label, key="rubric_id")
    if expected_id is not None and rid != expected_id:
        raise AssayError(f"{label}: rubric_id {rid!r} differs from the file name {expected_id!r}; rename the "
                         f"file to rubrics/{rid}.md or fix rubric_id", 2, file=label, key="rubric_id")
    seen: set[str] = set()
    for i, node in enumerate(doc["nodes"]):
        if node["id"] in seen:
            raise AssayError(f"{label}:{line_of(['nodes', i])}: node id {node['id']!r} is used twice; node ids "
                             "are unique within a rubric", 2, file=label, key=f"nodes[{i}].id")
        seen.add(node["id"])
    rubric_rg = bool(doc.get("reference_guided", False))
    if doc.get("kind") == "pairwise" and (rubric_rg or any(n.get("reference_guided") for n in doc["nodes"])):
        raise AssayError(f"{label}: a pairwise rubric compares two answers and is never reference-guided; drop "
                         "reference_guided (or make it a pointwise rubric)", 2, file=label, key="reference_guided")
    nodes = [{"id": n["id"], "criterion": n["criterion"].strip(),
              "reference_guided": bool(n.get("reference_guided", rubric_rg))} for n in doc["nodes"]]
    return {"rubric_id": rid, "version": doc["version"], "pin": f"{rid}-v{doc['version']}",
            "kind": doc.get("kind", "pointwise"), "reference_guided": rubric_rg, "nodes": nodes, "source": label, "body": body.strip()}


def load_rubrics(state: Path) -> dict[str, dict[str, Any]]:
    """Every `<state>/rubrics/*.md`, keyed by rubric_id (not the pin). {} when the dir is absent."""
    root = Path(state) / RUBRICS_DIR
    if not root.is_dir():
        return {}
    state_real = os.path.realpath(state)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(root.iterdir()):
        if path.suffix != ".md" or path.name.startswith(".") or not path.is_file():
            continue
        label = f"{RUBRICS_DIR}/{path.name}"
        if not os.path.realpath(path).startswith(state_real + os.sep):
            raise AssayError(f"{label}: is a symlink that leaves the state dir; refusing to read it", 2, file=label)
        if path.stat().st_size > MAX_RUBRIC_BYTES:
            raise AssayError(f"{label}: over {MAX_RUBRIC_BYTES} bytes; a rubric is a short list of criteria",
                             2, file=label)
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise AssayError(f"{label}: not UTF-8 (byte {exc.start}); save it as UTF-8", 2, file=label) from None
        rubric = parse_rubric_text(text, label, expected_id=path.stem)
        out[rubric["rubric_id"]] = rubric
    return out


def resolve_pin(pin: Any, rubrics: dict[str, dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(rubric, lint code, message): the rubric a pin names, or why it names none."""
    parsed = parse_pin(pin)
    if parsed is None:
        return None, "bad_rubric_pin", (f"rubric pin {pin!r} is not <rubric_id>-v<version> "
                                        "(e.g. refund-eta-v1)")
    rid, version = parsed
    rubric = rubrics.get(rid)
    if rubric is None:
        known = ", ".join(sorted(r["pin"] for r in rubrics.values())) or "none"
        return None, "unknown_rubric", (f"rubric pin {pin!r}: no file rubrics/{rid}.md in the state dir "
                                        f"(rubrics present: {known})")
    if rubric["version"] != version:
        return None, "rubric_version_mismatch", (
            f"rubric pin {pin!r} but rubrics/{rid}.md is version {rubric['version']}; pin {rubric['pin']} "
            "(a new version is a new rubric: its verdicts are provisional until calibrated)")
    return rubric, None, None


def case_pins(case: dict[str, Any]) -> list[Any]:
    expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
    answer = expect.get("answer") if isinstance(expect.get("answer"), dict) else {}
    pins = answer.get("rubric")
    return list(pins) if isinstance(pins, list) else []
