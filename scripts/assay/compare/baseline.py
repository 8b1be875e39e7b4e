"""`--baseline auto`: which run a candidate is compared with (compare_runs, gate, draft_report,
run_cases --baseline-verdicts). Runner contract §20.4.

1. `<state>/reports/baseline.json` (`{"run_id": ...}`, written by the skill, never the runner)
   pins one: it wins, and a pin naming a run that is not there is exit 2 naming the file. So is a
   pin naming another app's run (`pinned_for`: the same `Own.admits` as step 2; a team sharing one
   state dir for two apps, or a pin left from before the app was renamed): re-pin, or delete the pin.
2. Else the newest run started before the candidate, of the same series (mode, dataset_version,
   harness_version, k: `SERIES_KEYS`, the keys the runner's --baseline-verdicts checks), whose
   status is `ok` and whose gate is open when gated now with gate.py's defaults (completeness
   re-check included; budgets from profile.yaml as gate.py applies them). The suite hash is not
   part of the key: an edited case is what the comparison's `expectation_changed` is for.
   Nor is the app, but a run of another app is never the base (`Own.admits`): runs record their
   app (results.json `app`: adapter.yaml app.name; for a run written before, its manifest's
   make_plan.py record, as `app_name` reads it); one naming another app is passed over, and one
   where either side names none (an unnamed app, or an old run made without make_plan.py) only
   when it shares no case id with the candidate. The runs passed over, and a base whose app could
   not be checked by name, are said (`said`: the callers' notes; the refusal names them too).
3. Else exit 2, saying why (no earlier run of the series; or each one's reason, newest first).

With a store (`--store s3://bucket/prefix` where the command has it, else $ASSAY_STORE), step 2
looks there instead of reports/ (`newest_open_in_store`): one listing, each candidate's
results.json, and only the chosen run downloaded whole, into reports/<run-id> (a copy already
there is used when it holds each of the store's files at the same size, else exit 2 naming them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import AssayError
from ..core.ids import SERIES_KEYS, parse_run_id  # noqa: F401 (SERIES_KEYS re-exported)
from ..core.runapp import app_name
from ..report.rundir import try_json, try_json_head

PIN_FILE = "baseline.json"
# the flag a refusal names, as (flag, its argument): the gate's and compare's; run_cases.py's own
GATE_FLAG = ("--baseline", "RUN_DIR")
RUNNER_FLAG = ("--baseline-verdicts", "RUN_DIR/verdicts_for_stats.jsonl")
MAX_REASONS = 5


def series_of(doc: dict) -> tuple:
    return tuple(doc.get(k) for k in SERIES_KEYS)


def series_words(key: tuple) -> str:
    return ", ".join(f"{k} {v}" for k, v in zip(SERIES_KEYS, key))


def pinned(reports: Path) -> Path | None:
    """The run dir reports/baseline.json pins (None without a pin), whoever it is of: for a choice of
    a baseline ask `pinned_for`, which refuses a pin of another app."""
    pin = reports / PIN_FILE
    if not pin.is_file():
        return None
    doc = try_json(pin)
    run_id = doc.get("run_id") if isinstance(doc, dict) else None
    if not parse_run_id(run_id):
        raise AssayError(f"{pin}: not a baseline pin; it holds {{\"run_id\": \"<mode>-<UTC stamp>\", ...}} "
                         "(the run skill writes it); fix or delete it", 2, path=str(pin))
    run_dir = reports / run_id
    if not (run_dir / "results.json").is_file():
        raise AssayError(f"{pin} pins {run_id}, but {run_dir} holds no finished run; re-pin (or delete "
                         f"{PIN_FILE} to let --baseline auto choose)", 2, path=str(pin))
    return run_dir


def pinned_for(reports: Path, own: "Own", flag: tuple[str, str] = GATE_FLAG) -> Path | None:
    """`pinned`, for a candidate of app `own`: a pin naming a run of another app (as `Own.admits` tells
    it, the rule `--baseline auto` passes such runs over by) is exit 2 naming the pin file, both apps
    and the fix; a pinned run whose app could not be checked by name is said in `own.said`."""
    run_dir = pinned(reports)
    if run_dir is None:
        return None
    results = try_json_head(run_dir / "results.json")
    words = own.admits(run_dir.name, results if isinstance(results, dict) else {},
                       lambda: case_ids_of(run_dir / "results.json"),
                       lambda: try_json_head(run_dir / "manifest.yaml"))
    if words is None:
        pin = reports / PIN_FILE
        mine = f"app {own.app!r}" if own.app is not None else "this run's app (it records no app name)"
        raise AssayError(f"{pin} pins {own.others[-1]}, not a run of {mine}: compared with it, this app's "
                         f"cases would be read against another app's answers. Re-pin {PIN_FILE} to a run of "
                         f"{mine}, or delete it to let {flag[0]} auto choose this app's newest open run; where "
                         f"two apps share this state dir and the pin is the other app's, pass {' '.join(flag)}",
                         2, path=str(pin))
    if words:
        own.said.append(words)
    return run_dir


class Own:
    """Which app the candidate is of: `app` (its name, or None) and its case ids (read only when a
    run without a name on one side must be told apart by them). `said` collects the words."""

    def __init__(self, app: str | None, ids: Callable[[], set[str]], said: list[str] | None = None) -> None:
        self.app, self._ids, self._held = app, ids, None
        self.others: list[str] = []      # runs passed over as another app's, with why
        self.said = said if said is not None else []

    def ids(self) -> set[str]:
        if self._held is None:
            self._held = self._ids()
        return self._held

    def admits(self, name: str, results: Mapping[str, Any], base_ids: Callable[[], set[str]],
               manifest: Callable[[], Any]) -> str | None:
        """None when the run `name` (its results.json head `results`) is another app's (noted in
        `others`); else "" when its app is this one's by name, or the words saying it could not be checked.
        A run written before runs recorded their app names it in its manifest (`manifest()`: make_plan.py's
        manifest_extra.app.name), read only then: `app_name`, as for the candidate (`own_of_run`)."""
        old = "app" not in results   # a run written before runs recorded their app
        theirs = app_name(manifest() if old else results)
        if self.app is not None and theirs is not None:
            if theirs == self.app:
                return ""
            self.others.append(f"{name} (app {theirs!r})")
            return None
        if theirs is None:
            why = "records no app name (" + ("a run written before runs recorded adapter.yaml app.name" if old
                                             else "its adapter.yaml has no app.name") + ")"
            whose = "no app name recorded" + (", a run from before runs recorded one" if old else "")
        else:
            why, whose = f"is of app {theirs!r}, and this run records no app name", f"app {theirs!r}"
        mine, base = self.ids(), base_ids()
        if not mine or not base:   # a holdout run's results.json names no case: nothing to tell them apart by
            return (f"the base {name} {why}, and no case id can be compared (sealed holdout cases): its app "
                    "could not be checked; pass --baseline RUN_DIR (or pin reports/baseline.json) if it is not this app's")
        shared = len(mine & base)
        if not shared:
            self.others.append(f"{name} ({whose}, and no case id in common with this run)")
            return None
        return (f"the base {name} {why}: its app could not be checked by name; it was taken as this app's run "
                f"because it shares {shared} of this run's {len(mine)} case id(s) (set adapter.yaml app.name so "
                "two apps' runs in one reports dir or store prefix are told apart)")

    def passed_over(self) -> str:
        if not self.others:
            return ""
        shown = "; ".join(self.others[:MAX_REASONS]) + (f"; and {len(self.others) - MAX_REASONS} more"
                                                        if len(self.others) > MAX_REASONS else "")
        mine = f"app {self.app!r}" if self.app is not None else "this run's app (it records no app name)"
        return (f"--baseline auto passed over {len(self.others)} run(s) of the series as another app's (never "
                f"a base of {mine}): {shown}")


def case_ids_of(results_json: Path) -> set[str]:
    """The case ids a run's results.json rows name (holdout cases are never there), walked one row at a time."""
    ids: set[str] = set()

    def take(row: Any) -> None:
        if isinstance(row, dict) and isinstance(row.get("case_id"), str):
            ids.add(row["case_id"])
    try_json_head(results_json, take)
    return ids


