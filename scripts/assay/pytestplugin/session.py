"""`pytest --assay STATE_DIR` once activated: plan at collection, one run before the items, the gate last.

Collection converts the suite and builds the plan (`assay.api.plan`, into
<state>/work/pytest/) and yields one item per planned case. After pytest's own selection
(-k, -m, --deselect, --lf: typed on the command line; a case it alone keeps that the configuration
or a plugin's hook drops is refused) the run is planned again as `targeted --case ...` when only some
items are left, then run once by the runner (`assay.api.run`: the run dir under
<state>/reports/, the runner's own resume), gated (gate.py itself), and each item reads its
verdict. A session killed mid-run leaves <state>/work/pytest/session.json naming its plan
and run dir: a later session with the same plan and --assay-resume finishes that run
(run_cases.py --resume); without it the session starts a new run and says the interrupted
one is there (its finished cases were measured against the app as it was then: an app
edited since would read green on cases it now fails).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from .. import api
from ..core import jsonio
from ..core.commands import call
from ..core.visible import show_controls
from .items import AssayCase, AssaySuite
from .selection import config_selection_refused, described, selection

RUNNER_STOPPED = (4, 5, 6, 7)  # the runner stopped or finished badly but left a run dir the gate reads
SESSION_FILE = "session.json"


def _read(path: Path) -> Any:
    """A JSON file's document, or None when it is absent or unreadable (a hand-edited leftover)."""
    try:
        return jsonio.read_json(path)
    except (OSError, ValueError, RecursionError):
        return None


def _without_run_id(plan: dict) -> str:
    """The plan but its run id and its suite files' byte digest (a comment added since leaves the same
    plan: its parts' digests still compare, and run_cases.py re-checks the suite)."""
    same = {k: v for k, v in plan.items() if k != "run_id"}
    if isinstance(same.get("source"), dict):
        same["source"] = {k: v for k, v in same["source"].items() if k != "source_sha256"}
    return jsonio.dumps(same)


