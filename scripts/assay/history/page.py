"""history.html: the run history as one self-contained, inert page (no JavaScript, no network).

The same stylesheet and Content-Security-Policy as report.html; the trend charts (pass rate with its
95 % interval, the app's cost per traced case, p95 latency) are inline SVG (history.page_charts).
"""

from __future__ import annotations

import html

from .page_charts import CSS as CHARTS_CSS, NOT_VERIFIED, _pct, charts

GLYPH = {"pass": "✓", "fail": "✗", None: "·"}


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _gate_cell(r: dict) -> str:
    """The one decision's words for a run (run_history.py hands them in): a closed gate with its first
    reason, so a row whose scored cases all passed never reads as a pass when the gate stayed shut."""
    if not r.get("gate"):
        return "—"
    reasons = r.get("gate_reasons") or []
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    if r["gate"] == "closed":
        return f"<strong>closed</strong>: {_e(reasons[0]) if reasons else ''}{more}"
    return _e(r["gate"])


def render(doc: dict, *, css: str, title: str = "assay run history") -> str:
    """`css`: the report's stylesheet (assay.report.html_style.CSS), passed in so history
    does not import report (report's gate imports history.cost)."""
    body = [f"<h1>{_e(title)}</h1>"]
    ex = doc.get("excluded_runs") or []
    used, checked = doc.get("runs_used") or 0, doc.get("runs_verified") or 0
    body.append(f"<p>Runs used: {used} ({checked} checked by run_cases.py --verify, {used - checked} not verified: "
                "hollow points, marked in the tables) · excluded: " + f"{len(ex)}.</p>")
    body.append(f"<h2>Excluded runs ({len(ex)})</h2>")
    if ex:
        body.append("<table><thead><tr><th>run</th><th>why it does not count</th></tr></thead><tbody>")
        body += [f"<tr><td><code>{_e(r['run_id'])}</code></td><td>{_e(r['reason'])}</td></tr>" for r in ex]
        body.append("</tbody></table>")
    else:
        body.append("<p>none</p>")
    for key, title, source, cell in (
            ("rescored_runs", "Rescored runs ({n}): not series points, not in drift", "rescored from",
             lambda r: f"<code>{_e(r['rescored_from'])}</code>"),
            ("replayed_runs", "Replayed runs ({n}): the app was not called; not series points, not in drift",
             "where its answers came from", lambda r: _e(r["replayed"]))):
        apart = doc.get(key) or []   # runs kept out of every trend, each with where its verdicts came from
        if apart:
            body.append(f"<h2>{title.format(n=len(apart))}</h2><table><thead><tr><th>run</th><th>{source}</th>"
                        "<th>pass rate</th><th>scored</th></tr></thead><tbody>")
            body += [f"<tr><td><code>{_e(r['run_id'])}</code></td><td>{cell(r)}</td>"
                     f"<td>{_pct(r.get('pass_rate'))}</td><td>{_e(r.get('scored'))}</td></tr>" for r in apart]
            body.append("</tbody></table>")
    if doc.get("drift_flagged"):
        body.append("<p><strong>Drift flagged:</strong> " + ", ".join(_e(s) for s in doc["drift_flagged"]) + "</p>")
    for s in doc.get("series") or []:
        body.append(f"<h2>{_e(s['name'])}</h2>")
        if s.get("started_by"):
            body.append(f"<p>New series: {_e(s['started_by'])}.</p>")
        body.append(charts(s["runs"], doc.get("cost_words")))
        d = s.get("drift") or {}
        body.append(f"<p>Drift: <strong>{'FLAGGED' if d.get('flagged') else 'not flagged'}</strong> — "
                    f"{_e(d.get('reason') or '')} ({_e(d.get('test'))}).</p>")
        body.append("<table><thead><tr><th>run</th><th>pass rate</th><th>95 % interval</th><th>scored</th>"
                    "<th>gating failures</th><th>infra rate</th><th>gate</th><th>checked</th></tr></thead><tbody>")
        for r in s["runs"]:
            iv = r.get("interval")
            body.append(f"<tr><td><code>{_e(r['run_id'])}</code></td><td>{_pct(r.get('pass_rate'))}</td>"
                        f"<td>{'—' if not iv else _pct(iv[0]) + ' – ' + _pct(iv[1])}</td><td>{r['scored']}</td>"
                        f"<td>{r['gating_failures']}</td><td>{_pct(r.get('infra_rate'))}</td>"
                        f"<td>{_gate_cell(r)}</td><td>{'--verify clean' if r.get('verified', True) else NOT_VERIFIED}"
                        "</td></tr>")
        body.append("</tbody></table>")
        if s.get("holdout"):
            body.append(f"<p><em>{_e(s.get('note'))}</em></p>")
        elif s.get("flaky"):
            body.append(f"<h3>Flaky cases ({len(s['flaky'])})</h3><table><thead><tr><th>case</th><th>flips</th>"
                        "<th>verdicts, oldest first</th><th>repeats disagreed in</th></tr></thead><tbody>")
            for f in s["flaky"][:50]:
                seq = " ".join(GLYPH.get(v, "·") for v in f["sequence"])
                split = len(f.get("repeats_disagreed_in") or [])
                body.append(f"<tr><td><code>{_e(f['case_id'])}</code></td><td>{f['flips']}</td><td>{_e(seq)}</td>"
                            f"<td>{split} run(s)</td></tr>")
            body.append("</tbody></table>")
        else:
            body.append("<p>No flaky cases in this series (a case whose repeats disagreed in a run, or that flipped "
                        "and flipped back).</p>")
        if s.get("changed"):
            body.append(f"<h3>Regressions and fixes: changed with the app and stayed ({len(s['changed'])})</h3>"
                        "<table><thead><tr><th>case</th><th>regression or fix</th><th>since run</th>"
                        "<th>verdicts, oldest first</th></tr></thead><tbody>")
            body += [f"<tr><td><code>{_e(c['case_id'])}</code></td><td>{_e(c['kind'])}</td>"
                     f"<td><code>{_e(c['since_run'])}</code></td>"
                     f"<td>{_e(' '.join(GLYPH.get(v, '·') for v in c['sequence']))}{_split_note(c)}</td></tr>"
                     for c in s["changed"][:50]]
            body.append("</tbody></table>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light dark\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            f"<title>{_e(title)}</title>\n<style>\n{css}{CHARTS_CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def _split_note(change: dict) -> str:
    """A change whose repeats split as it happened (assay.history.flaky._settled_change) says in which run."""
    split = change.get("repeats_disagreed_in") or []
    return f" (its repeats split in <code>{_e(split[0])}</code> as it changed)" if split else ""
