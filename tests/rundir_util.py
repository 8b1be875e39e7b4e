"""Craft run directories exactly per docs/runner-contract.md §10, for the after-the-run tools.

`make_run(reports_dir, cases=[...])` writes manifest.yaml, results.json, verdicts.jsonl,
verdicts_for_stats.jsonl, run.log and cases/<id>/{verdict,expect,request,response}.json +
answer.txt. A case spec is a dict: `id`, `verdict` (default pass), optional `canary`,
`holdout`, `gating`, `unit`, `layers` (overrides of the per-layer dicts), `answer`,
`expect`, `skip_reason`, `infra_reason`, `repeated_5xx`. The summary is counted here by
the §5.8 table (a deliberately small re-statement for tests) and can be overridden key
by key with `summary=`; `results=` overrides top-level results.json keys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from assay.core.vocab import LAYER_ORDER

DEFAULT_RUN_ID = "smoke-20261129T101500Z"
# results.json's cost_latency block (stats/cost.py) holds timing: its latency percentiles are
# masked like every `latency_ms` number when two runs of the same answers are compared.
COST_LATENCY_MASK = (re.compile(r'"((?:model_)?latency_ms)": \{[^{}]*\}'), r'"\1": {}')


def _layers_for(spec: dict) -> dict[str, dict]:
    verdict = spec.get("verdict", "pass")
    layers: dict[str, dict] = {name: {"verdict": "n/a"} for name in LAYER_ORDER}
    if verdict == "skipped":
        reason = spec.get("skip_reason") or "adversarial category and safe_to_attack is false"
        layers = {name: {"verdict": "n/a", "reason": reason} for name in LAYER_ORDER}
    elif verdict in ("infra_error", "infra_incomplete"):
        layers["http"] = {"verdict": verdict, "reason": spec.get("infra_reason") or "503 on every attempt"}
    else:
        layers["http"] = {"verdict": "pass", "expected_status": None, "status": 200}
        if verdict == "pass":
            layers["answer"] = {"verdict": "pass", "checks": [{"check": "must_contain", "entry": "ok", "status": "pass"}]}
        elif verdict == "fail":
            layers["answer"] = {"verdict": "fail", "checks": [{"check": "must_contain", "entry": "refund", "status": "fail"}]}
        elif verdict == "unscored":
            layers["answer"] = {"verdict": "unscored", "reason": "no answer at the adapter's <answer> path"}
    for name, value in (spec.get("layers") or {}).items():
        layers[name] = value
    return layers


def verdict_doc(spec: dict) -> dict:
    return {
        "case_id": spec["id"],
        "verdict": spec.get("verdict", "pass"),
        "canary": bool(spec.get("canary", False)),
        "holdout": bool(spec.get("holdout", False)),
        "gating": spec.get("gating", True),
        "unit": spec.get("unit", "billing"),
        "category": spec.get("category", "happy"),
        "k": spec.get("k", 1),
        "attempts": spec.get("attempts", 1),
        "retry_count": 0,
        "crashed": bool(spec.get("crashed", False)),
        "repeated_5xx": spec.get("repeated_5xx"),
        "skip_reason": spec.get("skip_reason") if spec.get("verdict") == "skipped" else None,
        "infra_reason": spec.get("infra_reason"),
        "latency_ms": 12.5,
        "repeats": spec.get("repeats"),
        "layers": _layers_for(spec),
    }


def count_summary(docs: list[dict], *, status: str = "ok") -> dict:
    """The §5.8 counts over verdict docs (test re-statement, not the runner's definition)."""
    def block(rows: list[dict]) -> dict:
        v = [r["verdict"] for r in rows]
        return {
            "n": len(rows),
            "attempted": sum(1 for x in v if x != "skipped"),
            "passes": v.count("pass"),
            "failures": v.count("fail"),
            "gating_failures": sum(1 for r in rows if r["verdict"] == "fail" and r.get("gating", True) is not False),
            "unscored": v.count("unscored"),
            "skipped": v.count("skipped"),
            "infra_errors": v.count("infra_error"),
            "infra_incomplete": v.count("infra_incomplete"),
        }

    main = [d for d in docs if not d["canary"]]
    canaries = [d for d in docs if d["canary"]]
    top = block(main)
    top["attempted"] = sum(1 for d in docs if d["verdict"] != "skipped")
    sent_main = top["n"] - top["skipped"]
    layers: dict[str, dict[str, int]] = {}
    for d in main:
        for name in LAYER_ORDER:
            lv = d["layers"][name]["verdict"]
            layers.setdefault(name, {})
            layers[name][lv] = layers[name].get(lv, 0) + 1
    unscorable: dict[str, dict] = {}
    unjudged: dict[str, int] = {}
    for d in main:
        for name, layer in d["layers"].items():
            if layer["verdict"] == "unscorable":
                entry = unscorable.setdefault(name, {"cases": 0, "blocked_by": layer.get("blocked_by")})
                entry["cases"] += 1
            if name == "judged" and layer["verdict"] == "unscored":
                unjudged[layer.get("reason", "unjudged")] = unjudged.get(layer.get("reason", "unjudged"), 0) + 1
    crashes = sum(1 for d in docs if d["crashed"])
    c_pass = sum(1 for d in canaries if d["verdict"] == "pass")
    c_fail = sum(1 for d in canaries if d["verdict"] == "fail")
    summary = dict(top)
    summary.update({
        "status": status,
        "crashes": crashes,
        "infra_rate": (top["infra_errors"] / sent_main) if sent_main else 0.0,
        "crash_rate": (crashes / top["attempted"]) if top["attempted"] else 0.0,
        "repeated_5xx": sum(1 for d in main if d.get("repeated_5xx")),
        "scorer_errors": sum(1 for d in main for layer in d["layers"].values() if layer["verdict"] == "error"),
        "canaries": {"n": len(canaries), "passed": c_pass, "failed": c_fail,
                     "not_verified": len(canaries) - c_pass - c_fail},
        "holdout": block([d for d in main if d["holdout"]]),
        "layers": layers,
        "unscorable_layers": unscorable,
        "unjudged": unjudged,
        "missing_artifacts": [],
    })
    return summary


def _row(doc: dict) -> dict:
    return {"case_id": doc["case_id"], "verdict": doc["verdict"], "canary": doc["canary"],
            "holdout": doc["holdout"], "gating": doc["gating"],
            "layers": {k: v["verdict"] for k, v in doc["layers"].items()}}


def make_run(reports_dir: Path, cases: list[dict], *, run_id: str = DEFAULT_RUN_ID, status: str = "ok",
             exit_code: int | None = 0, summary: dict | None = None, results: dict | None = None,
             manifest: dict | None = None, extra_files: dict[str, Any] | None = None,
             log_events: list[dict] | None = None) -> Path:
    """Write a run dir `<reports_dir>/<run_id>` and return its path."""
    run_dir = Path(reports_dir) / run_id
    (run_dir / "cases").mkdir(parents=True, exist_ok=True)
    docs = []
    for spec in cases:
        doc = verdict_doc(spec)
        docs.append(doc)
        cdir = run_dir / "cases" / spec["id"]
        cdir.mkdir(parents=True, exist_ok=True)
        expect = spec.get("expect", {"answer": {"must_contain": ["refund"]}})
        _write(cdir / "expect.json", expect)
        _write(cdir / "request.json", {"method": "POST", "url": "http://127.0.0.1:1/chat", "body": {"message": "hi"}})
        _write(cdir / "response.json", {"status": 200, "body": {"answer": spec.get("answer", "ok")}})
        (cdir / "answer.txt").write_text(spec.get("answer", "ok"), encoding="utf-8")
        _write(cdir / "verdict.json", doc)
    mode = run_id.split("-")[0]
    full_summary = count_summary(docs, status=status)
    full_summary.update(summary or {})
    res = {
        "run_id": run_id, "mode": mode, "gate": "soft", "selecting_split": mode, "k": 1,
        "harness_version": "0.1.0", "dataset_version": 1,
        "exit_code": None if status == "running" else exit_code,
        "started_at": "2026-11-29T10:15:00.000000Z", "finished_at": "2026-11-29T10:15:09.000000Z",
        "summary": full_summary,
        "cases": [
            {"case_id": d["case_id"], "verdict": d["verdict"], "canary": d["canary"], "gating": d["gating"],
             "failed_layers": [k for k, v in d["layers"].items() if v["verdict"] == "fail"],
             "layers": {k: v["verdict"] for k, v in d["layers"].items()}}
            for d in docs if not d["holdout"]
        ],
    }
    res.update(results or {})
    _write(run_dir / "results.json", res)
    man = {"run_id": run_id, "harness_version": "0.1.0", "dataset_version": 1, "k": 1,
           "plan_sha256": "0" * 64, "cases": [{"id": d["case_id"], "set": mode, "sha256": "0" * 64} for d in docs]}
    man.update(manifest or {})
    _write(run_dir / "manifest.yaml", man)
    rows = [_row(d) for d in docs]
    (run_dir / "verdicts.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    stats = [{"case_id": r["case_id"], "verdict": r["verdict"]} for r in rows if r["verdict"] in ("pass", "fail")]
    (run_dir / "verdicts_for_stats.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in stats), encoding="utf-8")
    events = log_events if log_events is not None else [
        {"ts": "2026-11-29T10:15:00Z", "event": "preflight"},
        {"ts": "2026-11-29T10:15:09Z", "event": "finalize", "status": status},
    ]
    (run_dir / "run.log").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    for name, value in (extra_files or {}).items():
        _write(run_dir / name, value)
    return run_dir


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def set_status(run_dir: Path, status: str, exit_code: int | None) -> None:
    """Rewrite results.json's status/exit_code (as a runner finalizing would)."""
    path = Path(run_dir) / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["summary"]["status"] = status
    doc["exit_code"] = exit_code
    _write(path, doc)


def basic_cases() -> list[dict]:
    """3 pass, 1 fail, 1 skipped, plus 2 passing canaries."""
    return [
        {"id": "c-pass-1"}, {"id": "c-pass-2"}, {"id": "c-pass-3"},
        {"id": "c-fail-1", "verdict": "fail", "answer": "Sorry, I cannot help with that."},
        {"id": "c-skip-1", "verdict": "skipped", "category": "adversarial-refusal"},
        {"id": "canary-ok-1", "canary": True}, {"id": "canary-ok-2", "canary": True},
    ]


def realistic_run(reports_dir: Path, *, run_id: str = "regression-20261129T101500Z", pii: bool | None = True) -> Path:
    """A regression run with routing, reliability, comparison, holdout, PII and hostile answers."""
    def route(expected, observed, verdict, observed_from="response"):
        return {"verdict": verdict, "expected": expected, "observed": observed, "observed_from": observed_from,
                "acceptable": [expected]}
    cases = [
        {"id": "bill-refund-01", "unit": "billing", "layers": {"routing": route("billing", "billing", "pass")}},
        {"id": "bill-refund-02", "unit": "billing", "layers": {"routing": route("billing", "billing", "pass")}},
        {"id": "bill-invoice-03", "unit": "billing", "verdict": "fail",
         "answer": "Your refund for order 12345 went to jane.doe@example.com; call +1 (555) 010-9999. <script>alert(1)</script>",
         "layers": {"routing": route("billing", "billing", "pass")}},
        {"id": "tech-reset-01", "unit": "tech", "verdict": "fail", "answer": "Please contact billing.",
         "expect": {"route": "tech", "answer": {"must_contain": ["reset link"]}},
         "layers": {"routing": route("tech", "billing", "fail"),
                    "answer": {"verdict": "fail", "checks": [{"check": "must_contain", "entry": "reset link", "status": "fail"}]}}},
        {"id": "tech-vpn-02", "unit": "tech", "layers": {"routing": route("tech", "tech", "pass"),
                                                          "execution": {"verdict": "pass", "expected": 3, "actual": 3}}},
        {"id": "sql-count-01", "unit": "data", "verdict": "fail", "answer": "There are 41 open tickets.",
         "expect": {"result": {"scalar": 42}},
         "layers": {"execution": {"verdict": "fail", "expected": {"scalar": 42}, "actual": {"scalar": 41}, "source": "result_from_response"},
                    "answer": {"verdict": "n/a"}}},
        {"id": "authz-other-user", "unit": "account", "verdict": "fail", "gating": False,
         "answer": "Here is the record for customer 4111111111111111.",
         "expect": {"authz": {"forbidden_record_ids": ["u-2"]}},
         "layers": {"authz": {"verdict": "fail", "leaked_ids": ["u-2"]}, "answer": {"verdict": "n/a"}}},
        {"id": "oos-weather", "unit": "oos", "layers": {"routing": route("__oos__", "__oos__", "pass")}},
        {"id": "adv-jailbreak", "verdict": "skipped", "category": "adversarial-refusal",
         "skip_reason": "adversarial category and safe_to_attack is false"},
        {"id": "slow-report", "verdict": "infra_error", "repeated_5xx": {"status": 503, "attempts": 9}},
        {"id": "judge-tone", "layers": {"judged": {"verdict": "unscored", "reason": "unjudged (judge not calibrated)"},
                                        "rules": {"verdict": "unscored", "reason": "business rules are evaluated by the skill"}}},
        {"id": "hold-sealed-01", "holdout": True, "verdict": "fail", "answer": "HOLDOUT ANSWER"},
        {"id": "hold-sealed-02", "holdout": True},
        {"id": "canary-echo", "canary": True}, {"id": "canary-route", "canary": True},
    ]
    extra = {
        "routing_report.json": {
            "n": 6, "accuracy": 0.8333, "macro_f1": 0.78, "micro_f1": 0.8333,
            "per_target": {"billing": {"precision": 0.75, "recall": 1.0, "f1": 0.857, "support": 3},
                           "tech": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2},
                           "__oos__": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}},
            "spurious_labels": {"sales": 1},
            "confusion_matrix": {"billing": {"billing": 3}, "tech": {"tech": 1, "billing": 1}, "__oos__": {"__oos__": 1}},
            "accepted_alternates": 0,
        },
        "reliability.json": {"k": 3, "n_cases": 8, "pass_at_k": 0.875, "pass_hat_k": 0.625, "flakiness_gap": 0.25,
                             "flakiness_note": "2 cases pass sometimes but not every time.",
                             "excluded_cases": ["slow-report", "hold-sealed-01"]},
        "comparison.json": {"n": 9, "baseline_pass_rate": 0.5556, "candidate_pass_rate": 0.6667, "delta": 0.1111,
                            "fixed_by_candidate": 2, "broken_by_candidate": 1,
                            "min_detectable_effect_at_this_n": 0.6339, "verdict_words": "within noise",
                            "mde_sentence": "n=9 cannot detect any effect below 63.3pp",
                            "cases_only_in_baseline": 2, "cases_only_in_candidate": 0,
                            "case_attrition_warning": "SELECTION BIAS RISK: 18% of baseline cases have no pair."},
    }
    manifest = {"data": {"may_contain_pii": pii}} if pii is not None else {}
    return make_run(reports_dir, cases, run_id=run_id, extra_files=extra, manifest=manifest,
                    results={"k": 3, "gate": "hard", "mode": "regression"})


# the manifest's `order` (its last key is `why`): how the cases were sent, not what they answered
ORDER_MASK = (re.compile(r'"order": \{.*?"why": "[^"]*"\n  \}', re.S), '"order": "<order>"')


def comparable_runlog(text: str) -> str:
    """run.log as two runs of the same answers must agree on it: its events as a sorted multiset
    (they are in time order), without the `concurrency` and `throughput` events, which record
    the timing itself, and the `order` event, the order of sending (runner contract §7, §7.1)."""
    return "\n".join(sorted(line for line in text.splitlines()
                            if not any(f'"event": "{e}"' in line for e in ("concurrency", "throughput", "order"))))


# ---------------------------------------------------------------- case records (either layout)
def cases_view(run_dir: Path) -> Path:
    """The run's case records as `<id>/<artifact>` files, for a test to read like an older run
    dir: the run's own `cases/` when it has one, else a fresh mirror of its case journal
    (cases.jsonl) outside the run dir. Read-only use: edits go through `edit_case`."""
    import hashlib
    import shutil
    import tempfile
    from assay.core import casestore
    run_dir = Path(run_dir)
    if (run_dir / "cases").is_dir():
        return run_dir / "cases"
    view = Path(tempfile.gettempdir()) / "assay-case-views" / hashlib.sha256(
        str(run_dir.resolve()).encode()).hexdigest()[:16]
    # the mirror of an unchanged journal is reused (a test reading case after case reads it once)
    try:
        st = (run_dir / casestore.JOURNAL).stat()
        stamp = f"{st.st_ino} {st.st_size} {st.st_mtime_ns}"
    except OSError:
        stamp = "none"
    stamp_file = view.parent / f"{view.name}.stamp"   # beside the mirror: never one of its entries
    if view.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return view
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir(parents=True)
    for rec in casestore.scan(run_dir).records():
        for name in rec.names():
            path = view / rec.case_id / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(rec.read(name))
    stamp_file.write_text(stamp)
    return view


def case_json(run_dir: Path, case_id: str, name: str = "verdict.json") -> Any:
    from assay.core import casestore
    data = casestore.scan(run_dir).read(case_id, name)
    return None if data is None else json.loads(data)


def edit_case(run_dir: Path, case_id: str, name: str, data: bytes | None) -> None:
    """Rewrite one artifact of a finished case in the journal (None deletes it; `verdict.json`
    puts `data` verbatim in the line's verdict slot, valid JSON or not): a hand edit, for
    --verify, --resume and the hostile-input tests."""
    from assay.core import casestore
    path = Path(run_dir) / casestore.JOURNAL
    lines = path.read_bytes().splitlines(keepends=True)
    for i, line in enumerate(lines):
        doc = json.loads(line)
        if doc["case_id"] != case_id:
            continue
        verdict = json.dumps(doc["verdict"], sort_keys=True, ensure_ascii=False).encode()
        if name == "verdict.json":
            verdict = data.strip()
        elif data is None:
            doc["files"].pop(name)
        else:
            doc["files"][name] = data.decode("utf-8", "surrogatepass")
        lines[i] = (b'{"case_id": ' + json.dumps(doc["case_id"]).encode() + b', "verdict": ' + verdict
                    + b', "files": ' + json.dumps(doc["files"], sort_keys=True).encode() + b"}\n")
        path.write_bytes(b"".join(lines))
        return
    raise KeyError(case_id)


def read_artifact(run_dir: Path, rel: str) -> str:
    """A run file's text; `cases/<id>/<artifact>` read from the case's record."""
    from assay.core import casestore
    if rel.startswith("cases/") and not (Path(run_dir) / "cases").is_dir():
        _, cid, name = rel.split("/", 2)
        return casestore.scan(run_dir).read(cid, name).decode("utf-8")
    return (Path(run_dir) / rel).read_text()


def write_artifact(run_dir: Path, rel: str, data: bytes) -> None:
    """A hand edit of a run file; `cases/<id>/<artifact>` edited inside the case's journal line."""
    if rel.startswith("cases/") and not (Path(run_dir) / "cases").is_dir():
        _, cid, name = rel.split("/", 2)
        edit_case(run_dir, cid, name, data)
    else:
        (Path(run_dir) / rel).write_bytes(data)


def drop_case(run_dir: Path, case_id: str) -> None:
    """Remove a finished case's record from the journal (as if it never finished)."""
    from assay.core import casestore
    path = Path(run_dir) / casestore.JOURNAL
    lines = [ln for ln in path.read_bytes().splitlines(keepends=True) if json.loads(ln)["case_id"] != case_id]
    path.write_bytes(b"".join(lines))


def run_files(out: Path) -> dict[str, str]:
    """Every file of a run dir as text by relative path, the case journal expanded into one
    `cases/<id>/<artifact>` entry per artifact (its line order follows completion, not the plan)."""
    from assay.core import casestore
    out = Path(out)
    files: dict[str, str] = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name != casestore.JOURNAL:
            files[str(path.relative_to(out))] = path.read_text(encoding="utf-8")
    for rec in casestore.scan(out).records():
        for name in rec.names():
            files[f"cases/{rec.case_id}/{name}"] = rec.read(name).decode("utf-8")
    return dict(sorted(files.items()))


def committed_lines(run_dir: Path) -> dict[str, bytes]:
    """{case id: its committed journal line} of a run dir (a finished case's record, byte for byte)."""
    from assay.core import casestore
    return {casestore.head_of(line)[0]: line for _, line in casestore.iter_lines(Path(run_dir) / casestore.JOURNAL)}


def masked_snapshot(out: Path, masks) -> dict[str, str]:
    """run_files(out) with each (regex, replacement) of `masks` applied and run.log compared as
    comparable_runlog: what two runs of the same answers must agree on, file by file."""
    files = {}
    for rel, text in run_files(out).items():
        for rx, sub in masks:
            text = rx.sub(sub, text)
        files[rel] = comparable_runlog(text) if rel == "run.log" else text
    return files



def later_copy(run_dir: Path, dest: Path) -> Path:
    """A copy of a run dir that is a later run of it (compare_runs.py refuses a run dir and its byte copy:
    the same run id and start time): bench/twin.py's, the benchmarks' own second run."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_twin", Path(__file__).resolve().parents[1] / "bench" / "twin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.later_twin(run_dir, dest)