class AssaySession:
    def __init__(self, config: pytest.Config, state: str) -> None:
        from ..plan.modes import DEFAULT_MODE
        self.config = config
        self.state = Path(state).resolve()
        if not (self.state / "adapter.yaml").is_file():
            hint = f"; did you mean --assay {self.state / '.assay'}?" if (self.state / ".assay" / "adapter.yaml").is_file() else ""
            raise pytest.UsageError(f"--assay {state}: not an assay state dir (no adapter.yaml){hint}")
        self.mode = config.getoption("assay_mode") or DEFAULT_MODE
        self.tag = config.getoption("assay_tag")
        self.k = config.getoption("assay_k")
        self.baseline = config.getoption("assay_baseline")
        self.resume = bool(config.getoption("assay_resume"))
        if self.mode == "targeted" and not self.tag:
            raise pytest.UsageError("--assay-mode targeted needs --assay-tag T (a unit or an expect.route)")
        if self.tag and self.mode != "targeted":
            raise pytest.UsageError(f"--assay-tag only applies with --assay-mode targeted (got {self.mode})")
        self._refuse_case_node_ids(config)
        self.work = self.state / "work" / "pytest"
        self.xdist_note = self._no_xdist(config)
        self._collected: dict | None = None
        self._offered: list[pytest.Item] = []   # the items before any selection
        self._sources: dict | None = None
        self.run_dir: Path | None = None
        self.rows: dict[str, dict] = {}
        self.not_run_reason: str | None = None
        self.notes: list[str] = []
        self.gate_lines: list[str] = []
        self.gate_closed = False
        self.baseline_dir: Path | None = None
        self.comparison_lines: list[str] = []

    def _refuse_case_node_ids(self, config: pytest.Config) -> None:
        """A case's node id copied from a FAILED line as a path argument (`pytest --assay .assay
        .assay::c-1234`): pytest refuses a directory with `::` parts in its own words, which name
        no way to run the case. Said here with the selection that does."""
        here = Path(config.invocation_params.dir)
        for arg in config.args:
            base, _, case_id = str(arg).partition("::")
            if case_id and (here / base).resolve() == self.state:
                raise pytest.UsageError(
                    f"{arg}: a case of the assay suite is not a path pytest can collect; select it with "
                    f"-k (pytest --assay {config.getoption('assay')} -k {case_id.split('::')[0]}: a targeted run of "
                    "the cases it matches), or rerun the last session's failures with --lf")

    @staticmethod
    def _no_xdist(config: pytest.Config) -> str | None:
        """The run is one runner process (its own concurrency): the items stay on this process."""
        workers = getattr(config.option, "numprocesses", None)
        if not workers and getattr(config.option, "dist", "no") == "no":
            return None
        config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []
        return (f"-n {workers}: the assay run is one runner process (its concurrency is the adapter's "
                "invocation.max_concurrency); the items run here, not on xdist workers")

    # ---------------------------------------------------------------- collection
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = [f"assay: {self.state} (mode {self.mode}" + (f", tag {self.tag}" if self.tag else "")
                 + (f", k={self.k}" if self.k else "") + ")"]
        return lines + ([f"assay: {self.xdist_note}"] if self.xdist_note else [])

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        rep = yield
        if isinstance(collector, pytest.Session) and rep.passed:
            root, nodeid = self.state, self.suite_nodeid()
            suite = AssaySuite.from_parent(collector, name=nodeid, path=root, nodeid=nodeid)
            suite.plugin = self
            rep.result.append(suite)
        return rep

    def suite_nodeid(self) -> str:
        """The state dir as the items' node ids name it: relative to pytest's rootdir."""
        try:
            nodeid = str(self.state.relative_to(self.config.rootpath))
        except ValueError:
            nodeid = str(self.state)
        return self.state.name if nodeid == "." else nodeid

    def _plan(self, *, mode: str, output: Path, cases: list[str] | None = None, **kw: Any) -> dict:
        summary = api.plan(self.state, mode=mode, tag=self.tag, cases=cases, output=output,
                           work_dir=self.work, **kw)
        return jsonio.read_json(summary["plan"])

    def collected_cases(self) -> list[dict]:
        if self._collected is None:
            try:
                self._collected = self._plan(mode=self.mode, k=self.k, output=self.work / "collected-plan.json")
            except api.CommandError as exc:
                raise RuntimeError(f"assay: {exc}") from None
        return self._collected["cases"]

    def case_file(self, case_id: str) -> Path | None:
        """The file a case was read from (convert_suite's `sources`), or None when the converted suite
        does not say (a hand-edited work dir)."""
        if self._sources is None:
            doc = _read(self.work / "converted.json")
            sources = doc.get("sources") if isinstance(doc, dict) else None
            self._sources = sources if isinstance(sources, dict) else {}
        rel = self._sources.get(case_id)
        return self.state / rel if isinstance(rel, str) and (self.state / rel).is_file() else None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        self._offered = list(items)
        return (yield)

    # ---------------------------------------------------------------- the run
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session):
        if session.config.option.collectonly or (session.testsfailed and not
                                                 session.config.option.continue_on_collection_errors):
            return None
        if session.config.option.setuponly:   # pytest skips every item's call: no case is sent to the app
            flag = "--setup-plan" if session.config.option.setupplan else "--setup-only"
            self.notes.append(f"{flag}: no test runs, so nothing was sent to the app and no gate decided")
            return None
        mine = [item for item in session.items if isinstance(item, AssayCase)]
        if self._collected is not None and len(mine) < len(self._collected["cases"]):
            left = {id(item) for item in mine}
            dropped: list[AssayCase | None] = [item for item in self._offered
                                               if isinstance(item, AssayCase) and id(item) not in left]
            dropped += [None] * (len(self._collected["cases"]) - len(mine) - len(dropped))   # never an item
            refused = config_selection_refused(self.config, len(self._collected["cases"]), len(mine), dropped,
                                              self._offered)
            if refused:
                raise pytest.UsageError(refused)
        if mine:
            self._execute([item.case_id for item in mine])
        elif self._collected is not None:
            by = ", ".join(described(self.config, *one) for one in selection(self.config, None))
            self.notes.append("every case was deselected" + (f" (by {by})" if by else "") + ": nothing run, no gate")
        return None

    def _selected_plan(self, ids: list[str], fresh: bool = False) -> tuple[Path, dict]:
        """The collected plan when every case is selected, else a targeted plan of exactly those ids
        (`fresh`: planned again, for a new run id)."""
        assert self._collected is not None
        if sorted(ids) == sorted(c["id"] for c in self._collected["cases"]):
            if fresh:
                self._collected = None
                self.collected_cases()
            return self.work / "collected-plan.json", self._collected  # type: ignore[return-value]
        from ..plan.modes import TARGETED_SPLITS, resolve_mode
        mode = resolve_mode(self.mode)
        extra = ["--split", mode.split] if mode.split in TARGETED_SPLITS else []
        judge = mode.judge and (self.state / "judge" / "judge.yaml").is_file()
        path = self.work / "selected-plan.json"
        plan = self._plan(mode="targeted", cases=ids, k=self.k or (None if mode.k_fixed else mode.k),
                          judge=judge, output=path, extra_args=extra)
        if not fresh:
            self.notes.append(f"{len(ids)} of {len(self._collected['cases'])} case(s) selected: a targeted run "
                              "of exactly those (make_plan.py --mode targeted --case ...)")
        return path, plan

    def _resumable(self, plan: dict) -> tuple[Path, Path] | None:
        """(plan file, run dir) of this state dir's interrupted pytest run when it ran this same plan."""
        from ..rundir.runlock import lock_path, runner_state
        pointer = _read(self.work / SESSION_FILE)
        if not isinstance(pointer, dict):
            return None
        plan_file, out = Path(str(pointer.get("plan"))), Path(str(pointer.get("out")))
        if not plan_file.is_file() or not out.is_dir():
            return None
        results = _read(out / "results.json")
        status = (results.get("summary") or {}).get("status") if isinstance(results, dict) else "running"
        if status != "running" or runner_state(lock_path(out, out.name)) == "alive":
            return None
        stored = _read(plan_file)
        if not isinstance(stored, dict) or _without_run_id(stored) != _without_run_id(plan):
            self.notes.append(f"interrupted run {out.name} left as it is: this session's plan differs "
                              "(resume it by hand: wait_run.py prints the command)")
            return None
        if not self.resume:   # its finished cases answered the app as it was then: never kept unasked
            self.notes.append(f"interrupted run {out.name} (the same plan) left as it is: a new run instead, every "
                              "case sent to the app as it is now (--assay-resume finishes an interrupted run, its "
                              "finished cases kept as measured then; or by hand: wait_run.py prints the command)")
            return None
        return plan_file, out

    def _baseline(self, plan: dict) -> Path | None:
        if self.baseline is None:
            return None
        if self.baseline != "auto":
            self.baseline_dir = Path(self.baseline).resolve()
            if not (self.baseline_dir / "verdicts_for_stats.jsonl").is_file():
                raise pytest.UsageError(f"--assay-baseline {self.baseline}: not a finished run directory (no "
                                        "verdicts_for_stats.jsonl there); pass auto, or a run dir such as "
                                        f"{self.state / 'reports'}/<run-id>")
            return self.baseline_dir / "verdicts_for_stats.jsonl"
        from ..compare.baseline import baseline_for_plan
        from ..core.errors import AssayError
        from ..verdict import gate_open
        # the run the session's gate compares with (gate.py --baseline auto: the compare rule); else, for a
        # selection (-k, --lf: a targeted run) with no targeted baseline, the newest complete earlier run of
        # --assay-mode with the plan's dataset version, harness and k (one the runner can compare with)
        tries = [(plan, gate_open)]
        if plan.get("mode") != self.mode:   # a selection: its targeted plan; never a closed run for the whole suite
            tries.append(({**plan, "mode": self.mode}, lambda _run: (True, None)))
        from ..compare.baseline import PIN_FILE
        pin_words = None   # reports/baseline.json's refusal (a pin of another app, or of no run): said as it is
        for series, is_open in tries:
            try:
                found = baseline_for_plan(series, exclude=plan.get("run_id"), is_open=is_open)
            except AssayError as exc:
                if str(exc.fields.get("path") or "").endswith(PIN_FILE):
                    pin_words = exc.message
                continue
            if (found / "verdicts_for_stats.jsonl").is_file():
                self.baseline_dir = found
                return found / "verdicts_for_stats.jsonl"
        if pin_words is not None:
            self.notes.append(f"--assay-baseline auto: {pin_words}: nothing compared with")
            return None
        self.notes.append(f"--assay-baseline auto: no earlier {self.mode} run of this series (dataset version, "
                          f"harness, k={plan.get('k')}) under {self.state / 'reports'}: nothing to compare with")
        return None

    def _execute(self, ids: list[str]) -> None:
        plan_path, plan = self._selected_plan(ids)
        resume = self._resumable(plan)
        if self.resume and not resume:
            self.notes.append("--assay-resume: no interrupted run of this plan to finish: a new run")
        baseline = None
        if resume:
            plan_path, out = resume
            self.notes.append(f"resumed the interrupted run {out.name} (run_cases.py --resume: finished cases kept)")
        else:
            baseline = self._baseline(plan)
            out = self.state / "reports" / plan["run_id"]
            if out.exists():  # the collected plan's run id was taken meanwhile (one-second resolution)
                plan_path, plan = self._selected_plan(ids, fresh=True)
                out = self.state / "reports" / plan["run_id"]
            plan_path = self._keep_plan(plan_path, plan["run_id"])
            self._same_plan(plan_path, plan, ids)
        jsonio.atomic_write_json(self.work / SESSION_FILE, {"plan": str(plan_path), "out": str(out)})
        self.run_dir = out
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"assay: running {out.name} ({len(ids)} case(s), k={plan['k']}) -> {out}")
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        t0 = time.monotonic()
        try:
            with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
                api.run(plan_path, out, resume=bool(resume), progress="auto",
                        baseline_verdicts=baseline)
        except api.CommandError as exc:
            if exc.code not in RUNNER_STOPPED or not (out / "manifest.yaml").is_file():
                raise pytest.UsageError(f"assay: {exc}") from None
            self.not_run_reason = f"run_cases.py exit {exc.code}: {exc.doc.get('error')}"
            self.notes.append(self.not_run_reason)
        if tr is not None:
            tr.write_line(f"assay: run finished in {time.monotonic() - t0:.1f}s")
        self._gate(out)

    def _same_plan(self, kept: Path, plan: dict, ids: list[str]) -> None:
        """The kept plan is the one this session made, of exactly its items: another session planning in the
        same work dir rewrites collected-plan.json / selected-plan.json, and a run of its cases would leave
        this session's items without verdicts (skipped) under a gate that never saw them."""
        doc = _read(kept)
        if not (isinstance(doc, dict) and doc.get("run_id") == plan["run_id"]
                and sorted(str(c.get("id")) for c in doc.get("cases") or [] if isinstance(c, dict)) == sorted(ids)):
            raise pytest.UsageError(f"assay: the plan in {self.work} changed under this session (another pytest "
                                    "--assay on the same state dir at the same time?): nothing was run; run one "
                                    "session per state dir at a time")

    def _keep_plan(self, plan_path: Path, run_id: str) -> Path:
        """The run's own copy of its plan (<run_id>.plan.json: what a resume needs, byte for byte);
        the previous session's copy goes once its run has finished."""
        kept = self.work / f"{run_id}.plan.json"
        kept.write_bytes(plan_path.read_bytes())
        old = _read(self.work / SESSION_FILE)
        if isinstance(old, dict) and isinstance(old.get("plan"), str) and old["plan"] != str(kept):
            doc = _read(Path(str(old.get("out"))) / "results.json")
            if isinstance(doc, dict) and (doc.get("summary") or {}).get("status") != "running":
                Path(old["plan"]).unlink(missing_ok=True)
        return kept

    def _gate(self, out: Path) -> None:
        from ..report.rundir import read_jsonl_file
        gate = call("gate", [out], needs=("yaml",)) if self.baseline is None else self._gate_on_baseline(out)
        self.gate_closed = gate.code != 0
        self.gate_lines = gate.stdout.rstrip("\n").splitlines() if gate.stdout.strip() else \
            [f"gate.py exit {gate.code}: {(gate.doc or {}).get('error')}"]
        from ..core.errors import AssayError
        try:
            self.rows = {str(r.get("case_id")): r for r in read_jsonl_file(out / "verdicts.jsonl")}
        except AssayError as exc:
            raise pytest.UsageError(f"assay: {exc.message}") from None
        comparison = out / "comparison.json"
        if comparison.is_file() and self.baseline_dir is not None:
            from ..stats.paired import text_summary
            self.comparison_lines = [f"compared with the baseline {self.baseline_dir.name} (stats.py):"] + \
                text_summary(jsonio.read_json(comparison))

    def _gate_on_baseline(self, out: Path):
        """gate.py --baseline (auto: the compare rule's baseline, else the named run): closes on any
        gating case newly failing against it. No baseline to compare with is said, then the run is
        gated on its own."""
        base = "auto" if self.baseline == "auto" else str(self.baseline_dir or self.baseline)
        gated = call("gate", [out, "--baseline", base], needs=("yaml",))
        if gated.code != 2:
            return gated
        self.notes.append(f"--assay-baseline {base}: not gated on regressions "
                          f"({(gated.doc or {}).get('error')}); gated on this run alone")
        return call("gate", [out], needs=("yaml",))

    # ---------------------------------------------------------------- the outcome
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """A skipped case is listed by `-rs` under its own node id, not the plugin's `items.py:<line>`
        (which named no case, and folded every infra error with the same reason into one line)."""
        rep = yield
        if (rep.skipped and isinstance(item, AssayCase) and not hasattr(rep, "wasxfail")
                and isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3):
            rep.longrepr = (f"{item.parent.path}::{item.name}", None, rep.longrepr[2])
        return rep

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.gate_closed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.gate_lines:   # gated (no gate lines: nothing ran); --junitxml's report says it as gate.py --junit does
            from .junit import add_gate_testcase
            add_gate_testcase(self.config, closed=self.gate_closed, gate_lines=self.gate_lines,
                              run_dir=self.run_dir, where=self.suite_nodeid())

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not (self.gate_lines or self.notes or self.comparison_lines):
            return
        # no gate lines: no run was gated (every case deselected), which never reads as "open"
        title = "CLOSED" if self.gate_closed else "open" if self.gate_lines else "not gated (no case ran)"
        terminalreporter.section("assay gate: " + title, red=self.gate_closed,
                                 yellow=not self.gate_closed and not self.gate_lines,
                                 green=not self.gate_closed and bool(self.gate_lines))
        for line in self.notes:
            terminalreporter.write_line(show_controls(f"assay: {line}"))
        for line in self.comparison_lines + self.gate_lines:
            terminalreporter.write_line(show_controls(line))
        if self.run_dir is not None:
            terminalreporter.write_line(f"run dir: {self.run_dir}")

