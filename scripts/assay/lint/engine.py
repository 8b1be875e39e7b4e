"""Lint a suite: read the inputs of validate_cases.py and produce its one JSON object (contracts §7).

`read_suite(path_or_dash)` accepts a list of cases, `{"cases": [...], "sources": {...}}`
(suite.json or converted.json), JSONL, or one case. `lint_suite(suite, ...)` returns
`{harness_version, strict, capabilities_checked, summary, findings, error_count, warn_count}`.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.version import HARNESS_VERSION
from ..core.vocab import LAYER_ORDER, matrix_enabled
from ..schemas import validate
from .case_rules import CaseContext, check_case
from .findings import Findings
from .graded import layers_in_expect, grading_expect, scored_layers
from .rubric_rules import check_rubric_pins
from .suite_rules import (check_adapter, check_manifest, check_matrix, check_suite, check_tool_names,
                          declared_routes, split_counts)


SPLIT_FILES = ("suite.json", "capabilities.json", "adapter.json", "manifest.json")


def _read_text(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_bytes().decode("utf-8-sig"), path
    except OSError as exc:
        hint = ""
        if Path(path).name in SPLIT_FILES:
            hint = (f"; {Path(path).name} is written only by `convert_suite.py <state-dir> -o <work>/converted.json "
                    f"--split-dir <work>` (was --split-dir left out?)")
        raise AssayError(f"cannot read {path}: {exc.strerror or exc}{hint}", 2, file=path) from None
    except UnicodeDecodeError:
        raise AssayError(f"{path} is not UTF-8", 2, file=path) from None


def read_json_file(path: str, what: str) -> Any:
    text, label = _read_text(path)
    try:
        return json.loads(text)
    except RecursionError:
        raise AssayError(f"{what} {label} is nested too deeply to be a real file", 2, file=label) from None
    except ValueError as exc:
        raise AssayError(f"{what} {label} is not JSON ({exc}); pass the file convert_suite.py --split-dir wrote",
                         2, file=label) from None


def read_suite(path: str) -> dict[str, Any]:
    """-> {cases, sources, unnamed_sources, scoring|None, label}."""
    text, label = _read_text(path)
    try:
        doc = json.loads(text)
    except RecursionError:
        raise AssayError(f"--cases {label} is nested too deeply to be a real suite", 2, file=label) from None
    except ValueError:
        try:
            doc = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise AssayError(f"--cases {label} is neither JSON nor JSONL ({exc}); pass suite.json from "
                             "convert_suite.py --split-dir", 2, file=label) from None
    out: dict[str, Any] = {"sources": {}, "unnamed_sources": [], "scoring": None, "rubrics": None, "label": label}
    if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
        out["cases"] = doc["cases"]
        out["sources"] = doc.get("sources") if isinstance(doc.get("sources"), dict) else {}
        out["unnamed_sources"] = doc.get("unnamed_sources") if isinstance(doc.get("unnamed_sources"), list) else []
        out["scoring"] = doc.get("scoring") if isinstance(doc.get("scoring"), dict) else None
        out["rubrics"] = doc.get("rubrics") if isinstance(doc.get("rubrics"), dict) else None
    elif isinstance(doc, list):
        out["cases"] = doc
    elif isinstance(doc, dict):
        out["cases"] = [doc]
    else:
        raise AssayError(f"--cases {label}: expected a list of cases, {{\"cases\": [...]}}, JSONL or one case", 2)
    if not out["cases"]:
        raise AssayError(f"--cases {label} holds no cases", 2)
    for i, case in enumerate(out["cases"]):
        if not isinstance(case, dict):
            raise AssayError(f"--cases {label}: case [{i}] is a {type(case).__name__}, not an object", 2)
    return out


def _source_of(suite: dict[str, Any]):
    sources, unnamed = suite["sources"], suite["unnamed_sources"]
    order: dict[int, str | None] = {}
    k = 0
    for i, case in enumerate(suite["cases"]):
        cid = case.get("id")
        if isinstance(cid, str) and cid in sources:
            order[i] = sources[cid]
        elif not isinstance(cid, str):
            order[i] = unnamed[k] if k < len(unnamed) else None
            k += 1
        else:
            order[i] = None
    return lambda i: order.get(i)


def lint_suite(suite: dict[str, Any], *, matrix: dict[str, Any] | None, adapter: dict[str, Any] | None = None,
               manifest: dict[str, Any] | None = None, strict: bool = False, app_root: Any = None) -> dict[str, Any]:
    cases: list[dict[str, Any]] = suite["cases"]
    source_of = _source_of(suite)
    for i, case in enumerate(cases):
        validate(case, "case", source=source_of(i) or f"{suite['label']} cases[{i}]", what="case")
    findings = Findings(strict=strict)
    scoring = suite.get("scoring")
    ctx = CaseContext(
        ids={c["id"] for c in cases if isinstance(c.get("id"), str)},
        matrix=matrix,
        id_pattern=(scoring or {}).get("record_id_pattern"),
        id_pattern_known=scoring is not None,
        routes=declared_routes(scoring, adapter),
    )
    for i, case in enumerate(cases):
        cid, src = case.get("id"), source_of(i)
        check_case(case, ctx, lambda code, msg, key=None, cid=cid, src=src:
                   findings.add(code, msg, case_id=cid, source=src, key=key))

    def report(code: str, msg: str, case_id: Any = None, source: str | None = None, key: str | None = None) -> None:
        findings.add(code, msg, case_id=case_id, source=source, key=key)

    check_suite(cases, source_of, report)
    if suite.get("rubrics") is not None:
        check_rubric_pins(cases, suite["rubrics"], source_of, report)
    if matrix is None:
        report("capabilities_unchecked", "--no-capabilities: gradedness was checked without the capability "
               "matrix, so a case grading only disabled layers passes here and reads unscorable in the run")
    else:
        check_matrix(matrix, report)
    if adapter is not None:
        check_adapter(cases, adapter, source_of, report)
        check_tool_names(cases, adapter, source_of, report)
        from .agent_rules import check_agent_cases
        check_agent_cases(cases, adapter, app_root, source_of, report)
    if manifest is not None:
        check_manifest(cases, manifest, report)
    errors, warns = findings.counts()
    return {
        "harness_version": HARNESS_VERSION,
        "strict": strict,
        "capabilities_checked": matrix is not None,
        "summary": summarize(cases, matrix),
        "findings": findings.rows,
        "error_count": errors,
        "warn_count": warns,
    }


def summarize(cases: list[dict[str, Any]], matrix: dict[str, Any] | None) -> dict[str, Any]:
    by_layer: Counter[str] = Counter()
    http_only = 0
    for case in cases:
        layers = layers_in_expect(grading_expect(case))
        by_layer.update(layers)
        if layers == ["http"] or (layers and "http" in layers and not scored_layers(case)):
            http_only += 1
    return {
        "cases": len(cases),
        "by_category": dict(sorted(Counter(str(c.get("category")) for c in cases).items())),
        "by_test_type": dict(sorted(Counter(str(c.get("test_type")) for c in cases).items())),
        "by_split": split_counts(cases),
        "one_off": sum(1 for c in cases if "template_id" in c and c["template_id"] is None),
        "by_graded_layer": {layer: by_layer[layer] for layer in LAYER_ORDER if by_layer[layer]},
        "enabled_layers": None if matrix is None else [l for l in LAYER_ORDER if matrix_enabled(matrix, l)[0]],
        "http_only": http_only,
    }
