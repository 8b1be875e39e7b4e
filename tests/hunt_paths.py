"""The green-path hunt's paths (tests/test_green_path_hunt.py): how each surface's decision is read.

Every reader returns one decision, `{closed, reasons, closing}`: whether the surface says the gate
is closed, the reasons it shows, and `closing` = {case id: the surface's own words for that case}
for every case it shows as closing the gate (gate.py's and assay.api.gate()'s JUnit failures, the
viewer's failed cases with their failed layers, the pytest session's FAILED items with their
message, report.md's failure excerpts). Also here: planning a run, the object store the shards go through, and a tiny text edit.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers import ROOT, run_script


def junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """({name: failure message}, {name: skipped message}) of a JUnit file's testcases (a passing one is
    `<testcase ... />`: a regex over the text took the next case's failure for its own)."""
    failed, skipped = {}, {}
    for tc in ET.parse(path).iter("testcase"):
        if tc.find("failure") is not None:
            failed[tc.get("name")] = tc.find("failure").get("message") or ""
        elif tc.find("skipped") is not None:
            skipped[tc.get("name")] = tc.find("skipped").get("message") or ""
    return failed, skipped


def gate(run_dir: Path, tmp: Path, *extra: str) -> dict:
    """gate.py RUN --json --junit F: its decision, reasons, closing cases and skipped ones."""
    junit_file = tmp / f"junit-{len(list(tmp.glob('junit-*')))}.xml"
    # a check is kept at any size here (assay.rundir.checked), for the path that takes it; the check and
    # --baseline's comparison on two processes as at scale (rundir.parallel, compare.pair_all: api.gate,
    # in this process, walks the one-process check)
    r = run_script("gate", run_dir, "--json", "--junit", junit_file, *extra,
                   env={"ASSAY_CHECK_KEEP_ABOVE": "0", "ASSAY_CHECK_FORK_ABOVE": "0", "ASSAY_COMPARE_FORK_ABOVE": "0"})
    assert r.rc in (0, 1), (r.stdout, r.stderr)
    closing, skipped = junit(junit_file)
    return {"closed": r.rc == 1 and r.json["gate"] == "closed", "reasons": r.json["reasons"],
            "closing": closing, "skipped": skipped}


def gate_kept(run_dir: Path, tmp: Path) -> dict:
    """gate.py again, after a gate kept the completeness check's answer beside the run
    (assay.rundir.checked): the decision from the kept answer must be the full check's."""
    import os

    from assay.rundir.checked import known, memo_path
    os.environ["ASSAY_CHECK_KEEP_ABOVE"] = "0"
    try:
        assert memo_path(run_dir).is_file() and known(run_dir) is not None, f"no kept check beside {run_dir}"
    finally:
        del os.environ["ASSAY_CHECK_KEEP_ABOVE"]
    return gate(run_dir, tmp)


MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def report(run_dir: Path, tmp: Path, *extra: str) -> dict:
    """draft_report.py RUN [--baseline auto] (report.md's banner is the one decision, as gate.py with the
    same flags decides it): closed when the banner says FAIL, its reasons the banner's lines, and its
    closing cases the failure excerpts' headings (`failed <layers>`, after the excerpt's tags such as
    `canary`) and the cases it lists as not excerpted (each with its failed layers)."""
    out = tmp / f"report-{len(list(tmp.glob('report-*')))}.md"
    r = run_script("draft_report", run_dir, "-o", out, *extra,
                   env={"ASSAY_CHECK_KEEP_ABOVE": "0", "ASSAY_CHECK_FORK_ABOVE": "0", "ASSAY_COMPARE_FORK_ABOVE": "0"})
    assert r.rc == 0, (r.stdout, r.stderr)
    lines = [MD_ESCAPE.sub(r"\1", line) for line in out.read_text(encoding="utf-8").splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("> **"))
    banner = []
    for line in lines[start:]:
        if not line.startswith(">"):
            break
        banner.append(line)
    closing: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = re.match(r"### .*?`([^`]+)`.*: (failed .*)$", line)
        if m:
            tags = lines[i + 2] if i + 2 < len(lines) and lines[i + 2].startswith("*") else ""
            closing[m.group(1)] = (tags.strip("*") + "; " if tags else "") + m.group(2)
        elif line.startswith("Not excerpted: "):
            closing.update(dict(re.findall(r"`([^`]+)` \((failed [^)]*)\)", line)))
    return {"closed": "**FAIL · gate closed**" in banner[0], "reasons": [b[4:] for b in banner if b.startswith("> - ")],
            "closing": closing}