def own_of_run(candidate_dir: Path, results: Mapping[str, Any], said: list[str] | None) -> Own:
    """The candidate run's app: results.json `app`; for a run written before it was recorded, its
    manifest's (make_plan.py's manifest_extra.app.name)."""
    app = app_name(results if "app" in results else try_json_head(candidate_dir / "manifest.yaml"))
    return Own(app, lambda: case_ids_of(candidate_dir / "results.json"), said)


def newest_open(reports: Path, key: tuple, *, before: str | None, exclude: str | None,
                is_open: Callable[[Path], tuple[bool, str | None]], flag: tuple[str, str] = GATE_FLAG,
                own: Own | None = None) -> Path:
    """The newest run of series `key` (started before `before`, a run-id stamp) whose gate is open."""
    found = []
    if reports.is_dir():
        for child in reports.iterdir():
            parsed = parse_run_id(child.name)
            if not parsed or child.name == exclude or child.is_symlink() or not child.is_dir():
                continue
            if before is not None and parsed[1] >= before:
                continue
            found.append((parsed[1], child.name, child))
    found.sort(reverse=True)
    what = f"{reports}: {flag[0]} auto found no baseline for the series ({series_words(key)})"
    return _first_open(((name, lambda c=child: try_json_head(c / "results.json"), lambda c=child: c,
                         lambda c=child: case_ids_of(c / "results.json"),
                         lambda c=child: try_json_head(c / "manifest.yaml"))
                        for _, name, child in found), key, is_open, what,
                       f"run one (or pass {' '.join(flag)}, or pin one in reports/{PIN_FILE})",
                       f"pass {' '.join(flag)}, or pin one in reports/{PIN_FILE}", own=own)


