"""The gate's machine outputs besides --json: JUnit XML and the GitHub step summary.

JUnit: one testcase per non-holdout, non-canary case of verdicts.jsonl; canaries in their
own testsuite; holdout only as ONE aggregate testcase (its ids are sealed and never
written); the gate decision itself as a testcase, so CI shows the reasons.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..core.case_read import read_case_json
from ..core.errors import AssayError
from ..core.jsonio import atomic_write_bytes
from ..core.writer import clip
from .gate import GateResult
from .gate_case import CANARY, case_gate
from .facts import read_case_file
from .judged import judged_note
from .mdtext import code, esc, fenced
from .rundir import case_verdict, read_jsonl_file
from .failwords import judged_failures
from .sections import describe_layer

_SKIP_WORDS = {
    "skipped": "skipped, never sent",
    "unscored": "unscored: no layer could be scored",
    "infra_error": "infra error: no answer from the app",
    "infra_incomplete": "infra incomplete: some repeats got no answer",
}


def case_message(res: GateResult, row: dict) -> str:
    doc = case_verdict(res.run_dir, str(row.get("case_id"))) or {}
    layers = row.get("layers") if isinstance(row.get("layers"), dict) else {}
    verdict = row.get("verdict")
    if verdict == "fail":
        failed = [k for k, v in layers.items() if v == "fail"]
        msg = "failed layer(s): " + (", ".join(failed) or "not named")
        closes = case_gate(res.run_dir, row, doc)
        if closes.kind == CANARY:
            msg += f" (canary: {closes.why})"
        elif row.get("gating") is False:
            msg += " (gating: false, does not close the gate)"
        detail = [f"{k}: {describe_layer(k, v, judged_failures(res.run_dir, str(row.get('case_id'))) if k == 'judged' else None)}"
                  for k, v in (doc.get("layers") or {}).items() if isinstance(v, dict) and v.get("verdict") == "fail"]
        return msg + (" -- " + "; ".join(detail) if detail else "")
    detail = doc.get("skip_reason") or doc.get("infra_reason")
    if verdict == "unscored":
        reasons = [f"{k}: {v.get('reason')}" for k, v in (doc.get("layers") or {}).items()
                   if isinstance(v, dict) and v.get("verdict") in ("unscored", "error") and v.get("reason")]
        detail = "; ".join(reasons[:3]) or doc.get("unscored_reason")   # a hollow case: no layer says why
        if reasons:   # the named checks never ran; the case's other layers may well have been scored
            return f"unscored: a check it asserts could not be scored ({detail})"
    base = _SKIP_WORDS.get(str(verdict), f"verdict {verdict}")
    return f"{base} ({detail})" if detail else base


def failure_text(res: GateResult, row: dict, msg: str) -> str:
    """The failure body: the user's input, what was expected, what each layer saw, the answer."""
    cid = str(row.get("case_id"))
    doc = case_verdict(res.run_dir, cid) or {}
    lines = [msg]
    if doc.get("input_text"):
        lines.append(f"input: {doc['input_text']}")
    expect = read_case_json(res.run_dir, cid, "expect.json") if doc else None
    if isinstance(expect, dict) and expect:
        lines.append("expected: " + json.dumps(expect, ensure_ascii=False, sort_keys=True))
    answer = (read_case_file(res.run_dir, cid, "answer.txt") or "").strip() if doc else ""
    if answer:
        lines.append("actual: " + clip(answer, 804, ellipsis=" ..."))
    return "\n".join(lines)


def _testcase(parent: ET.Element, res: GateResult, row: dict, classname: str) -> tuple[int, int]:
    doc = case_verdict(res.run_dir, str(row.get("case_id"))) or {}
    name = str(row.get("case_id")) + (f": {doc['title']}" if isinstance(doc.get("title"), str) and doc["title"] else "")
    tc = ET.SubElement(parent, "testcase", name=name, classname=classname, time="0")
    # which judged verdicts gated (calibrated) and which did not (provisional), and why
    note = judged_note((doc.get("layers") or {}).get("judged"))
    bucket = ((res.comparison or {}).get("buckets") or {}).get(str(row.get("case_id")))
    if note or bucket:
        props = ET.SubElement(tc, "properties")
        if bucket:  # --baseline: the case's bucket against the baseline run
            ET.SubElement(props, "property", name="assay.bucket", value=bucket)
        if note:
            ET.SubElement(props, "property", name="assay.judged", value=note)
    counted = _outcome(tc, res, row)
    if note:
        ET.SubElement(tc, "system-out").text = note
    return counted