def api_gate(run_dir: Path, tmp: Path) -> dict:
    from assay import api
    junit_file = tmp / f"api-junit-{len(list(tmp.glob('api-junit-*')))}.xml"
    doc = api.gate(run_dir, junit=junit_file)
    closing, skipped = junit(junit_file)
    return {"closed": doc["gate"] == "closed", "reasons": doc["reasons"], "closing": closing, "skipped": skipped}


def viewer(state: Path, run_ids: list[str], env: dict[str, str] | None = None) -> dict[str, dict]:
    """{run id: decision} from one view.py over the state dir, as its run page asks: the gate API and
    the cases API (a failed case's words: `canary; ` when it is one, then its failed layers), and the
    gate the history page draws for the run (`history_gate`; None when the history does not list it)."""
    import os
    view = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "view.py"), str(state), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))

    def get(url: str) -> dict:
        with urllib.request.urlopen(url, timeout=120) as resp:
            return json.loads(resp.read())
    out = {}
    try:
        url = json.loads(view.stdout.readline())["url"]
        listed = {r["run_id"]: r.get("gate") for s in get(f"{url}api/history").get("series") or []
                  for r in s.get("runs") or []}   # the history page's points and rows (None: not listed there)
        for run_id in run_ids:
            doc = get(f"{url}api/run/{run_id}/gate?wait=5")
            while doc["gate"] == "checking":
                doc = get(f"{url}api/run/{run_id}/gate?wait=5")
            rows = get(f"{url}api/run/{run_id}/cases?size=1000")["cases"]
            out[run_id] = {"closed": doc["gate"] == "closed", "reasons": doc["reasons"], "verified": doc.get("verified"),
                           "history_gate": listed.get(run_id),
                           "closing": {r["case_id"]: ("canary; " if r.get("canary") else "") + "failed: "
                                       + ", ".join(k for k, v in (r.get("layers") or {}).items() if v == "fail")
                                       for r in rows if r.get("verdict") == "fail"}}
    finally:
        view.terminate()
        view.wait(30)
    return out


def history_page(state: Path, tmp: Path, env: dict[str, str] | None = None, *extra: str) -> dict[str, str]:
    """{run id: the gate cell of its row} in run_history.py's history.html (`closed: <reason>`, `open`): the
    page a person opens for the trend, which must name each run's one decision, never a green row alone
    (`extra`: `--store URL`, the runs published there)."""
    page = tmp / f"history-{len(list(tmp.glob('history-*.html')))}.html"
    r = run_script("run_history", state, "-o", page.with_suffix(".json"), "--html", page, *extra, env=env)
    assert r.rc == 0, r.stdout + r.stderr
    cells = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page.read_text(encoding="utf-8"), re.S):
        tds = re.findall(r"<td>(.*?)</td>", row, re.S)
        m = re.fullmatch(r"<code>(.+?)</code>", tds[0]) if len(tds) == 8 else None
        if m:   # a row of a series' runs table (run, pass rate, interval, scored, failures, infra, gate, checked)
            cells[m.group(1)] = re.sub(r"<[^>]+>", "", tds[6])
    return cells