def newest_open_in_store(store: Any, reports: Path, key: tuple, *, before: str | None, exclude: str | None,
                         is_open: Callable[[Path], tuple[bool, str | None]], own: Own | None = None) -> Path:
    """`newest_open` over the runs of a store (a StoreURL): the same choice and reasons; only a
    candidate's results.json is read there until one is chosen, downloaded into reports/<run-id>."""
    from ..store.runs import NO_RUN, StoreRuns
    runs = StoreRuns(store)

    ready: set[str] = set()

    def local(name: str) -> Path:
        if name in ready:
            return reports / name
        ready.add(name)
        if not (reports / name / "results.json").is_file():
            runs.fetch(name, reports / name)
            return reports / name
        # a copy already here is used only when it is the store's (a fetch cut short, or an artifact
        # that restored results.json alone, would be gated as that run and skipped as closed)
        diffs = runs.differs(name, reports / name)
        if diffs:
            shown = "; ".join(diffs[:MAX_REASONS]) + (f"; and {len(diffs) - MAX_REASONS} more"
                                                      if len(diffs) > MAX_REASONS else "")
            raise AssayError(f"--baseline auto chose {name} from {store}, but {reports / name} on this machine is "
                             f"not the store's copy ({shown}): delete it so the store's is downloaded, or pass "
                             "--baseline RUN_DIR", 2, path=str(reports / name))
        return reports / name

    ids = runs.ids()
    names = [n for n in ids if n != exclude
             and not (before is not None and parse_run_id(n) and parse_run_id(n)[1] >= before)]
    what = f"{store}: --baseline auto found no baseline for the series ({series_words(key)})"
    empty = "" if ids else "; " + NO_RUN
    held: dict[str, Any] = {}   # each candidate's results.json, read once (its rows give its case ids)

    def results(n: str) -> Any:
        held.clear()
        held[n] = runs.results(n)
        return {k: v for k, v in held[n].items() if k != "cases"} if isinstance(held[n], dict) else held[n]

    def ids(n: str) -> set[str]:
        rows = (held.get(n) or {}).get("cases")
        return {r["case_id"] for r in rows or () if isinstance(r, dict) and isinstance(r.get("case_id"), str)}
    return _first_open(((n, lambda n=n: results(n), lambda n=n: local(n), lambda n=n: ids(n),
                         lambda n=n: runs.manifest(n)) for n in names),
                       key, is_open, what, "publish one (publish_run.py), or pass --baseline RUN_DIR" + empty, own=own)


