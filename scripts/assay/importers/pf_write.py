"""Writing an import into a state dir: adapter.yaml, profile.yaml, datasets/promptfoo/*.yaml,
rubrics/pf-*.md, IMPORT.md (for people) and import.json (the mapping, for tools).

Re-importing is safe: import.json records the sha256 of every file the import wrote; a file
edited since (an accepted case, a filled-in adapter) is kept and reported, an unedited one is
rewritten, and one the new import no longer produces is removed. A state dir that holds files
no import wrote (no import.json) is refused, never overwritten. Every byte goes through the
one writer (assay.core.writer); literal header secrets found in the config are registered as
secrets first, so no file can hold them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from ..core import writer
from ..core.errors import AssayError
from .pf_build import Built

CASES_DIR = "datasets/promptfoo"
RECORD = "import.json"
SKELETON_NOTE = ("no http provider was converted: adapter.yaml is a skeleton (POST ${APP_URL}/ with "
                 '{"prompt": "<user turn>"}); edit it for the app before running')


def _yaml(doc: Any, header: str = "") -> str:
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
    return (header + body) if header else body


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def adapter_doc(built: Built) -> dict[str, Any]:
    inv = built.adapter.invocation or {"mode": "http", "base_url": "${APP_URL}", "endpoint": "POST /",
                                       "auth": {"type": "none"}, "request_body": '{"prompt": "<user turn>"}'}
    name = built.cfg.doc.get("description") if isinstance(built.cfg.doc.get("description"), str) else None
    return {"adapter_version": 1, "app": {"name": (name or built.cfg.path.stem)[:80]}, "access_level": "black",
            "invocation": inv, "traces": {"source": "none"}}


def profile_doc(built: Built) -> dict[str, Any]:
    off = "not imported: promptfoo's assertions check the answer only"
    conversation = any("turns" in c["input"] for c in built.cases)
    matrix: dict[str, Any] = {
        "answer_quality": {"enabled": True, "judged": bool(built.log.rubrics), "verified": False},
        "multi_turn": {"enabled": conversation, "verified": False, **({} if conversation else {"blocked_by": off})},
        "cost_latency": {"enabled": True, "verified": False},
    }
    for key in ("routing", "tool_selection", "trajectory", "execution", "authz", "state"):
        matrix[key] = {"enabled": False, "blocked_by": off, "verified": False}
    doc: dict[str, Any] = {"profile_version": 1, "stage": "stable", "capability_matrix": matrix}
    if built.log.rubrics:
        doc["judge"] = {"model": None, "status": "uncalibrated", "rubrics": sorted(f"{r}-v1" for r in built.log.rubrics)}
    if built.log.budgets:
        doc["budgets"] = dict(sorted(built.log.budgets.items()))
    return doc


def rubric_text(rid: str, rubric: dict[str, str]) -> str:
    front = {"rubric_id": rid, "version": 1, "title": f"imported {rubric['kind']}",
             "nodes": [{"id": "criterion", "criterion": rubric["criterion"]}]}
    return ("---\n" + _yaml(front) + "---\n\n" + f"# {rid}\n\nImported from a promptfoo `{rubric['kind']}` "
            "assertion. Provisional: its verdicts never gate until it is calibrated against people "
            "(references/calibration.md).\n")


def files_of(built: Built) -> dict[str, str]:
    out = {"adapter.yaml": _yaml(adapter_doc(built), "# Written by import_promptfoo.py from "
                                 f"{built.cfg.label}; see IMPORT.md. Edit freely: a re-import keeps an edited file.\n"),
           "profile.yaml": _yaml(profile_doc(built), "# Written by import_promptfoo.py: only the answer layer is "
                                 "measured until you enable more (references/profile-schema.md).\n")}
    for case in built.cases:
        out[f"{CASES_DIR}/{case['id']}.yaml"] = _yaml(case)
    for rid, rubric in sorted(built.log.rubrics.items()):
        out[f"rubrics/{rid}.md"] = rubric_text(rid, rubric)
    return out


def summary(built: Built) -> dict[str, Any]:
    mapped = built.log.mapped
    return {
        "config": built.cfg.label,
        "cases": len(built.cases),
        "conversations": sum(1 for c in built.cases if "turns" in c["input"]),
        "non_gating": sorted(c["id"] for c in built.cases if c.get("gating") is False),
        "assertions_mapped": len(mapped),
        "assertions_exact": sum(1 for m in mapped if m["exact"]),
        "not_converted": [s.as_dict() for s in built.skipped],
        "secrets": built.adapter.secrets,
        "env": sorted(set(built.adapter.env_vars)),
        "rubrics": sorted(f"{r}-v1" for r in built.log.rubrics),
        "budgets": built.log.budgets,
        "k": built.repeat,
        "adapter": "http" if built.adapter.invocation else "skeleton",
        "notes": built.adapter.notes + built.notes + ([] if built.adapter.invocation else [SKELETON_NOTE]),
    }


def import_md(built: Built, summ: dict[str, Any], kept: list[str]) -> str:
    lines = [f"# Imported from promptfoo: {built.cfg.label}", "",
             f"{summ['cases']} case(s) ({summ['conversations']} conversation(s)) under `{CASES_DIR}/`, "
             f"{summ['assertions_mapped']} assertion(s) converted ({summ['assertions_exact']} exactly), "
             f"{len(summ['not_converted'])} item(s) not converted (listed below). Every case starts "
             "`review: pending`: a person accepts it (skills/generate/references/case-format.md).", ""]
    if summ["secrets"] or summ["env"]:
        lines += ["## Environment", ""]
        for s in summ["secrets"]:
            what = (f"the `{s['header']}` header" if "header" in s else f"the body field `{s['body']}`"
                    if "body" in s else f"the query parameter `{s.get('query')}`")
            lines.append(f"- `{s['env']}`: {what} ({s['where']}) held a literal credential; it is not written "
                         f"anywhere: export {s['env']} with its value before running")
        for name in summ["env"]:
            if not any(s["env"] == name for s in summ["secrets"]):
                lines.append(f"- `{name}`: read by adapter.yaml (export it before running)")
        lines.append("")
    if summ["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in summ["notes"]] + [""]
    if summ["k"] and summ["k"] > 1:
        lines += [f"promptfoo repeated each test {summ['k']} times: plan with `make_plan.py --k {summ['k']}` "
                  "(each case also records `k`).", ""]
    if summ["budgets"]:
        lines += ["## Budgets (profile.yaml)", ""]
        for key, val in summ["budgets"].items():
            lines.append(f"- `{key}: {val:g}` from {built.log.budget_sources.get(key)} (the strictest threshold); "
                         + ("promptfoo checks each call, the gate checks the run's p95" if "latency" in key
                            else "promptfoo checks each call, the gate checks the mean per traced case"))
        lines.append("")
    approx = [m for m in built.log.mapped if not m["exact"] and m["note"]]
    if approx:
        lines += ["## Converted with a difference", ""]
        for m in approx:
            lines.append(f"- {m['file']}:{m['line']} `{m['type']}` -> {m.get('case', '?')}: {m['note']}")
        lines.append("")
    lines += ["## Not converted", ""]
    if not summ["not_converted"]:
        lines.append("Nothing: every assertion and provider setting was converted.")
    for s in summ["not_converted"]:
        where = f"{s['file']}:{s['line']}" if s["line"] else s["file"]
        lines.append(f"- {where} `{s['what']}`: {s['why']}")
    lost = [c["id"] for c in built.cases if c.get("not_converted") and c.get("gating") is not False]
    if lost:
        lines += ["", f"{len(lost)} gating case(s) lost a check listed above and carry it as `not_converted` "
                  f"({', '.join(lost)}): `make_plan.py` refuses them (check_not_converted) until you rewrite "
                  "each check as an assay check or delete its entry, since the case passes without it."]
    if kept:
        lines += ["", "## Kept (edited since the last import)", ""] + [f"- `{k}`" for k in kept]
    lines += ["", "Next: `convert_suite.py`, `validate_cases.py`, `make_plan.py` (README, \"Using it on your own "
              "app\"); docs/importing.md explains every mapping.", ""]
    return "\n".join(lines)


def write_import(built: Built, state_dir: str) -> dict[str, Any]:
    state = Path(state_dir)
    record_path = state / RECORD
    previous: dict[str, str] = {}
    if state.exists():
        if not state.is_dir():
            raise AssayError(f"{state}: exists and is not a directory", 2)
        if record_path.is_file():
            try:
                previous = json.loads(writer.read_bytes(record_path)).get("files", {})
            except (ValueError, AttributeError):
                raise AssayError(f"{record_path}: unreadable; delete the state dir and import again", 2) from None
        elif any(state.iterdir()):
            raise AssayError(f"{state}: is not empty and holds no {RECORD} (files no import wrote); pass a new or "
                             "empty directory, the import never overwrites a hand-made state dir", 2)
    writer.register_secrets(built.adapter.secret_values)
    files = files_of(built)
    kept: list[str] = []
    written: dict[str, str] = {}
    for rel, text in files.items():
        path = state / rel
        if path.is_file() and rel in previous and _sha(writer.read_bytes(path).decode("utf-8", "replace")) != previous[rel]:
            kept.append(rel)
            written[rel] = previous[rel]
            continue
        if path.is_file() and rel not in previous and previous:
            kept.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        writer.write_text(path, text)
        written[rel] = _sha(text)
    removed = []
    for rel, sha in previous.items():
        path = state / rel
        if rel not in files and path.is_file():
            if _sha(writer.read_bytes(path).decode("utf-8", "replace")) == sha:
                path.unlink()
                removed.append(rel)
            else:
                kept.append(rel)
    summ = summary(built)
    summ.update({"state_dir": str(state), "kept": sorted(kept), "removed": sorted(removed)})
    writer.write_text(state / "IMPORT.md", import_md(built, summ, sorted(kept)))
    cases = {c["id"]: {"comparable": built.log.comparable.get(c["id"], False), "source": c["source"],
                       "gating": c.get("gating", True), "prompt": built.prompt_labels.get(c["id"]),
                       **({"metadata": built.log.metadata[c["id"]]} if c["id"] in built.log.metadata else {})}
             for c in built.cases}
    writer.write_json(record_path, {"files": written, "cases": cases, "mapped": built.log.mapped,
                                    "not_converted": summ["not_converted"]})
    return summ