def _outcome(tc: ET.Element, res: GateResult, row: dict) -> tuple[int, int]:
    verdict = row.get("verdict")
    if verdict == "pass":
        return 0, 0
    msg = case_message(res, row)
    comparison = res.comparison or {}
    if verdict == "fail" and (comparison.get("buckets") or {}).get(str(row.get("case_id"))) == "newly_failing":
        first = (comparison.get("first_lines") or {}).get(str(row.get("case_id")))
        msg = f"NEWLY FAILING (passed in {comparison.get('base_run_id')}): {msg}" + (f" -- first change: {first}" if first else "")
    if verdict == "fail":
        ET.SubElement(tc, "failure", message=msg, type="fail").text = failure_text(res, row, msg)
        return 1, 0
    closes = case_gate(res.run_dir, row)
    if closes.closes:
        # a gating case that was not measured closed the gate (gate_case: a check that never ran, a
        # replay miss, a case the adapter could not send): a failure here, never a skip
        ET.SubElement(tc, "failure", message=msg, type=str(closes.kind)).text = failure_text(res, row, msg)
        return 1, 0
    ET.SubElement(tc, "skipped", message=msg)
    return 0, 1


def _suite(root: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name)


def _close(suite: ET.Element, tests: int, failures: int, skipped: int) -> None:
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))


# What XML 1.0 forbids (C0 controls but tab, LF and CR; surrogates; U+FFFE, U+FFFF): an app's
# answer may hold any of them, and one raw NUL makes the whole JUnit file unparseable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with each character XML 1.0 cannot carry written as a visible escape (\\x1b, \\ufffe)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def _xml_safe(root: ET.Element) -> None:
    for el in root.iter():
        if el.text:
            el.text = xml_text(el.text)
        if el.tail:
            el.tail = xml_text(el.tail)
        for key, value in el.attrib.items():
            el.attrib[key] = xml_text(value)


def junit_xml(res: GateResult) -> bytes:
    rows = read_jsonl_file(res.run_dir / "verdicts.jsonl")
    root = ET.Element("testsuites", name=f"assay {res.run_id}")
    totals = [0, 0, 0]
    cases_suite = _suite(root, f"{res.run_id}.cases")
    canary_suite = _suite(root, f"{res.run_id}.canaries")
    counts = {"cases": [0, 0, 0], "canaries": [0, 0, 0]}
    for row in rows:
        if row.get("holdout"):
            continue  # sealed: aggregate only, below
        key = "canaries" if row.get("canary") else "cases"
        suite = canary_suite if key == "canaries" else cases_suite
        f, sk = _testcase(suite, res, row, f"assay.{key}")
        c = counts[key]
        c[0] += 1; c[1] += f; c[2] += sk
    _close(cases_suite, *counts["cases"])
    _close(canary_suite, *counts["canaries"])
    for c in counts.values():
        totals = [a + b for a, b in zip(totals, c)]
    holdout = res.summary.get("holdout")
    if isinstance(holdout, dict) and isinstance(holdout.get("n"), int) and holdout["n"] > 0:
        hs = _suite(root, f"{res.run_id}.holdout")
        props = ET.SubElement(hs, "properties")
        for key in ("n", "passes", "failures", "gating_failures", "unscored", "skipped", "infra_errors"):
            ET.SubElement(props, "property", name=key, value=str(holdout.get(key)))
        tc = ET.SubElement(hs, "testcase", name="holdout (aggregate only)", classname="assay.holdout", time="0")
        hf = 0
        if isinstance(holdout.get("gating_failures"), int) and holdout["gating_failures"] > 0:
            msg = (f"{holdout['gating_failures']} of {holdout.get('n')} holdout cases failed "
                   f"(ids sealed; {holdout.get('passes')} pass)")
            ET.SubElement(tc, "failure", message=msg, type="fail").text = msg
            hf = 1
        _close(hs, 1, hf, 0)
        totals = [totals[0] + 1, totals[1] + hf, totals[2]]
    gs = _suite(root, f"{res.run_id}.gate")
    tc = ET.SubElement(gs, "testcase", name="gate", classname="assay.gate", time="0")
    if res.reasons:
        text = "\n".join(one_line(r) for r in res.reasons)
        ET.SubElement(tc, "failure", message=f"gate closed: {one_line(res.reasons[0])}", type="gate").text = text
    ET.SubElement(tc, "system-out").text = "\n".join(one_line(x) for x in res.lines)
    _close(gs, 1, 1 if res.reasons else 0, 0)
    totals = [totals[0] + 1, totals[1] + (1 if res.reasons else 0), totals[2]]
    _close(root, *totals)
    root.attrib.pop("skipped", None)  # not a testsuites attribute in the common schema
    _xml_safe(root)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(res: GateResult, path: str) -> None:
    target = Path(path)
    if not target.parent.is_dir():
        raise AssayError(f"--junit {path}: directory {target.parent} does not exist", 2)
    try:
        atomic_write_bytes(target, junit_xml(res))
    except OSError as exc:
        raise AssayError(f"--junit {path}: cannot write ({exc})", 2) from None


