"""Where a report goes and whose it is (draft_report.py, md_to_html.py): its title names its run (or
a shard's run dir, `<run id>.shard-<I>`), and neither command writes over a file the runner wrote
nor into another run's directory, nor renders a PASS report of a run whose files changed since."""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import AssayError
from .facts import RunFacts

TITLE = "# assay report: "   # the report's first line, then its run id
OPEN_WORD = "PASS · gate open"   # the banner of a report drafted when the gate opened


def report_run_id(markdown: str) -> str | None:
    """The run id a drafted report names in its title (its first line), or None (not a drafted report)."""
    first = markdown.lstrip("\ufeff").split("\n", 1)[0].rstrip()
    if not first.startswith(TITLE):
        return None
    return re.sub(r"\\(.)", r"\1", first[len(TITLE):].strip()) or None


def report_holder(path: Path) -> str | None:
    """Whose report a directory holds, as a report's title names it: a run dir's run id, or a shard's
    run dir's name (`<run id>.shard-<I>`, run_cases.py --shard: a slice of the plan, not the run,
    whose report must never pass for the merged run's, nor the merged run's for the slice's); None
    for any other directory."""
    from ..core.statedir import RUN_FILES, run_dir_id
    from ..plan.shards import parse_shard_dir_name
    path = Path(path)
    if run_dir_id(path):
        return path.name
    if parse_shard_dir_name(path.name) and any((path / name).is_file() for name in RUN_FILES):
        return path.name
    return None


def holder_words(holder: str) -> str:
    """`run R`, or `shard I of run R` for a shard's run dir name."""
    from ..plan.shards import parse_shard_dir_name
    shard = parse_shard_dir_name(holder)
    return f"shard {shard[1]} of run {shard[0]}" if shard else f"run {holder}"


def report_subject(facts: RunFacts) -> str:
    """The title's run id: the run's, or for a shard's own run dir its dir name (report_holder)."""
    from ..plan.shards import shard_dir_name
    shard = facts.manifest.get("shard") if isinstance(facts.manifest, dict) else None
    index = shard.get("index") if isinstance(shard, dict) else None
    if isinstance(index, int) and not isinstance(index, bool) and index > 0:
        return shard_dir_name(facts.run_id, index)
    return facts.run_id


def not_a_report(path: Path) -> str:
    """What to pass md_to_html.py instead of a directory: the report.md in it, or the draft that makes
    one (a run dir, a shard's run dir or a merged run's); a shard's report is a slice's, so the
    merged run is named beside it."""
    holder = report_holder(path)
    report = Path(path) / "report.md"
    if holder is None:
        return f"{path}: a directory, not a Markdown report; pass the report file (e.g. a run dir's report.md)"
    way = (f"pass {report}" if report.is_file() else
           f"draft it first (draft_report.py {path}), then pass {report}")
    from ..plan.shards import parse_shard_dir_name
    shard = parse_shard_dir_name(holder)
    if shard:
        merged = Path(path).parent / shard[0]
        then = (f"draft the merged run (draft_report.py {merged})" if report_holder(merged) == shard[0] else
                f"merge the shards (merge_runs.py --plan PLAN --out {merged} <shard dirs>) and draft {merged}")
        way += f"; that is the report of {holder_words(holder)}, a slice of the plan, not the run: for the run's, {then}"
    return f"{path}: {holder_words(holder)}'s directory, not a Markdown report; {way}"


def refuse_stale_pass(markdown: str, run_dir: Path, path: Path) -> None:
    """A report that reads PASS, of the run dir it names, whose files no longer pass the runner's
    --verify (verdicts.jsonl or results.json edited after the report was drafted): that gate is
    closed now, so the page must not read PASS. AssayError(2) naming the problem and the re-draft."""
    from .gate_reasons import run_verify
    if f"**{OPEN_WORD}**" not in markdown or report_holder(run_dir) != report_run_id(markdown):
        return
    clean, detail = run_verify(run_dir)
    if not clean:
        raise AssayError(f"{path}: reads PASS, but run {run_dir.name}'s files changed since it was drafted and its gate "
                         f"is closed now ({detail}); restore the run's files or re-run, then re-draft "
                         f"(draft_report.py {run_dir} --force)", 2, path=str(path))


def refuse_run_target(target: Path, run_id: str | None, instead: str) -> None:
    """A report (report.md, report.html) written into a run directory: never over a file the runner
    wrote (the run would be gone), never into another run's directory (that run's report would read
    this run's verdict). AssayError(2) naming the file and what to pass instead."""
    from ..rundir.artifacts import RUNNER_FILES
    holder = report_holder(target.parent)   # a shard's run dir too: its files are a run's, its report the slice's
    if holder is None:
        return
    if target.name in RUNNER_FILES:
        raise AssayError(f"{target}: a file the runner wrote for {holder_words(holder)}; writing the report over it "
                         f"would destroy the run: pass {instead}", 2, path=str(target))
    if run_id is not None and holder != run_id:
        raise AssayError(f"{target}: inside {holder_words(holder)}'s directory, but the report is of "
                         f"{holder_words(run_id)}: it would read as {holder}'s report with {run_id}'s verdict; "
                         f"pass {instead}", 2, path=str(target))