def pytest_session(state: Path, cwd: Path, env: dict) -> dict:
    """`pytest --assay STATE -q -rA --junitxml ...`, live, as a user runs it: closed when the session fails,
    says `assay gate: CLOSED`, and its JUnit report's gate testcase (assay.gate/gate) fails with the same
    reasons (or, refused at collection, names why); FAILED items with their message."""
    report = cwd / "pytest-session.xml"
    report.unlink(missing_ok=True)
    session = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "--assay", str(state),
                              "-q", "-rA", "--junitxml", str(report)], cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=600)
    failed = {m.group(1): m.group(2) or "" for m in re.finditer(r"^FAILED \S+::(\S+?)(?: - (.*))?$",
                                                                session.stdout, re.M)}
    gate_lines = [line.strip()[len("gate closed: "):] for line in session.stdout.splitlines()
                  if line.strip().startswith("gate closed: ")]
    # refused at collection (make_plan's linter): the error's lines are what the session says
    refused = re.search(r"ERROR collecting[^\n]*\n(.*?)\n=+ short test summary", session.stdout, re.S)
    collection = refused.group(1).splitlines() if refused else []
    gate = [tc for tc in ET.parse(report).getroot().iter("testcase")
            if (tc.get("classname"), tc.get("name")) == ("assay.gate", "gate")] if report.is_file() else []
    failure = gate[0].find("failure") if len(gate) == 1 else None
    # the JUnit report tells the terminal's story: its failure's text starts with every reason, one a line
    junit_closed = failure is not None and (failure.text or "").split("\n\n")[0].splitlines() == gate_lines
    return {"closed": session.returncode != 0 and (("assay gate: CLOSED" in session.stdout and junit_closed)
                                                   or bool(collection)),
            "reasons": gate_lines + collection, "closing": failed, "stdout": session.stdout[-3000:]}


def error_layers(run_dir: Path) -> list[str]:
    """Every `error` layer of a run (what a scorer rejected), for an assertion's message."""
    out = []
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for name, layer in ((doc.get("verdict") or {}).get("layers") or {}).items():
            if isinstance(layer, dict) and layer.get("verdict") == "error":
                out.append(f"{doc.get('case_id')} {name}: {json.dumps(layer)[:400]}")
    return out


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def plan(state: Path, *extra: str, judge: bool = True, convert: bool = True) -> dict:
    """make_plan.py (after convert_suite.py when the suite may have changed since the last plan)."""
    work = state / "work"
    if convert:
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    # --judge: the example's rubrics judge the refund replies (as make demo does); no wait between attempts
    # (the case the broken app crashes on is sent three times in every live run: the default waits 1 s, 4 s)
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--backoff-s", "0,0", *(("--judge",) if judge else ()), *extra)
    assert r.rc == 0, r.stdout
    return r.json


def store_server():
    """One local S3-compatible server for every app's store path; None when moto is not installed."""
    from s3server import BUCKET, S3Server, have_moto
    if not have_moto():
        return None
    server = S3Server().start()
    server.client().create_bucket(Bucket=BUCKET)
    return server


def merged_from_store(state: Path, shard_dirs: list[Path], run_id: str, env: dict, tmp: Path,
                      server, prefix: str) -> Path | None:
    """The shards published to a local S3-compatible server (as pods that share no disk do) and
    merged back from it (into reports/, the plan's place), then moved to a second copy of the state
    dir (the local merge takes the run id's place next); None without the server (no moto)."""
    from s3server import BUCKET
    if server is None:
        return None
    other = tmp / f"store-side-{prefix}" / ".assay"
    shutil.copytree(state, other, ignore=shutil.ignore_patterns("reports", "cache", "work"))
    store_env = {**env, **server.env}
    for d in shard_dirs:
        r = run_script("publish_run", d, f"s3://{BUCKET}/{prefix}", env=store_env)
        assert r.rc == 0, r.stdout
    out = state / "reports" / run_id
    r = run_script("merge_runs", "--plan", state / "work" / "plan.json", "--out", out,
                   f"s3://{BUCKET}/{prefix}/{run_id}/", env=store_env)
    assert r.rc == 0, r.stdout
    (other / "reports").mkdir(parents=True)
    return Path(shutil.move(str(out), str(other / "reports" / run_id)))
