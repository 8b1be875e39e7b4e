"""Read a state dir (YAML) into the converted suite (contracts §6). It does not lint.

`convert_state_dir(state_dir) -> dict` returns `{adapter, capability_matrix, scoring,
profile, manifest, cases, sources, unnamed_sources, rubrics, judge_config, simulator_config,
source_sha256}` (the digest of the files read: assay.suite.freshness)
(rubrics/*.md and judge/judge.yaml, assay.judge; simulator/simulator.yaml, assay.simulate) (`unnamed_sources` lists, in
order, the files of the cases without a string id, which sort last); `split_outputs(converted) -> {filename: doc}` is
what `--split-dir` writes. Every problem is AssayError(2) naming the file (relative
to the state dir), the line and the key path. `${VAR}` is never resolved here.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.secrets import CREDENTIAL_HEADER  # noqa: F401 (re-exported: the importers use it)
from ..schemas.checked import validate_yaml
from ..core.strict_yaml import LineIndex, load
from .layout import MANIFEST_NAMES, _inside, _rel, case_files, refuse_misplaced_cases  # case_files: also importers'


def _read_checked(state: Path, state_real: Path, path: Path, schema: str, what: str) -> tuple[Any, LineIndex]:
    label = _rel(state, path)
    if not _inside(state_real, path):
        raise AssayError(f"{label}: is a symlink that leaves the state dir; refusing to read it. "
                         "Copy the file into the state dir instead.", 2, file=label)
    doc, lines = load(path, label)
    if not isinstance(doc, dict):
        raise AssayError(f"{label}: {what} must be a YAML mapping (got {type(doc).__name__})", 2, file=label)
    validate_yaml(doc, schema, label=label, lines=lines, what=what)
    return doc, lines


def suite_case_ids(state: Path) -> set[str]:
    """The case ids of the state dir's suite (datasets/), without validating the cases (the linter does):
    what a label's case_id must name to count (assay.calibrate.agreement.not_in_suite)."""
    return {c["id"] for c in suite_cases(state)}


def suite_cases(state: Path) -> list[dict[str, Any]]:
    """The state dir's cases (datasets/) that have an id, unvalidated."""
    out = []
    for path in case_files(state):
        case, _ = load(path, _rel(state, path))
        if isinstance(case, dict) and isinstance(case.get("id"), str):
            out.append(case)
    return out


def refuse_literal_secrets(adapter: Any, lines: LineIndex, label: str = "adapter.yaml") -> None:
    """Secrets are `${VAR}` references only (adapter contract): a credential header written out
    literally, in `invocation.headers` or an auth `headers` block, would be copied into the
    converted suite, the plan and every request.json. Refused before anything is written; the
    message names the key and never repeats the value."""
    invocation = adapter.get("invocation") if isinstance(adapter, dict) else None
    if not isinstance(invocation, dict):
        return
    auth = invocation.get("auth") if isinstance(invocation.get("auth"), dict) else {}
    blocks = [(("invocation", "headers"), invocation.get("headers"), False),
              (("invocation", "auth", "headers"), auth.get("headers"), True)]
    for path, headers, every_value in blocks:
        if not isinstance(headers, dict):
            continue
        for name, value in headers.items():
            if not isinstance(value, str) or "${" in value:
                continue
            if every_value or CREDENTIAL_HEADER.search(str(name)):
                key = ".".join(path + (str(name),))
                line = lines.line_of(path + (name,))
                raise AssayError(
                    f"{label}:{line}: {key} holds a literal value; secrets are ${{VAR}} references only "
                    f"(a literal would be copied into the plan and every request.json). Export it and write "
                    f"{name}: \"${{MY_VAR}}\" (a bearer token: auth: {{type: bearer, token_env: MY_VAR}})",
                    2, file=label, line=line, key=key)


