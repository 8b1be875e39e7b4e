"""Run history: every finished run under `<state>/reports/`, grouped into comparable series.

A run is read through the files of runner-contract §10 only (results.json, manifest.yaml,
verdicts_for_stats.jsonl) and, unless told otherwise, re-checked with the runner's own
`--verify` (`check_run_dir`). A run whose decision (`decide`) already holds the check's answer
and it failed is excluded whatever `verify` says (`history.check`: the viewer's History, which
takes only an answer kept for the run's bytes, excludes what run_history.py excludes). Order is
the run id's UTC timestamp, never a file's mtime.

- **Series**: runs of one mode with the same dataset version, harness version, k and suite
  (the manifest's `suite_sha256`, assay.suite.version) are comparable; any change starts a new
  series, and the series says what changed. A run without a suite hash (older than it) does not
  start a series by itself: its suite is unknown, not different.
- **Per run**: pass rate = passes / (passes + failures) with its Wilson 95 % interval,
  gating failures, infra rate. Holdout runs are aggregate only: no case ids, no sequences.
- **The holdout seal**: verdicts_for_stats.jsonl keeps real ids for holdout cases, so every
  id a run's manifest (`cases[].set: holdout`) or verdicts.jsonl (`holdout: true`) marks is
  dropped from every run's per-case data (counts keep them); a run that cannot say which of
  its cases are holdout shows none of its ids.
- **Flaky** and **changed** (assay.history.flaky): a case whose repeats disagreed within a run,
  or whose verdicts flip between pass and fail and back across the runs of a series (unless every
  run's repeats agreed: then each flip went with the app); ranked by flips. A case that changed
  and stayed is a **regression** (pass → fail) or a **fix** (fail → pass), listed in `changed`
  with the run of its last change.
- **Cost and latency**: each run's app cost per traced case, judge cost per case (or why it is
  unknown) and their sum (what gate.py's cost budget checks), and p95 latency, from results.json's
  `cost_latency` block (null when the run could not price or time its cases); `cost_words` says
  what each covers (assay.stats.cost_words, the words every page uses).
- **Drift**: the series' last run against its earlier runs pooled, Fisher's exact test
  (two-sided, alpha 0.05): flagged when the pass rate moved more than the sample sizes
  explain.
- **Excluded runs** (running, aborted, incomplete, failing --verify in the gate's words, unreadable) are
  listed with the reason, first, so nobody reads a trend over a run that does not count. A
  shard dir (`<run-id>.shard-<I>`) is named as one shard of that run, a slice, not a run.
- **Rescored** (`manifest_extra.rescored_from`) and **replayed** runs (`run_cases.py --replay`) did not
  call the app: listed apart (`rescored_runs`, `replayed_runs`), never a series point, never in drift.
- **Clean**: a run whose gate could not have opened on its cases alone (infra errors,
  incomplete traces or unscored cases) is `clean: false` with `not_clean` saying why; its
  pass rate covers only the scored cases, and the page never draws it as a green point.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..core.jsonio import loads
from ..core.errors import AssayError
from ..core.ids import SERIES_KEYS, parse_run_id  # noqa: F401 (SERIES_KEYS re-exported)
from ..core.statedir import not_a_state_dir
from ..plan.shards import parse_shard_dir_name
from ..core.runapp import app_name
from ..replay.source import replayed_words
from ..stats.cost_words import judge_cost_part, with_judge, words as cost_words
from ..stats.proportions import fisher_exact_two_sided, wilson_interval
from .check import check_verdict
from .flaky import classify, flips, repeat_counts  # noqa: F401 (flips re-exported)

DRIFT_ALPHA = 0.05
DRIFT_TEST = "Fisher's exact test (two-sided): the series' last run against its earlier runs pooled"
HOLDOUT_MODES = ("holdout",)


def _read(path: Path) -> Any:
    return loads(path.read_bytes().decode("utf-8"))


def _verdict_rows(run_dir: Path, name: str = "verdicts_for_stats.jsonl") -> list[dict]:
    path = run_dir / name
    rows = []
    for line in path.read_bytes().decode("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if isinstance(row, dict):
                rows.append(row)
    return rows


def load_run(run_dir: Path, *, verify: bool = True,
             decide: Callable[[Path], dict] | None = None) -> tuple[dict | None, str | None]:
    """(run record, None) for a usable run, else (None, the reason it is excluded). `decide` is the one
    decision (`assay.verdict.decision_dict`, handed in by the command): the record's `gate` and
    `gate_reasons` are its words, never this module's."""
    if run_dir.is_symlink():
        return None, "a symlink, not a run directory"
    docs = []
    for name in ("results.json", "manifest.yaml"):
        try:
            docs.append(_read(run_dir / name))
        except FileNotFoundError:
            return None, f"no {name}: not a finished run"
        except (OSError, ValueError) as exc:   # the file and where it broke (a JSON error's line and column)
            return None, f"{name} is unreadable ({type(exc).__name__}: {exc})"
    results, manifest = docs
    summary = results.get("summary") if isinstance(results, dict) else None
    if not isinstance(summary, dict) or not isinstance(manifest, dict):
        return None, "results.json or manifest.yaml is not the runner's shape"
    status = summary.get("status")
    if status != "ok":
        return None, f"status {status!r} (only finished, complete runs count)"
    decision = decide(run_dir) if decide is not None else None
    failed, checked = check_verdict(run_dir, decision, verify)
    if failed:
        return None, failed
    mode = results.get("mode") or manifest.get("mode")
    passes, failures = _int(summary.get("passes")), _int(summary.get("failures"))
    scored = passes + failures
    interval = wilson_interval(passes, scored)
    record = {
        "run_id": run_dir.name,
        "mode": mode,
        "dataset_version": results.get("dataset_version", manifest.get("dataset_version")),
        "harness_version": results.get("harness_version", manifest.get("harness_version")),
        "k": results.get("k", manifest.get("k")),
        "suite_sha256": manifest.get("suite_sha256") if isinstance(manifest.get("suite_sha256"), str) else None,
        "app": app_name(manifest),
        "started_at": results.get("started_at"),
        "cases": _int(summary.get("n")),
        "passes": passes, "failures": failures, "scored": scored,
        "unscored": _int(summary.get("unscored")),
        "pass_rate": round(passes / scored, 4) if scored else None,
        "interval": [round(interval[0], 4), round(interval[1], 4)] if interval else None,
        "gating_failures": _int(summary.get("gating_failures")),
        "infra_rate": summary.get("infra_rate"),
        "holdout": mode in HOLDOUT_MODES,
        "rescored_from": _rescored_from(manifest),
        "replayed": replayed_words(manifest),
    }
    record.update(cost_latency_of(results))
    blockers = [f"{_int(summary.get(k))} {word}" for k, word in
                (("infra_errors", "infra"), ("infra_incomplete", "incomplete traces"), ("unscored", "unscored"))
                if _int(summary.get(k))]
    record["clean"] = not blockers
    record["not_clean"] = ", ".join(blockers) or None
    record["verified"] = checked
    if decision is not None:
        record["gate"], record["gate_reasons"] = decision["gate"], decision["reasons"]
    sealed = _holdout_ids(run_dir, manifest)
    record["sealed"] = sealed if sealed is not None else set()
    if not record["holdout"]:
        try:
            rows = _verdict_rows(run_dir)
        except (OSError, ValueError) as exc:
            return None, f"verdicts_for_stats.jsonl unreadable ({type(exc).__name__})"
        if sealed is None:
            # which of its cases are holdout cannot be told: none of its ids is shown (fail closed)
            record["verdicts"] = {}
            record["per_case_withheld"] = ("per-case data withheld: neither manifest.yaml's case list nor "
                                           "verdicts.jsonl says which cases are holdout")
        else:
            record["verdicts"] = {r["case_id"]: r.get("verdict") for r in rows
                                  if isinstance(r.get("case_id"), str) and r["case_id"] not in sealed}
            record["repeats"] = repeat_counts(run_dir)   # looked up only by the ids above, never listed
    return record, None


