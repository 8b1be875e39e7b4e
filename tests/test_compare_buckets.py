"""compare_runs.py on a second small app (tests/fakeapp.py on a real port, run by run_cases.py):
every bucket reached and no case in two; holdout ids never printed; k > 1 repeats; an older run
without case hashes; --baseline auto refusing with its reasons and choosing for run_cases; the
page inert and screenshotted in a real headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan, adapter
from helpers import run_script
from test_md_to_html import CHROMIUM_FLAGS, chromium_path

pytestmark = pytest.mark.slow

HOSTILE = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">"


class Desk:
    """The second app: answers by message, in one of two phases (base, candidate)."""

    def __init__(self) -> None:
        self.phase = "base"
        self.calls: dict[str, int] = {}

    def __call__(self, req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = (req.json or {}).get("message", "")
        self.calls[msg] = self.calls.get(msg, 0) + 1
        cand = self.phase == "candidate"
        if msg == "fix":
            return Reply(200, {"message": "FIXED now" if cand else "still broken"})
        if msg == "brk":
            return Reply(200, {"message": "nope, something else" if cand else "echo: brk"})
        if msg == "inf" and cand:
            return Reply(500, "down")
        if msg == "host":
            return Reply(200, {"message": HOSTILE if cand else "echo: host"})
        if msg == "flaky":  # k > 1: the candidate fails every second call
            return Reply(200, {"message": "echo: flaky" if not cand or self.calls[msg] % 2 else "lost"})
        if msg.startswith("h-"):   # holdout: the candidate breaks h-2
            return Reply(200, {"message": "wrong" if cand and msg == "h-2" else f"echo: {msg}"})
        return Reply(200, {"message": f"echo: {msg}"})


def must(text):
    return {"answer": {"must_contain": [text]}}


BASE_CASES = [case("s-pass", "hello", expect=must("echo: hello")),
              case("s-fixed", "fix", expect=must("FIXED")),
              case("s-broke", "brk", expect=must("echo: brk")),
              case("s-failing", "zzz", expect=must("never-there")),
              case("s-infra", "inf", expect=must("echo: inf")),
              case("s-unscored", "uns", expect={"result": {"scalar": 5}}),
              case("s-removed", "rem", expect=must("echo: rem")),
              case("s-edited", "ed", expect=must("echo: ed")),
              case("s-hostile", "host", expect=must("echo: host"))]


def cand_cases():
    out = [c for c in json.loads(json.dumps(BASE_CASES)) if c["id"] != "s-removed"]
    edited = next(c for c in out if c["id"] == "s-edited")
    edited["expect"]["answer"]["must_not_contain"] = ["forbidden"]
    return out + [case("s-added", "add", expect=must("echo: add"))]


def run(state: Path, app_url: str, cases: list, run_id: str, *extra, mode="smoke", k=1, split="smoke", **kw) -> Path:
    plan = make_plan(state, cases, app_url=app_url, run_id=run_id, mode=mode, k=k, selecting_split=split,
                     adapter_doc=adapter(app_url, result_from_response="data.value"), **kw)
    path = write_plan(state, plan, f"{run_id}.json")
    out = state / "reports" / run_id
    r = run_runner("--plan", path, "--out", out, "--progress", "never", *extra)
    assert r.rc == 0, r.stdout + r.stderr
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    state = make_state(tmp_path_factory.mktemp("desk"))
    desk = Desk()
    with FakeApp(desk) as app:
        base = run(state, app.url, BASE_CASES, "smoke-20261129T101500Z")
        desk.phase = "candidate"
        cand = run(state, app.url, cand_cases(), "smoke-20261129T101600Z")
    return state, base, cand


def compare(base, cand, out: Path, *extra) -> dict:
    r = run_script("compare_runs", base, cand, "-o", out, *extra)
    assert r.rc == 0, r.stdout + r.stderr
    return json.loads(out.read_text())


def test_every_bucket_is_reached_and_no_case_is_in_two(two_runs, tmp_path):
    _, base, cand = two_runs
    doc = compare(base, cand, tmp_path / "c.json")
    where = {}
    for bucket, pairs in doc["buckets"].items():
        for p in pairs:
            assert p["case_id"] not in where and p["bucket"] == bucket
            where[p["case_id"]] = bucket
    assert where == {"s-pass": "still_passing", "s-fixed": "newly_passing", "s-broke": "newly_failing",
                     "s-failing": "still_failing", "s-infra": "changed_unscored", "s-unscored": "still_unscored",
                     "s-removed": "only_in_base", "s-added": "only_in_candidate", "s-edited": "expectation_changed",
                     "s-hostile": "newly_failing"}
    assert set(doc["counts"]) == set(doc["buckets"]) and sum(doc["counts"].values()) == 10
    broke = next(p for p in doc["buckets"]["newly_failing"] if p["case_id"] == "s-broke")
    assert broke["layers_changed"] == [{"layer": "answer", "base": "pass", "candidate": "fail"}]
    assert broke["answer"]["first_line"] == "- echo: brk + nope, something else"
    assert broke["trajectory"]["changed"] is None   # no trace: unknown, never "unchanged"
    edited = doc["buckets"]["expectation_changed"][0]
    assert edited["expectation"]["keys"] == [{"key": "answer.must_not_contain", "base": "(absent)",
                                              "candidate": '["forbidden"]'}]
    failing = doc["buckets"]["still_failing"][0]
    assert failing["failing_layers"] == {"base": ["answer"], "candidate": ["answer"]}
    assert doc["headline"] == ("2 newly failing, 1 newly passing, 1 case edited, 1 newly (un)scored, 1 added, 1 removed, "
                               "1 still failing")
    # the paired statistics, once, over the pairs scored in both on an unchanged case
    assert doc["stats"]["n"] == 5 and doc["stats"]["fixed_by_candidate"] == 1
    assert doc["stats"]["broken_by_candidate"] == 2


def test_gate_on_the_second_app_names_regressions_and_keeps_edits_apart(two_runs, tmp_path):
    _, base, cand = two_runs
    r = run_script("gate", cand, "--baseline", base, "--no-verify")
    assert r.rc == 1
    first = next(line for line in r.stdout.splitlines() if line.startswith("  gate closed: "))
    assert first.startswith("  gate closed: 2 gating case(s) newly failing against smoke-20261129T101500Z")
    assert "s-broke (answer: - echo: brk + nope, something else)" in first


def test_compare_html_is_inert_and_screenshotted_in_chromium(two_runs, tmp_path):
    _, base, cand = two_runs
    page = tmp_path / "compare.html"
    compare(base, cand, tmp_path / "c.json", "--html", page)
    html = page.read_text()
    assert "<script" not in html and "default-src 'none'" in html
    dom = subprocess.run([chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=90).stdout
    assert "<title>assay compare: smoke-20261129T101500Z → smoke-20261129T101600Z</title>" in dom
    assert "PWNED" not in dom.split("<body", 1)[0]
    assert "&lt;script&gt;document.title='PWNED'&lt;/script&gt;" in dom and "<img" not in dom
    shot = tmp_path / "compare.png"
    subprocess.run([chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p2'}", f"--screenshot={shot}",
                    "--window-size=1200,1800", page.as_uri()], capture_output=True, timeout=90)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000


def test_holdout_ids_never_appear(tmp_path):
    state = make_state(tmp_path)
    desk = Desk()
    cases = [case(f"h-{i}", f"h-{i}", split=("holdout",), expect=must(f"echo: h-{i}")) for i in (1, 2, 3)]
    with FakeApp(desk) as app:
        base = run(state, app.url, cases, "holdout-20261129T101500Z", mode="holdout", split="holdout")
        desk.phase = "candidate"
        cand = run(state, app.url, cases, "holdout-20261129T101600Z", mode="holdout", split="holdout")
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    r = run_script("compare_runs", base, cand, "-o", out, "--html", page)
    assert r.rc == 0, r.stdout
    doc = json.loads(out.read_text())
    assert doc["holdout"]["pairs"] == 3 and doc["holdout"]["counts"] == {"newly_failing": 1, "still_passing": 2}
    assert sum(doc["counts"].values()) == 0
    gate = run_script("gate", cand, "--baseline", base, "--no-verify")
    report = run_script("draft_report", cand, "--baseline", base, "-o", "-")
    assert report.rc == 0, report.stdout
    assert "holdout (counts only): 1 newly_failing, 2 still_passing" in gate.stdout
    for text in (out.read_text(), page.read_text(), r.stdout, gate.stdout, report.stdout):
        assert not re.search(r"\bh-[123]\b", text)


def test_k_repeats_and_a_k_change_said_up_front(tmp_path):
    state = make_state(tmp_path)
    desk = Desk()
    cases = [case("r-flaky", "flaky", split=("full", "smoke"), expect=must("echo: flaky")),
             case("r-steady", "steady", split=("full", "smoke"), expect=must("echo: steady"))]
    with FakeApp(desk) as app:
        smoke = run(state, app.url, cases, "smoke-20261129T101500Z")
        base = run(state, app.url, cases, "regression-20261129T101500Z", mode="regression", k=3, split="full")
        desk.phase = "candidate"
        cand = run(state, app.url, cases, "regression-20261129T101600Z", mode="regression", k=3, split="full")
    doc = compare(base, cand, tmp_path / "c.json")
    flaky = doc["buckets"]["newly_failing"][0]
    assert flaky["case_id"] == "r-flaky" and flaky["repeats"]["base"] == ["pass", "pass", "pass"]
    assert "fail" in flaky["repeats"]["candidate"] and "pass" in flaky["repeats"]["candidate"]
    assert doc["notes"] == []
    mixed = compare(smoke, cand, tmp_path / "m.json")
    assert any(n.startswith("k differs: base k=1, candidate k=3: the folded verdicts") for n in mixed["notes"])
    assert any(n.startswith("mode differs") for n in mixed["notes"])


def test_a_run_without_case_hashes_is_compared_and_says_the_version_is_unknown(two_runs, tmp_path):
    import shutil
    state, base, cand = two_runs
    old = tmp_path / base.name
    shutil.copytree(base, old)
    manifest = json.loads((old / "manifest.yaml").read_text())
    for c in manifest["cases"]:
        c.pop("case_sha256")
    manifest.pop("suite_sha256"), manifest.pop("suite_parts_sha256")
    (old / "manifest.yaml").write_text(json.dumps(manifest))
    doc = compare(old, cand, tmp_path / "c.json")
    assert doc["notes"][0].startswith("case version unknown: the base run predates case hashes")
    edited = next(p for ps in doc["buckets"].values() for p in ps if p["case_id"] == "s-edited")
    assert edited["bucket"] == "still_passing" and edited["case"] == "unknown"
    assert "its converted case differs" in edited["case_note"]


def test_baseline_auto_refuses_naming_why_and_chooses_for_run_cases(tmp_path):
    state = make_state(tmp_path)
    desk = Desk()
    with FakeApp(desk) as app:
        failing = run(state, app.url, [case("a-1", "zzz", expect=must("never"))], "smoke-20261129T101500Z")
        r = run_script("compare_runs", "auto", failing)
        assert r.rc == 2 and "no earlier run of this series" in r.json["error"]
        # run_cases.py says it in its own flag (its --baseline is a pairwise rubric's, no comparison.json)
        plan = write_plan(state, make_plan(state, [case("a-1", "one", expect=must("echo: one"))], app_url=app.url,
                                           run_id="smoke-20261129T101550Z"), "refused.json")
        r = run_runner("--plan", plan, "--out", state / "reports" / "smoke-20261129T101550Z", "--baseline-verdicts", "auto")
        assert r.rc == 2 and "--baseline-verdicts auto found no baseline" in r.json["error"], r.stdout
        assert "pass --baseline-verdicts RUN_DIR/verdicts_for_stats.jsonl" in r.json["error"], r.json["error"]
        assert "--baseline RUN_DIR" not in r.json["error"], r.json["error"]
        ok_cases = [case("a-1", "one", expect=must("echo: one"))]
        later = run(state, app.url, ok_cases, "smoke-20261129T101600Z")
        r = run_script("gate", later, "--baseline", "auto")
        assert r.rc == 2, r.stdout
        assert ("none of its 1 earlier run(s) is complete with an open gate: smoke-20261129T101500Z: gate closed "
                "(1 gating failure(s): a-1") in r.json["error"]
        assert r.json["error"].endswith("or pin one in reports/baseline.json"), r.stdout   # the way out
        third = run(state, app.url, ok_cases, "smoke-20261129T101700Z", "--baseline-verdicts", "auto")
    manifest = json.loads((third / "manifest.yaml").read_text())
    assert manifest["baseline_verdicts"]["run_id"] == later.name
    assert json.loads((third / "comparison.json").read_text())["n"] == 1


def pii_runs(tmp_path, message: str) -> list:
    """A base run and a candidate run of one PII case (may_contain_pii: true), the candidate's app answering
    `message`: the two run dirs."""
    state = make_state(tmp_path)
    desk = Desk()
    cases = [case("p-1", "pii", expect=must("echo: pii"))]

    def handler(req):
        if req.method == "POST" and desk.phase == "candidate":
            return Reply(200, {"message": message})
        return desk(req)
    with FakeApp(handler) as app:
        doc_adapter = adapter(app.url, result_from_response="data.value")
        doc_adapter["data"]["may_contain_pii"] = True
        outs = []
        for phase, run_id in (("base", "smoke-20261129T101500Z"), ("candidate", "smoke-20261129T101600Z")):
            desk.phase = phase
            plan = make_plan(state, cases, app_url=app.url, run_id=run_id, adapter_doc=doc_adapter)
            out = state / "reports" / run_id
            assert run_runner("--plan", write_plan(state, plan, f"{run_id}.json"), "--out", out,
                              "--progress", "never").rc == 0
            outs.append(out)
    return outs


def test_pii_runs_are_compared_with_the_quoted_text_redacted(tmp_path):
    outs = pii_runs(tmp_path, "write to jane.doe@example.com or call +1 415 555 0100")
    page = tmp_path / "c.html"
    doc = compare(*outs, tmp_path / "c.json", "--html", page)
    pair = doc["buckets"]["newly_failing"][0]
    assert pair["answer"]["changed"] is True and doc["redaction"]["active"] and doc["redaction"]["redactions"] >= 2
    for text in ((tmp_path / "c.json").read_text(), page.read_text()):
        assert "jane.doe@example.com" not in text and "555 0100" not in text
        assert "[email redacted]" in text


def test_a_long_unbroken_answer_is_redacted_in_linear_time(tmp_path):
    """An app that answers with a long run of address characters (a base64 blob, 1 MB) and an e-mail after
    it: the redaction of the quoted text (report.redact, core.patterns.EMAIL) tried each position of the run
    again, quadratic in its length (80 KB: ~9 s, 1 MB: ~20 min); the comparison now ends as any other
    (the timeout is a hang's bound, never a speed bar) and the address is still redacted."""
    outs = pii_runs(tmp_path, "QUJD" * 250_000 + " then write to jane.doe@example.com")
    r = run_script("compare_runs", *outs, "-o", tmp_path / "c.json", timeout=300)
    assert r.rc == 0, r.stdout + r.stderr
    text = (tmp_path / "c.json").read_text(encoding="utf-8")
    assert "jane.doe@example.com" not in text and "[email redacted]" in text
    from assay.mine import redact as mined
    from assay.report import redact as reported
    assert reported.EMAIL_RE is mined.EMAIL   # one definition
