"""The run: pre-flight writes, the scheduler (canaries first, alone; then up to
max_concurrency cases in flight), aborts, resume, finalize and the exit code.

Workers only append their own case's line to the case journal (core.casestore); this thread
owns every other run-level file, so the bookkeeping needs no locks and the derived files are
always in plan order.
"""

from __future__ import annotations

import sys
from concurrent.futures import Future, ThreadPoolExecutor
from queue import Empty, SimpleQueue

from ..core import casestore, writer
from ..core.errors import AssayError
from ..core.ids import utc_now_iso
from ..core.jsonio import read_json
from ..core.vocab import FAIL, INFRA_VERDICTS, SKIPPED
from ..rundir import derived
from . import holdout_ledger, judged_reason, preflight
from .casework import CaseWorker
from ..invoke.outcome import RATE_LIMITED_PREFIX
from .limiter import AppSlots
from ..rundir.completeness import check_run_dir
from .journal_repair import keep_only
from ..stats.counts import summarize
from ..score.tool_names import declared_tools
from ..traces.collect import note_late_spans
from .layers import ScoreContext
from .canary import failed_canary_lines
from .progress import Progress
from .runlog import RunLog, case_ref, repair

MIN_ATTEMPTED_FOR_INFRA_ABORT = 8
TRACE_SETUP_CASES = 2  # traced cases whose trace never came, none complete, before the setup is checked


def exit_code_for(status: str, missing: list, scorer_errors: int, setup_error: str | None = None) -> int:
    """Precedence: 6 (incomplete), then 3 (a trace setup that can deliver no span), then 4/5
    (aborts), then 7 (scorer errors), else 0."""
    if missing:
        return 6
    if setup_error:
        return 3
    if status == "aborted_canary":
        return 4
    if status == "aborted_infra":
        return 5
    if scorer_errors:
        return 7
    return 0


EXIT_MESSAGES = {
    4: "a canary failed: the run stopped; quote no number from it (fix the drift, then start a new run id)",
    5: "the infra rate went above execution.infra_rate_abort: the run stopped; re-run when the app is healthy",
    6: "the completeness check failed: see missing_artifacts (run --resume, or re-run)",
    7: "a scorer rejected its input: see summary.scorer_errors and the `error` layers; numbers are not quotable",
}