def cost_latency_of(results: dict) -> dict:
    """A run's app cost per traced case, the judge's per case and their sum (gate.py's cost budget's
    figure), and p95 latency, from results.json's cost_latency block (stats.cost): null, never 0,
    when the run could not price or time them (`judge_cost_note` says why for the judge)."""
    block = results.get("cost_latency") if isinstance(results.get("cost_latency"), dict) else {}
    cost = block.get("cost") if isinstance(block.get("cost"), dict) else {}
    lat = block.get("latency_ms") if isinstance(block.get("latency_ms"), dict) else {}
    per_case = cost.get("mean_per_case")
    p95 = lat.get("p95")
    per_case = per_case if isinstance(per_case, (int, float)) else None
    judge = block.get("judge") if isinstance(block.get("judge"), dict) else {}
    calls = judge.get("calls") if isinstance(judge.get("calls"), int) else 0
    judge_mean, judge_note = judge_cost_part(judge)
    currency = cost.get("currency") if isinstance(cost.get("currency"), str) else None
    return {"cost_per_case": per_case, "judge_calls": calls, "judge_cost_per_case": judge_mean,
            "judge_cost_note": judge_note, "cost_per_case_with_judge": with_judge(per_case, judge_mean, calls),
            "currency": currency or (judge.get("currency") if isinstance(judge.get("currency"), str) else None),
            "p95_latency_ms": p95 if isinstance(p95, (int, float)) else None}