def _first_open(candidates, key: tuple, is_open, what: str, hint: str,
                way_out: str = "pass --baseline RUN_DIR", own: Own | None = None) -> Path:
    """The first of (name, results(), run_dir(), case_ids(), manifest()) candidates, newest first, of series `key`
    and of the candidate's own app (`own`) that is complete with an open gate; else exit 2 with each
    one's reason, and the runs passed over as another app's."""
    reasons: list[str] = []
    same = 0
    for name, results_of, dir_of, ids_of, manifest_of in candidates:
        results = results_of()
        if not isinstance(results, dict) or series_of(results) != key:
            continue
        unchecked = own.admits(name, results, ids_of, manifest_of) if own is not None else ""
        if unchecked is None:
            continue   # another app's run: never a base, named below
        same += 1
        status = (results.get("summary") or {}).get("status") if isinstance(results.get("summary"), dict) else None
        if status != "ok":
            reasons.append(f"{name}: status {status!r}, not complete")
            continue
        ok, why = is_open(dir_of())
        if ok:
            if own is not None:
                own.said.extend(w for w in (own.passed_over(), unchecked) if w)
            return dir_of()
        reasons.append(f"{name}: gate closed ({why})")
    others = own.passed_over() if own is not None else ""
    others = f" ({others})" if others else ""
    if not same:
        raise AssayError(f"{what}: no earlier run of this series{' of this app' if others else ''}{others}; {hint}",
                         2, series=dict(zip(SERIES_KEYS, key)))
    shown = "; ".join(reasons[:MAX_REASONS]) + (f"; and {len(reasons) - MAX_REASONS} more" if len(reasons) > MAX_REASONS else "")
    raise AssayError(f"{what}: none of its {same} earlier run(s) is complete with an open gate: {shown}{others}; "
                     f"fix what closed it and run again, or {way_out}", 2, series=dict(zip(SERIES_KEYS, key)))


def _newest(reports: Path, key: tuple, *, before: str | None, exclude: str | None, store: str | None,
            is_open: Callable[[Path], tuple[bool, str | None]], flag: tuple[str, str] = GATE_FLAG,
            own: Own | None = None) -> Path:
    from ..store.url import configured
    where = configured(store)
    if where is not None:
        return newest_open_in_store(where, reports, key, before=before, exclude=exclude, is_open=is_open, own=own)
    return newest_open(reports, key, before=before, exclude=exclude, is_open=is_open, flag=flag, own=own)


def resolve_baseline(spec: str, candidate_dir: Path, store: str | None = None, *,
                     is_open: Callable[[Path], tuple[bool, str | None]], said: list[str] | None = None) -> Path:
    """A run dir for `--baseline SPEC` next to the candidate run (SPEC: a run dir, or `auto`).
    `is_open` is the one decision (`assay.verdict.gate_open`), handed in by the command. `said`, when
    given, gets the words the comparison's notes say about the choice (runs of another app passed
    over; a base whose app could not be checked by name)."""
    if spec != "auto":
        return Path(spec)
    candidate_dir = Path(candidate_dir)
    reports = candidate_dir.parent
    results = try_json_head(candidate_dir / "results.json")   # its top-level keys: the case rows are not read
    if not isinstance(results, dict):
        if (pin := pinned(reports)) is not None:   # (the pin's app is not checked against a run that is unreadable)
            return pin
        raise AssayError(f"{candidate_dir}: no readable results.json; --baseline auto needs the candidate run "
                         "dir (<state>/reports/<run-id>)", 2, path=str(candidate_dir))
    mine = own_of_run(candidate_dir, results, said)
    pin = pinned_for(reports, mine)
    if pin is not None:
        return pin
    # the run's own id (results.json's), not its dir's name: a run dir copied or downloaded under another
    # name (an artifact into ./run) would have every run as "before" it, itself and newer ones included
    own = results.get("run_id") if parse_run_id(results.get("run_id")) else candidate_dir.name
    parsed = parse_run_id(own)
    return _newest(reports, series_of(results), before=parsed[1] if parsed else None,
                   exclude=own, store=store, is_open=is_open, own=mine)