def _refuse_unreadable_answer(adapter: dict[str, Any], lines: LineIndex) -> None:
    """A response_body that marks no "<answer>" leaf (a typo'd `<anwser>`) reads no answer, and a request
    that carries no "<user turn>" (a typo'd `<user_turn>`) sends no question: refused here, at its line,
    not first at the run's pre-flight (the same rules: templates.response_body_problem and
    request_template_problem)."""
    invocation = adapter.get("invocation") if isinstance(adapter.get("invocation"), dict) else {}
    from ..invoke.templates import request_template_problem, response_body_problem
    unsent = request_template_problem(invocation)
    if unsent:
        key, problem = unsent
        line = lines.line_of(tuple(key.split(".")))
        raise AssayError(f"adapter.yaml:{line}: {problem}", 2, file="adapter.yaml", line=line, key=key)
    if invocation.get("response_body") is None:
        return
    problem = response_body_problem(invocation["response_body"])
    if problem:
        line = lines.line_of(("invocation", "response_body"))
        raise AssayError(f"adapter.yaml:{line}: {problem}", 2, file="adapter.yaml", line=line,
                         key="invocation.response_body")


def convert_state_dir(state_dir: str | os.PathLike[str]) -> dict[str, Any]:
    state = Path(state_dir)
    if not state.is_dir():
        raise AssayError(f"state dir {state} does not exist or is not a directory "
                         "(pass the app's .assay/ directory)", 2)
    state = state.resolve()
    state_real = Path(os.path.realpath(state))
    for required in ("adapter.yaml", "profile.yaml"):
        if not (state / required).is_file():
            inner = state / ".assay"   # the app's dir given for its state dir
            hint = (f"; {inner} holds one: pass that (convert_suite.py {inner} ...)"
                    if (inner / "adapter.yaml").is_file() else "")
            from ..core.statedir import run_or_reports_dir
            instead = run_or_reports_dir(state)
            hint = hint or (f"; {instead}" if instead else "")
            raise AssayError(f"{state}: {required} is missing; every state dir needs adapter.yaml and "
                             "profile.yaml (see references/adapter-contract.md and profile-schema.md)" + hint, 2,
                             file=required)
    # the digest of the files before they are read: a file edited while they are read then differs
    # from it, and make_plan.py converts again (never a digest of what this conversion did not read)
    digest = source_sha256(state)
    adapter, adapter_lines = _read_checked(state, state_real, state / "adapter.yaml", "adapter", "adapter.yaml")
    refuse_literal_secrets(adapter, adapter_lines)
    _refuse_unreadable_answer(adapter, adapter_lines)
    profile, _ = _read_checked(state, state_real, state / "profile.yaml", "profile", "profile.yaml")

    manifest = None
    for name in MANIFEST_NAMES:
        if (state / "datasets" / name).is_file():
            manifest, _ = _read_checked(state, state_real, state / "datasets" / name, "dataset",
                                        f"datasets/{name}")
            break

    refuse_misplaced_cases(state)
    cases: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    unnamed: list[str] = []
    for path in case_files(state):
        label = _rel(state, path)
        case, lines = load(path, label)
        if case is None:
            raise AssayError(f"{label}: the file is empty; a case file holds one case mapping "
                             "(or delete the file)", 2, file=label)
        if not isinstance(case, dict):
            raise AssayError(f"{label}: a case must be a YAML mapping (got {type(case).__name__})", 2, file=label)
        validate_yaml(case, "case", label=label, lines=lines, what="case")
        cid = case.get("id")
        if isinstance(cid, str):
            if cid in sources:
                raise AssayError(f"case id {cid!r} is in two files: {sources[cid]} and {label}; "
                                 "ids are permanent and unique, give one of them a new id", 2,
                                 case_id=cid, files=[sources[cid], label])
            sources[cid] = label
        else:
            unnamed.append(label)
        cases.append(case)
    if not cases:
        raise AssayError(f"{state}: no case files under datasets/ (one case per .yaml file)", 2)
    # id-less or non-string ids sort last, in file order; the linter reports them
    cases.sort(key=lambda c: (0, c["id"]) if isinstance(c.get("id"), str) else (1, ""))

    from ..judge.config import load_judge_config
    from ..judge.rubrics import load_rubrics
    rubrics = {rid: {k: v for k, v in r.items() if k != "body"} for rid, r in load_rubrics(state).items()}
    judge_config = load_judge_config(state)
    from ..simulate.config import load_simulator_config
    simulator_config = load_simulator_config(state)
    scoring = {k: profile[k] for k in ("oos_handling", "record_id_pattern", "routing_contract") if k in profile}
    if isinstance(profile.get("route_targets"), list):   # the names only: what the linter checks routes against
        scoring["route_targets"] = [t["name"] for t in profile["route_targets"] if isinstance(t, dict) and "name" in t]
    prof = {k: profile[k] for k in ("stage", "judge") if k in profile}
    return {
        "adapter": adapter,
        "capability_matrix": profile["capability_matrix"],
        "scoring": scoring,
        "profile": prof,
        "manifest": manifest,
        "cases": cases,
        "sources": sources,
        "unnamed_sources": unnamed,
        "rubrics": rubrics,
        "judge_config": judge_config,
        "simulator_config": simulator_config,
        "source_sha256": digest,   # make_plan.py refuses this suite once the files change
    }