def _holdout_ids(run_dir: Path, manifest: dict) -> set[str] | None:
    """The run's holdout case ids (manifest `cases[].set`, verdicts.jsonl `holdout` rows), or
    None when neither file can say. verdicts_for_stats.jsonl keeps real ids for holdout cases
    (contract §10.2): these are the ids to keep out of every per-case list."""
    ids: set[str] | None = None
    cases = manifest.get("cases")
    if isinstance(cases, list):
        ids = {c["id"] for c in cases if isinstance(c, dict) and c.get("set") == "holdout"
               and isinstance(c.get("id"), str)}
    try:
        rows = _verdict_rows(run_dir, "verdicts.jsonl") if (run_dir / "verdicts.jsonl").is_file() else None
    except (OSError, ValueError):
        rows = None
    if rows is not None:
        ids = (ids or set()) | {r["case_id"] for r in rows if r.get("holdout") and isinstance(r.get("case_id"), str)}
    return ids


def _rescored_from(manifest: dict) -> str | None:
    extra = manifest.get("manifest_extra")
    source = extra.get("rescored_from") if isinstance(extra, dict) else None
    return str(source.get("run_id")) if isinstance(source, dict) and source.get("run_id") else None


def shard_dir_reason(name: str) -> str | None:
    parsed = parse_shard_dir_name(name)
    if parsed:
        base, index = parsed
        return (f"shard {index} of run {base}: a slice of a run, not a run (merge_runs.py merges the shards "
                f"into reports/{base}, which counts)")
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def scan(state_dir: Path, *, verify: bool = True,
         decide: Callable[[Path], dict] | None = None) -> tuple[list[dict], list[dict]]:
    """(usable runs in run-id time order, excluded runs with reasons)."""
    reports = Path(state_dir) / "reports"
    if not reports.is_dir():
        raise AssayError(not_a_state_dir(Path(state_dir)), 2)
    runs, excluded = [], []
    for entry in sorted(reports.iterdir()):
        if not entry.is_dir() or entry.name.startswith("."):
            continue
        parsed = parse_run_id(entry.name)
        if not parsed:
            excluded.append({"run_id": entry.name, "reason": shard_dir_reason(entry.name)
                             or "directory name is not a run id (<mode>-<UTC stamp>)"})
            continue
        record, reason = load_run(entry, verify=verify, decide=decide)
        if record is None:
            excluded.append({"run_id": entry.name, "reason": reason})
        else:
            record["stamp"] = parsed[1]
            runs.append(record)
    runs.sort(key=lambda r: (r["stamp"], r["run_id"]))
    excluded.sort(key=lambda r: r["run_id"])
    return runs, excluded