def write_junit_error(path: str, message: str) -> None:
    """--junit when the gate could not decide (exit 2, or a bug): a file whose one testcase is an <error> with the
    message, so a JUnit reader on a reused workspace never shows the last run's file as this one's.
    Best effort: a path that cannot be written is the refusal's own problem, said on stdout."""
    root = ET.Element("testsuites", name="assay gate")
    suite = _suite(root, "assay.gate")
    tc = ET.SubElement(suite, "testcase", name="gate", classname="assay.gate", time="0")
    ET.SubElement(tc, "error", message=f"gate not decided: {one_line(message)[:500]}", type="usage").text = message
    for el in (suite, root):
        el.set("tests", "1")
        el.set("failures", "0")
        el.set("errors", "1")
    _xml_safe(root)
    ET.indent(root)
    try:
        if Path(path).parent.is_dir():
            atomic_write_bytes(Path(path), ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
    except OSError:
        pass


def one_line(text: object) -> str:
    """A line of the gate's screen as one line: an app's CR/LF written as a visible \\n, so app text
    never starts a line of its own (a fake `...: PASS` or `gate open` under the real one)."""
    return str(text).replace("\r", "\\r").replace("\n", "\\n")


def _md_cell(value: object) -> str:
    return esc(value)


def _comparison_markdown(comparison: dict) -> list[str]:
    """--baseline: the buckets and the newly failing cases, every app-derived string escaped (a case's
    first change is the app's answer: an inline code span, never Markdown)."""
    summ = comparison.get("summary") if isinstance(comparison.get("summary"), dict) else None
    if not summ:
        return []
    out = [f"**Compared with {code(summ.get('base'))}: {esc(summ.get('headline'))}**", ""]
    if summ.get("red_baseline"):   # the baseline's own gate is closed (assay.verdict's words)
        out += [f"Note: {esc(summ['red_baseline'])}", ""]
    out += ["| bucket | cases |", "|---|---:|"]
    out += [f"| {esc(b)} | {esc(n)} |" for b, n in (summ.get("counts") or {}).items() if n]
    if summ.get("judge_flips"):
        out.append(f"| judge flips (apart) | {esc(summ['judge_flips'])} |")
    out.append("")
    regress = summ.get("newly_failing_gating") or []
    if regress:
        first = comparison.get("first_lines") or {}
        out.append("Newly failing:")
        out += [f"- {code(cid)}" + (f": {code(clip(first[cid], 200, ellipsis='…'))}" if first.get(cid) else "")
                for cid in regress[:20]]
        out.append("")
    removed = summ.get("removed_gating") or []
    if removed:   # a gating case deleted from the suite: named, failing there first
        named = ", ".join(f"{code(r.get('case_id'))} ({esc(r.get('base'))} there)"
                          for r in comparison.get("removed") or [] if isinstance(r, dict))
        more = len(removed) - len(comparison.get("removed") or [])
        out += [f"Gating cases removed since the baseline (no longer gated): {len(removed)}: {named}"
                + (f" and {more} more" if more > 0 else ""), ""]
    return out


def github_summary_markdown(res: GateResult) -> str:
    """The step summary. The decision is the heading, written by the gate alone; everything from the
    app (case ids, tool names, reasons, answers) is escaped Markdown text or a code span, so no app
    text renders as a heading, bold, a link, an image or raw HTML, and none can pass for the decision."""
    s = res.summary
    state = "✅ open" if res.open else "❌ closed"
    out = [f"## assay gate: {code(res.run_id)} {state}", ""]
    out += _comparison_markdown(res.comparison or {})  # --baseline: the buckets lead
    out += ["| n | pass | fail | gating fail | unscored | skipped | infra rate | crash rate |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def rate(v):
        return f"{v * 100:.1f}%" if isinstance(v, (int, float)) and not isinstance(v, bool) else "n/a"
    out.append("| " + " | ".join(_md_cell(x) for x in (
        s.get("n"), s.get("passes"), s.get("failures"), s.get("gating_failures"), s.get("unscored", 0),
        s.get("skipped", 0), rate(s.get("infra_rate")), rate(s.get("crash_rate")))) + " |")
    out.append("")
    if res.reasons:
        out.append("**Gate closed because:**")
        out += [f"- {esc(r)}" for r in res.reasons]
        out.append("")
    out.append(fenced("\n".join(one_line(x) for x in res.lines), ""))
    return "\n".join(out) + "\n"


def append_github_summary(res: GateResult) -> str:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        raise AssayError("--github-summary: $GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it in a "
                         "job step); drop the flag outside Actions", 2)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(github_summary_markdown(res))
    except OSError as exc:
        raise AssayError(f"--github-summary: cannot append to {path} ({exc})", 2) from None
    return path