def refuse_unverified(base: Path, role: str = "base", also: tuple[Path, ...] = ()) -> None:
    """A base run dir that fails `run_cases.py --verify` (e.g. verdicts.jsonl missing) is exit 2
    naming what is missing: read as it is, its cases would show up as added or removed. The same for
    the candidate (role "candidate"): an edited verdicts.jsonl read as it is said "no verdict changed"
    for a run whose gate closes. (A run checked before, unchanged since, is not read again:
    rundir.checked; `also`: the run dirs checked next, whose digest is taken while this one is checked.)"""
    from ..report.run_files import status_from_tail
    from ..rundir.checked import check
    from ..rundir.completeness import RunDirError
    base = Path(base)
    status = status_from_tail(base / "results.json")   # the runner's layout: its end; else its summary
    if status is None:
        results = try_json_head(base / "results.json")   # (the case rows are not held)
        summary = results.get("summary") if isinstance(results, dict) else None
        status = summary.get("status") if isinstance(summary, dict) else None
    if not base.is_dir() or status == "running":
        return   # not a dir, or still running: load_side's own error says so
    try:   # on its own process when it is big: the comparison's memory then starts from a small heap
        problems = check(base, apart=True, also=also)
    except RunDirError as exc:
        problems = [str(exc)]
    if problems:
        shown = "; ".join(str(m) for m in problems[:5]) + (f" and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise AssayError(unverified_words(base, role, shown), 2, path=str(base))


def refuse_either_unverified(base: Path, candidate: Path) -> None:
    """`refuse_unverified` of the base, then of the candidate (compare_runs.py and `gate.py --baseline`),
    the candidate's digest taken while the base is checked."""
    refuse_unverified(base, also=(Path(candidate),))
    refuse_unverified(candidate, "candidate")


def unverified_words(run: Path | str, role: str, shown: str) -> str:
    """Why a side that fails `run_cases.py --verify` is not compared, and the fix (`shown`: the check's
    problems): compare_runs.py's refusal, and the viewer's Compare page's."""
    if role == "base":
        return (f"base {run}: fails run_cases.py --verify ({shown}); a baseline must be a complete run "
                "dir: restore the files, or compare with another run (--baseline auto picks one)")
    return (f"candidate {run}: fails run_cases.py --verify ({shown}); its files are not the run's "
            "complete record, so no comparison is drawn from them: restore the files (or run the "
            "suite again), then compare")


def resolve_for_plan(plan_path: str, *, is_open: Callable[[Path], tuple[bool, str | None]],
                     said: list[str] | None = None) -> str:
    """run_cases.py --baseline-verdicts auto: the chosen run's verdicts_for_stats.jsonl for a plan."""
    if plan_path in (None, "-"):
        raise AssayError("--baseline-verdicts auto needs --plan as a file (it reads the plan's state dir and "
                         "series before the run)", 2, key="--baseline-verdicts")
    plan = try_json(Path(plan_path))
    if not isinstance(plan, dict) or not isinstance(plan.get("paths"), dict):
        raise AssayError(f"--plan {plan_path}: not a readable plan.json (make_plan.py writes one)", 2, key="--plan")
    # named in run_cases.py's own flag (its --baseline is a pairwise rubric's)
    return str(baseline_for_plan(plan, exclude=plan.get("run_id"), is_open=is_open, flag=RUNNER_FLAG, said=said)
               / "verdicts_for_stats.jsonl")


def baseline_for_plan(plan: Mapping[str, Any], *, exclude: str | None, before: str | None = None,
                      is_open: Callable[[Path], tuple[bool, str | None]], flag: tuple[str, str] = GATE_FLAG,
                      said: list[str] | None = None) -> Path:
    """`auto` for a plan (run_cases.py, rescore.py): reports/baseline.json's pin, else the newest complete
    run of the plan's series (mode, dataset version, harness version, k) and of the plan's app whose gate
    was open, started before `before` (a run-id stamp) and not `exclude`."""
    from ..core.version import HARNESS_VERSION
    reports = Path(str((plan.get("paths") or {}).get("state_dir") or ".")) / "reports"
    cases = plan.get("cases") if isinstance(plan.get("cases"), list) else []
    ids = {c["id"] for c in cases if isinstance(c, dict) and isinstance(c.get("id"), str)}
    own = Own(app_name(plan), lambda: ids, said)
    pin = pinned_for(reports, own, flag)
    if pin is not None:
        return pin
    extra = plan.get("manifest_extra") if isinstance(plan.get("manifest_extra"), dict) else {}
    version = extra.get("dataset_version", 1)
    key: tuple[Any, ...] = (plan.get("mode"), version, HARNESS_VERSION, plan.get("k"))
    return _newest(reports, key, before=before, exclude=exclude, store=None, is_open=is_open, flag=flag, own=own)