def series_name(key: tuple, suite: str | None = None, app: str | None = None) -> str:
    mode, dataset, harness, k = key
    return (f"{mode} · dataset v{dataset} · assay {harness} · k={k}" + (f" · suite {suite[:8]}" if suite else "")
            + (f" · app {app}" if app else ""))


def build_series(runs: list[dict]) -> list[dict]:
    """Consecutive comparable runs per mode and app; a changed key starts a new series that names the change.
    Runs of two apps in one reports dir (adapter.yaml app.name) are never one series: the suite hash
    does not hold the app, and one app's run read as the other's latest point made a trend of both.
    The app is named in the series only when the reports dir holds more than one."""
    apps = {run.get("app") for run in runs}
    by_mode: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        by_mode.setdefault((str(run["mode"]), str(run.get("app") or "")), []).append(run)
    out = []
    for mode in sorted(by_mode):
        current: dict | None = None
        for run in by_mode[mode]:
            key = tuple(run[k] for k in SERIES_KEYS)
            suite = run.get("suite_sha256")
            suite_changed = current is not None and bool(suite and current["suite_sha256"]) \
                and suite != current["suite_sha256"]
            if current is None or tuple(current["key"]) != key or suite_changed:
                change = None
                if current is not None:
                    parts = [f"{k} {a} → {b}" for k, a, b in zip(SERIES_KEYS, current["key"], key) if a != b]
                    if suite_changed:
                        parts.append(f"suite {current['suite_sha256'][:8]} → {suite[:8]} (a case, rubric, "
                                     "adapter or judge changed)")
                    change = ", ".join(parts)
                current = {"key": list(key), "name": series_name(key, suite, run.get("app") if len(apps) > 1 else None),
                           "app": run.get("app"), "started_by": change, "suite_sha256": suite, "runs": []}
                out.append(current)
            elif suite and not current["suite_sha256"]:
                current["suite_sha256"] = suite  # an older run's unknown suite joins the first known one
            current["runs"].append(run)
    for s in out:
        s.update(_analyse(s["runs"]))
        s["runs"] = [_public_run(r) for r in s["runs"]]
    return out


def _public_run(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in ("verdicts", "stamp", "sealed", "repeats")}


def _analyse(runs: list[dict]) -> dict:
    holdout = runs[0]["holdout"]
    out: dict[str, Any] = {"holdout": holdout, "drift": drift(runs)}
    if holdout:
        out["cases"] = None
        out["flaky"] = []
        out["changed"] = []
        out["note"] = "holdout: aggregate only (case ids and sequences are sealed)"
        return out
    ids = sorted({cid for r in runs for cid in r["verdicts"]})
    cases, flaky, changed = {}, [], []
    for cid in ids:
        seq = [r["verdicts"].get(cid) for r in runs]
        kind, fields = classify(cid, seq, runs)
        cases[cid] = {"sequence": seq, "flips": fields["flips"]}
        if kind == "flaky":
            flaky.append({"case_id": cid, "sequence": seq, **fields})
        elif kind == "changed":
            changed.append({"case_id": cid, "sequence": seq, **fields})
    out["cases"] = cases
    out["flaky"] = sorted(flaky, key=lambda c: (-c["flips"], c["case_id"]))
    out["changed"] = sorted(changed, key=lambda c: (c["kind"] != "regression", c["case_id"]))
    return out