class Run:
    def __init__(self, setup: preflight.RunSetup, *, resume: bool, progress: str, stderr=None,
                 order: str | None = None, fail_fast: int | None = None) -> None:
        self.s = setup
        self.plan = setup.plan            # core.runplan.RunPlan
        self.cases = self.plan.cases      # a CaseTable: a case is parsed when a worker takes it
        self.resume = resume
        self.progress_mode = progress
        self.stderr = stderr or sys.stderr
        self.status = "running"
        self.order_requested = order
        self.fail_fast = fail_fast
        self.gating_failed = 0   # confirmed gating failures of this invocation (--fail-fast counts these)

    # ------------------------------------------------------------ pre-flight writes (steps 6-9)
    def _start(self) -> None:
        out = self.s.out
        reports = out.parent
        reports.mkdir(parents=True, exist_ok=True)
        if self.resume:
            self.manifest = preflight.same_revision(read_json(out / "manifest.yaml"), self.s.health)
            self.derived = derived.DerivedFiles(out, self.manifest, len(self.cases), self.s.state)
            self._scrub_partial()
            self.journal = casestore.Journal(out)
            repair(out / "run.log")
            self.runlog = RunLog(out / "run.log")
            self.runlog.event("preflight", resume=True, health=self.s.health, traces=self.s.trace.manifest(),
                              order=self.order_doc, fail_fast=self.fail_fast)
        else:
            preflight.write_gitignore(reports, self.plan.adapter)
            # manifest.yaml is the run dir's first file: a kill before it leaves at most an empty
            # dir, which --resume starts over (run_paths.unstarted_debris)
            out.mkdir(exist_ok=True)
            started = utc_now_iso()
            self.manifest = preflight.build_manifest(self.s, started)
            self.manifest["order"] = self.order_doc
            self.manifest["fail_fast"] = self.fail_fast
            preflight.write_manifest(out, self.manifest)
            self.journal = casestore.Journal(out)
            preflight.write_running_results(out, self.plan, started, summarize(
                [], status="running", missing_artifacts=[]))
            self.runlog = RunLog(out / "run.log")
            self.runlog.event("preflight", resume=False, health=self.s.health, traces=self.s.trace.manifest(),
                              max_concurrency=self.s.max_concurrency, cases=len(self.cases), k=self.plan.k)
        # the run reads the manifest's blocks, never its per-case rows (those are on disk): not kept
        self.manifest = {key: value for key, value in self.manifest.items() if key != "cases"}
        if self.s.ledger is not None:
            holdout_ledger.append_ledger(self.s.ledger, self.plan, self.stderr, note=self.s.ledger_note)

    def _scrub_partial(self) -> set[int]:
        """--resume: keep the journal's committed lines of plan cases (the first one per case);
        cut a torn tail, drop any other line, delete stray temp files. Kept records go to self.derived."""
        out = self.s.out
        self.kept: set[int] = set()
        if (out / casestore.LEGACY_DIR).is_dir() and not (out / casestore.JOURNAL).exists():
            raise AssayError(f"--resume: {out} was written by an older assay (one cases/<id>/ directory per "
                             "case); this build continues only runs it started (the case journal, cases.jsonl). "
                             "Its results stay readable (gate.py, --verify, view.py); start a new run id to run "
                             "the rest", 2, key="--resume")
        store = casestore.scan(out)
        drop = bool(store.garbled or store.duplicates)
        for cid, rec in store.verdicts():
            index = self.cases.index_of(cid)
            if index is not None and rec.get("case_id") == cid and index not in self.kept:
                self.kept.add(index)
                self.derived.add(index, rec)
            else:
                drop = True
        if len(self.kept) != len(store.index):
            drop = True   # a line whose verdict does not parse: the case runs again
        # rare (a hand edit, a line for a case the plan no longer has): rewrite the kept lines;
        # else only cut a torn tail (a kill mid-append: the partial last line was never a case)
        keep_only(store, {self.cases.ids[i] for i in self.kept} if drop else None)
        for p in out.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                p.unlink()
        return self.kept

    # ------------------------------------------------------------ the run
    def _choose_order(self) -> None:
        from . import order
        used, runs, why = order.choose(self.order_requested, self.plan, self.s.out.parent)
        self.order_used, self._history = used, (order.case_history(runs) if runs else {})
        self.order_doc = {"used": used, "why": why, "runs_read": len(runs)}

    def _ordered(self, indexes: list[int]) -> list[int]:
        if self.order_used != "history":
            return indexes
        from .order import history_order
        ordered, counts = history_order(self.cases.heads(), indexes, self._history)
        self.order_doc["ranks"] = counts
        return ordered

    def execute(self) -> tuple[int, dict]:
        self._choose_order()
        self._start()
        kept = getattr(self, "kept", set())
        if not self.resume:
            self.derived = derived.DerivedFiles(self.s.out, self.manifest, len(self.cases), self.s.state)
        # The infra abort looks at this invocation's cases only, so a --resume after the
        # service recovered is not stopped by the infra verdicts it kept.
        self.attempted = self.infra = self.infra_rate_limited = 0
        self.worker = CaseWorker(
            out=self.s.out, k=self.plan.k, invoker=self.s.invoker, adapter=self.plan.adapter,
            execution=self.s.execution, score_ctx=self._score_ctx(), trace=self.s.trace, safety=self.s.safety,
            runlog=self.runlog, app_slots=self._app_slots(), conversation=self.s.conversation, judge=self.s.judge,
            replay=self.s.replay, simulator=self.s.simulator, journal=self.journal, env=self.s.env)
        if self.s.simulator is not None:
            self.s.simulator.scrub = writer.redact_text
            self.s.simulator.on_retry = lambda **kw: self.runlog.event("retry", simulator=True, **kw)
        if self.s.judge is not None:
            self.s.judge.scrub = writer.redact_text
            self.s.judge.on_retry = lambda **kw: self.runlog.event("retry", judge=True, **kw)
        todo = [i for i in range(len(self.cases)) if i not in kept]
        self.progress = Progress(len(todo), self.progress_mode, self.stderr,
                                 canaries=sum(1 for i in todo if self.cases.canary(i)))
        canaries = [i for i in todo if self.cases.canary(i)]
        canary_set = set(canaries)
        others = self._ordered([i for i in todo if i not in canary_set])
        self.runlog.event("order", **self.order_doc)
        try:
            if self._canary_failed():
                self._abort("aborted_canary", "a kept canary failed; nothing invoked")
            else:
                self._schedule(canaries)
                if self._canary_failed():
                    self._abort("aborted_canary", "a canary failed")
                elif not self._infra_abort_due():
                    self._schedule(others)
                    self._stopped_early()
                else:
                    self._abort("aborted_infra", "infra rate above infra_rate_abort")
        finally:
            self.progress.finish()
            if self.s.judge is not None:
                self.s.judge.close()
        try:
            return self._finalize()
        finally:   # in-process (the pytest session) a spill file left to the collector warns: -W error, an error
            self.derived.close()

    def _app_slots(self) -> AppSlots:
        ex = self.s.execution

        def log_change(event: str, fields: dict) -> None:
            self.runlog.event("concurrency", change=event, **fields)
        self.slots = AppSlots(self.s.max_concurrency, adaptive=bool(ex.get("adaptive", True)),
                              start=ex.get("start_concurrency"), on_change=log_change)
        return self.slots

    def _score_ctx(self) -> ScoreContext:
        return ScoreContext(invocation=self.plan.invocation, matrix=self.plan.capability_matrix, scoring=self.s.scoring,
                            judged_reason=judged_reason.judged_reason_fn(self.plan, self.s.state),
                            traces_collected=self.s.trace.collected, traceless_reason=self.s.trace.reason,
                            declared_tools=frozenset(declared_tools(self.plan.adapter)))

    def _canary_failed(self) -> bool:
        return self.derived.canary_failed

    def _count(self, record: dict) -> None:
        """Running totals for the infra abort: O(1) per finished case."""
        if record.get("verdict") != SKIPPED:
            self.attempted += 1
        if record.get("verdict") in INFRA_VERDICTS:
            reason = str(record.get("infra_reason") or "")
            if reason.startswith(RATE_LIMITED_PREFIX):
                self.infra_rate_limited += 1
            else:
                self.infra += 1

    def _infra_abort_due(self) -> bool:
        """Above infra_rate_abort. Cases that spent their rate-limit budget count only once the app
        has made no progress (no answer that was not rate limited) for a whole budget: a run
        that is slow because the app throttles it is not an unhealthy run."""
        if not self.s.calls_app:
            return False
        infra = self.infra
        budget = self.s.execution.get("rate_limit_wait_s")
        if self.infra_rate_limited and (budget is None or self.slots.seconds_since_progress() > float(budget)):
            infra += self.infra_rate_limited
        return (self.attempted >= MIN_ATTEMPTED_FOR_INFRA_ABORT
                and infra / self.attempted > float(self.s.execution["infra_rate_abort"]))

    def _check_trace_setup(self, record: dict) -> None:
        """Stop the run (exit 3) when traces cannot arrive at all (the source's setup_problem: no span
        file, no export, exports refused or misrouted, or none under a case's id), instead of letting every case
        wait max_wait_s for a trace that never comes, then reading as an unhealthy app."""
        trace = record.get("trace") if isinstance(record.get("trace"), dict) else {}
        if trace.get("status") == "ok":
            self.traces_ok = True
        if record.get("verdict") != "infra_incomplete" or getattr(self, "traces_ok", False):
            return
        self.traces_missing = getattr(self, "traces_missing", 0) + 1
        check = getattr(self.s.trace.source_obj, "setup_problem", None)
        if self.traces_missing >= TRACE_SETUP_CASES and callable(check) and self.status == "running":
            problem = check()
            if problem:
                self.setup_error = f"pre-flight (traces): {problem}"
                self._abort("aborted_infra", self.setup_error)

    def _stopped_early(self) -> None:
        """After a --fail-fast stop: the cases never started are `not run`, counted in results.json
        `stopped_early` (never passed). A stop on the very last case left nothing unrun: a whole run."""
        if self.status != "stopped_fail_fast":
            return
        not_run = len(self.cases) - self.derived.count
        if not not_run:
            self.status = "running"   # run.log: the abort event, then a finalize with status ok
            return
        self.stopped = {"fail_fast": self.fail_fast, "gating_failures": self.gating_failed, "not_run": not_run}
        self.derived.extra["stopped_early"] = self.stopped

    def _abort(self, status: str, reason: str) -> None:
        if self.status == "running":
            self.status = status
            self.runlog.event("abort", status=status, reason=reason)

    def _schedule(self, indexes: list[int]) -> None:
        if not indexes:
            return
        limit = self.s.max_concurrency
        # The worker's app slots keep at most `limit` requests at the app. Two workers more than
        # slots let a case be scored and written while the next requests are already out (a
        # worker holding its slot through scoring left ~10 % of the slots idle at c=16); more
        # than two only adds lock contention on a 0 ms app.
        # A few cases stay queued beyond the running ones so a worker never idles while this
        # thread does bookkeeping; queued cases that have not started are cancelled on abort
        # ("stop starting cases, let in-flight ones finish").
        # At max_concurrency 1 the run stays strictly serial, in run order (plan order, or the
        # history order of --order history): a user who asks for
        # one request at a time gets requests in that order.
        workers = 1 if limit == 1 else limit + 2
        window = workers * 2
        queue = iter(indexes)
        inflight: dict[Future, int] = {}
        # Finished futures arrive on a queue (a done-callback), not through wait(): wait() takes
        # and drops a waiter on every in-flight future per completion, O(window) lock work per
        # case on the one thread that also does all the bookkeeping.
        finished: SimpleQueue = SimpleQueue()
        from .layers import warm_scorers
        warm_scorers(self.s.plan.cases, judged=self.s.judge is not None)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="assay-case") as pool:
            def submit_next() -> bool:
                i = next(queue, None)
                if i is None:
                    return False
                fut = pool.submit(self.worker.run, self.cases[i], i)
                inflight[fut] = i
                fut.add_done_callback(finished.put)
                return True
            while len(inflight) < window and self.status == "running" and submit_next():
                pass
            try:
                self._drain(inflight, finished, submit_next, window)
            except BaseException:
                for fut in list(inflight):   # a worker raised (a full disk, no descriptor left): start no more
                    fut.cancel()
                raise

    def _drain(self, inflight: dict, finished: SimpleQueue, submit_next, window: int) -> None:
        """Hand finished cases to _on_done and keep the window full, until nothing is in flight."""
        while inflight:
            done = [finished.get()]
            while True:
                try:
                    done.append(finished.get_nowait())
                except Empty:
                    break
            for fut in sorted(done, key=lambda f: inflight[f]):
                i = inflight.pop(fut)
                if not fut.cancelled():
                    self._on_done(i, fut.result())
            if self.status == "running" and self._infra_abort_due():
                self._abort("aborted_infra", "infra rate above infra_rate_abort")
            if self.status != "running":
                for fut in list(inflight):
                    fut.cancel()  # only succeeds for cases that have not started
            while len(inflight) < window and self.status == "running" and submit_next():
                pass

    def _on_done(self, index: int, record: dict) -> None:
        self.derived.add(index, record)
        self._count(record)
        self._check_trace_setup(record)
        self.runlog.event("case_done", **case_ref(self.cases.heads()[index], index), verdict=record["verdict"])
        if record.get("verdict") == FAIL:
            self.progress.failed(record)
            if not record.get("canary") and record.get("gating", True) is not False:
                self.gating_failed += 1
                if self.fail_fast is not None and self.gating_failed >= self.fail_fast:
                    self._abort("stopped_fail_fast", f"{self.gating_failed} gating failure(s): --fail-fast "
                                f"{self.fail_fast}; cases not started are not run")
        self.progress.update(record["verdict"], record.get("latency_ms"))
        if self.derived.due():
            self.journal.sync()   # the derived files never count a case the journal could lose
            self.derived.refresh()

    # ------------------------------------------------------------ finalize
    def _finalize(self) -> tuple[int, dict]:
        out = self.s.out
        records = self.derived.ordered()
        final_status = "ok" if self.status == "running" else self.status
        self.journal.close()
        note_late_spans(self.s.trace, self.derived.extra, self.runlog)   # spans after their case was scored
        reports = self._write_reports(records)
        self.derived.refresh(status="running")
        # Each finished case's record is the one this process wrote as its journal line (or read
        # from it on --resume): the check lists the journal instead of re-parsing every record.
        known = derived.Known(self.derived, self.cases.index_of)
        problems, _, _ = check_run_dir(out, status=final_status, schemas=False, known=known,
                                       written=dict(self.derived.written, **reports))
        status = "incomplete" if problems else final_status
        summary_errors = self.derived.tally.scorer_errors
        setup_error = getattr(self, "setup_error", None)
        code = exit_code_for(final_status, problems, summary_errors, setup_error)
        self.derived.refresh(status=status, missing=problems, exit_code=code, finished_at=utc_now_iso(),
                             results_only=True)
        # In flight, rate limiting: run.log, not results.json (timing; results.json stays the same for the same answers)
        self.runlog.event("throughput", **self.slots.summary())
        self.runlog.event("finalize", status=status, exit_code=code, missing_artifacts=len(problems))
        self.runlog.close()
        result = {"run_id": self.plan.run_id, "status": status, "exit_code": code, "out": str(out),
                  "order": self.order_doc["used"], **({"notes": [self.s.ledger_note]} if self.s.ledger_note else {})}
        if getattr(self, "stopped", None):
            from ..stats.counts import stopped_line
            result["stopped_early"] = dict(self.stopped, message=stopped_line(self.stopped))
        if code:
            message = setup_error if code == 3 else EXIT_MESSAGES[code]
            if code == 4:  # say what the canary got (401/403 named as authentication), not just "drift"
                why = failed_canary_lines(out, self.derived.canaries, self.plan.invocation.get("auth"))
                message = "; ".join(["a canary failed: the run stopped; quote no number from it"] + why) + \
                    " (fix that, then start a new run id)"
            raise AssayError(message, code, **result, missing_artifacts=problems, scorer_errors=summary_errors)
        return code, result

    def _write_reports(self, records) -> dict[str, str]:
        return derived.write_run_reports(self.s.out, records, k=self.plan.k, oos_route=self.s.scoring.get("oos_route"),
                                         baseline=self.s.baseline, routing=self.derived.routing)