def source_files(state: Path) -> list[tuple[str, Path]]:
    """(label, path) of every file convert_state_dir reads, in a fixed order."""
    from ..judge.config import JUDGE_CONFIG
    from ..judge.rubrics import RUBRICS_DIR
    from ..simulate.config import SIMULATOR_CONFIG

    files = [(name, state / name) for name in ("adapter.yaml", "profile.yaml")]
    files += [(f"datasets/{n}", state / "datasets" / n) for n in MANIFEST_NAMES if (state / "datasets" / n).is_file()]
    files += [(p.relative_to(state).as_posix(), p) for p in case_files(state)]
    rubrics = state / RUBRICS_DIR
    if rubrics.is_dir():
        files += [(f"{RUBRICS_DIR}/{p.name}", p) for p in sorted(rubrics.iterdir())
                  if p.suffix == ".md" and not p.name.startswith(".") and p.is_file()]
    files += [(rel, state / rel) for rel in (JUDGE_CONFIG, SIMULATOR_CONFIG) if (state / rel).is_file()]
    return files


def source_overwritten(state: Path, outputs: list[Path]) -> tuple[Path, str] | None:
    """(output, label) of the first output path that is a file the conversion reads (`-o` typed as
    datasets/<case>.yaml or adapter.yaml would replace the case or the adapter with the converted
    JSON, the source then lost); None when no output is one."""
    sources = {os.path.realpath(path): label for label, path in source_files(Path(state))}
    for out in outputs:
        label = sources.get(os.path.realpath(out))
        if label is not None:
            return out, label
    return None


def source_sha256(state: Path) -> str:
    """One sha256 over each source file's label and content, read as the conversion reads it (a link
    inside the state dir followed; one that leaves it, or a file that cannot be read, counts as its
    label alone: the conversion refuses it in its own words)."""
    state_real = Path(os.path.realpath(state))
    digest = hashlib.sha256()
    for label, path in source_files(state):
        try:
            content = hashlib.sha256(path.read_bytes()).digest() if _inside(state_real, path) else b"outside"
        except OSError:
            content = b"unreadable"
        digest.update(label.encode("utf-8") + b"\0" + content)
    return digest.hexdigest()


def split_outputs(converted: dict[str, Any]) -> dict[str, Any]:
    """The --split-dir files: suite.json carries cases + sources + scoring for the linter."""
    out = {
        "suite.json": {"cases": converted["cases"], "sources": converted["sources"],
                       "unnamed_sources": converted.get("unnamed_sources", []),
                       "scoring": converted["scoring"], "rubrics": converted.get("rubrics") or {}},
        "capabilities.json": converted["capability_matrix"],
        "adapter.json": converted["adapter"],
    }
    if converted.get("manifest") is not None:
        out["manifest.json"] = converted["manifest"]
    return out