def drift(runs: list[dict]) -> dict:
    if len(runs) < 2:
        return {"test": DRIFT_TEST, "flagged": False, "p_value": None, "alpha": DRIFT_ALPHA,
                "reason": "one run: nothing to compare"}
    last, earlier = runs[-1], runs[:-1]
    a, b = last["passes"], last["failures"]
    c, d = sum(r["passes"] for r in earlier), sum(r["failures"] for r in earlier)
    if not (a + b) or not (c + d):
        return {"test": DRIFT_TEST, "flagged": False, "p_value": None, "alpha": DRIFT_ALPHA,
                "reason": "no scored cases on one side"}
    p = fisher_exact_two_sided(a, b, c, d)
    last_rate, earlier_rate = a / (a + b), c / (c + d)
    flagged = p < DRIFT_ALPHA
    return {"test": DRIFT_TEST, "alpha": DRIFT_ALPHA, "p_value": round(p, 6), "flagged": flagged,
            "last": {"run_id": last["run_id"], "passes": a, "scored": a + b, "pass_rate": round(last_rate, 4)},
            "earlier": {"runs": len(earlier), "passes": c, "scored": c + d, "pass_rate": round(earlier_rate, 4)},
            "direction": "down" if last_rate < earlier_rate else "up" if last_rate > earlier_rate else "flat",
            "reason": (f"pass rate {earlier_rate:.1%} → {last_rate:.1%}, p = {p:.4f} "
                       f"{'<' if flagged else '≥'} {DRIFT_ALPHA}")}


def seal_runs(runs: list[dict]) -> None:
    """Drop every id any run marks holdout from every run's per-case verdicts: a case sealed in
    one run (a holdout run, or a holdout case a regression run carried) is never named by another."""
    sealed = set().union(*(r.pop("sealed", set()) for r in runs))
    for r in runs:
        if "verdicts" in r and sealed:
            r["verdicts"] = {cid: v for cid, v in r["verdicts"].items() if cid not in sealed}


def history(state_dir: Path, *, verify: bool = True, decide: Callable[[Path], dict] | None = None) -> dict:
    """The history document; with `decide`, every run carries the one decision (`gate`, `gate_reasons`)."""
    runs, excluded = scan(state_dir, verify=verify, decide=decide)
    seal_runs(runs)
    rescored = [r for r in runs if r.get("rescored_from")]
    # a replay answered from a recording: the app was not called, so it measures the recorded run again
    replayed = [r for r in runs if r.get("replayed") and not r.get("rescored_from")]
    series = build_series([r for r in runs if not r.get("rescored_from") and not r.get("replayed")])
    return {
        "state_dir": str(state_dir),
        "excluded_runs": excluded,
        "runs_used": len(runs) - len(rescored) - len(replayed),
        # of those, the runs whose completeness check answered clean (the rest were not checked: "not verified")
        "runs_verified": sum(1 for s in series for r in s["runs"] if r.get("verified")),
        "rescored_runs": [{"run_id": r["run_id"], "rescored_from": r["rescored_from"], "pass_rate": r["pass_rate"],
                           "scored": r["scored"], "series": series_name(tuple(r[k] for k in SERIES_KEYS))}
                          for r in rescored],
        "replayed_runs": [{"run_id": r["run_id"], "replayed": r["replayed"], "pass_rate": r["pass_rate"],
                           "scored": r["scored"], "series": series_name(tuple(r[k] for k in SERIES_KEYS))}
                          for r in replayed],
        "series": series,
        "drift_flagged": [s["name"] for s in series if s["drift"].get("flagged")],
        "flaky_cases": sorted(({"series": s["name"], **f} for s in series for f in s["flaky"]),
                              key=lambda f: (-f["flips"], f["series"], f["case_id"])),
        "changed_cases": [{"series": s["name"], **c} for s in series for c in s.get("changed") or []],
        "cost_words": cost_words(),
        "method": {"order": "run id UTC timestamp", "series_keys": list(SERIES_KEYS) + ["suite_sha256", "app"],
                   "pass_rate": "passes / (passes + failures), Wilson 95 % interval",
                   "flaky": "a run's repeats disagreed (reliability.json), or the scored verdicts flip between pass "
                            "and fail and back (2 or more flips) across a series' runs while some run had no "
                            "agreeing repeats to show the flips went with the app",
                   "changed": "a flip that stayed, with every run's repeats agreeing when it flipped more than once: a "
                              "regression (pass → fail) or a fix (fail → pass) by its last change",
                   "drift": DRIFT_TEST + f", alpha {DRIFT_ALPHA}", "verified": verify,
                   "rescored": "listed apart: never a series point, never in drift",
                   "replayed": "run_cases.py --replay runs (the app was not called) listed apart: never a series "
                               "point, never in drift"},
    }
