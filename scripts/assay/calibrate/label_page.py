"""The labelling page: one self-contained HTML file (inline CSS and JS, no network, no
external scripts or fonts; a Content-Security-Policy forbids any fetch). Every text from
the app or the judge is inserted with textContent, so an answer holding HTML stays text.

The person labels blind: the judge's verdict, evidence and reason are not on the screen, nor in the
page's text or DOM in plain form, until the person has labelled the item and asks for them (v); a
label given then stands (p / f / s refuse on that item), so no label is given with the judge's answer
in mind. Which items are canaries, and their expected labels, are sealed the same way. Sealed is
encoded, not encrypted: the page must read it back after the label and for the export, so a person
who decodes the page's source on purpose can read it.

A long answer (or baseline answer) shows its first FIRST_SCREEN characters, the count of the rest, and a
control (r, or the button) that shows the rest in place, as text; a label given before the rest of its
answer was shown is exported with `saw_whole_answer: false` (score_agreement does not count it), one
given after with `saw_whole_answer: true`; an answer that fits on the first screen writes neither.

Keys: p / f label pass / fail, s skip, v show the judge's view of a labelled item, r show the rest of a
long answer, c write a critique
(Esc leaves the box), j / k or the arrows move, e export.
The export is the annotation JSONL (wave2 §6), shown in a box to copy and offered as a
download; progress is kept in the browser's localStorage under the batch id. Two tabs of one page
share it: a save merges with what is stored, and the storage event of the other tab's save merges
again (per item the latest change; a label given after its judge's view was seen stands), so neither
tab saves over labels the other gave a moment before. A held label key labels the item shown once, never the unseen
items after it (its auto-repeats are ignored).
"""

from __future__ import annotations

import base64
import html
import json
import re
import secrets
from typing import Any

from ..core.visible import show_invisible_in

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'; connect-src 'none'")

STYLE = """
:root{--fg:#1d232b;--bg:#fff;--mut:#5b6570;--line:#d8dde3;--pass:#1a7f37;--fail:#cf222e;--unk:#9a6700;--acc:#0b5cad}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ee;--bg:#14171b;--mut:#9aa5b1;--line:#30363d;--acc:#58a6ff}}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);padding:.6rem 1rem;display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
main{max-width:980px;margin:0 auto;padding:1rem}
h1{font-size:1.05rem;margin:0}h2{font-size:.95rem;margin:1.1rem 0 .3rem;color:var(--mut);text-transform:uppercase;letter-spacing:.04em}
pre{white-space:pre-wrap;word-break:break-word;background:rgba(127,127,127,.08);border:1px solid var(--line);border-radius:6px;padding:.6rem;margin:0;font:13px/1.45 ui-monospace,Menlo,Consolas,monospace}
.v-pass{color:var(--pass);font-weight:600}.v-fail{color:var(--fail);font-weight:600}.v-unknown{color:var(--unk);font-weight:600}
.crit{font-size:1.05rem;font-weight:600;border-left:4px solid var(--acc);padding-left:.6rem}
.keys{color:var(--mut);font-size:.85rem}kbd{border:1px solid var(--line);border-radius:4px;padding:0 .3rem;font:12px ui-monospace,monospace}
textarea{width:100%;min-height:4rem;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.4rem}
input{font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.2rem .4rem}
#mine{font-size:1.05rem}.more{margin:.3rem 0;color:var(--unk);font-weight:600}#msg{color:var(--fail)}ul{margin:.2rem 0;padding-left:1.2rem}
button{font:inherit;padding:.25rem .7rem;border-radius:6px;border:1px solid var(--line);background:transparent;color:var(--fg);cursor:pointer}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("assay-data").textContent);
  var items = DATA.items, pos = 0, labels = {};
  // the judge's view (and canary flags) of each item, sealed in the page: read back only after a label
  var KEY = (DATA.key.match(/../g) || []).map(function (h) { return parseInt(h, 16); });
  function unseal(i) {
    var bin = atob(items[i].sealed), out = new Uint8Array(bin.length);
    for (var n = 0; n < bin.length; n++) out[n] = bin.charCodeAt(n) ^ KEY[n % KEY.length];
    return JSON.parse(new TextDecoder().decode(out));
  }
  var storeKey = "assay-label-" + DATA.batch;
  function $(id) { return document.getElementById(id); }
  function text(id, value) { $(id).textContent = value == null ? "" : String(value); }
  // Two tabs of one page share the stored labels. Each tab saves by merging with what is stored, and
  // merges again when the other tab saved (the storage event), writing back only what the other lacked:
  // per item the latest change wins (its `at`; a skip leaves a dated mark in `gone`), a label whose
  // judge's view was seen wins over any not seen (it stands), ties break the same way in every tab.
  // A tab that saved a whole map of its own lost the labels another tab gave a moment before.
  var gone = {}, lastAt = 0;
  function stamp() { lastAt = Math.max(Date.now(), lastAt + 1); return lastAt; }
  function read() {
    var s = null;
    try { s = JSON.parse(window.localStorage.getItem(storeKey) || "{}"); } catch (e) { s = null; }
    if (!s || typeof s !== "object") s = {};
    if (s.v !== 2) return { labels: s, gone: {} };      // a page saved before: its labels, undated
    return { labels: s.labels && typeof s.labels === "object" ? s.labels : {}, gone: s.gone && typeof s.gone === "object" ? s.gone : {} };
  }
  function rank(l, g) {   // compared in order: seen, at, a label over a skip, the text
    if (l) return [l.seen ? 1 : 0, +l.at || 0, 1, JSON.stringify(l)];
    return [0, +g || 0, 0, ""];
  }
  function later(a, b) { for (var n = 0; n < a.length; n++) { if (a[n] !== b[n]) return a[n] > b[n]; } return false; }
  function merge(a, b) {
    var out = { labels: {}, gone: {} }, keys = {};
    [a.labels, a.gone, b.labels, b.gone].forEach(function (m) { Object.keys(m).forEach(function (k) { keys[k] = 1; }); });
    Object.keys(keys).forEach(function (k) {
      var ra = rank(a.labels[k], a.gone[k]), rb = rank(b.labels[k], b.gone[k]);
      var src = later(rb, ra) ? b : a;
      if (src.labels[k]) out.labels[k] = src.labels[k]; else if (src.gone[k] != null) out.gone[k] = src.gone[k];
    });
    return out;
  }
  function canon(st) {
    var keys = function (m) { return Object.keys(m).sort(); };
    return JSON.stringify([keys(st.labels).map(function (k) { return [k, st.labels[k]]; }), keys(st.gone).map(function (k) { return [k, st.gone[k]]; })]);
  }
  function write(st) { try { window.localStorage.setItem(storeKey, JSON.stringify({ v: 2, labels: st.labels, gone: st.gone })); } catch (e) {} }
  // this tab's labels merged with the stored ones; written back when the store lacked any of this tab's
  function sync() {
    var stored = read(), st = merge(stored, { labels: labels, gone: gone });
    labels = st.labels; gone = st.gone;
    if (canon(st) !== canon(stored)) write(st);
  }
  labels = read().labels; gone = read().gone;
  function touch(i) { if (labels[i]) { labels[i].at = stamp(); delete gone[i]; } else { gone[i] = stamp(); } }
  function save() { sync(); refresh(); }
  // once shown, the export box and the download link stay the labels as they are now: a stale link
  // downloaded the lines of the first export and the labels given since were lost
  var exportShown = false;
  function refresh() { if (exportShown) exportLines(true); }
  function done() { return Object.keys(labels).length; }
  function verdictSpan(id, v) { var el = $(id); el.textContent = v; el.className = "v-" + v; }
  // a long answer: its first FIRST characters on the first screen, the rest on demand (r, or the button),
  // as text; once shown for a material it stays shown for every item of it. A label records whether the
  // rest had been shown (saw_whole_answer): answer_sha256 covers the whole answer.
  var FIRST = DATA.first_screen, whole = {};
  function cutAt(v) { var n = FIRST; var c = v.charCodeAt(n - 1); return c >= 0xD800 && c <= 0xDBFF ? n - 1 : n; }
  function isCut(v) { return typeof v === "string" && v.length > FIRST; }
  function cutItem(i) { var m = DATA.materials[items[i].material] || {}; return isCut(m.answer) || isCut(m.baseline); }
  function longText(id, value, empty) {
    var v = value == null ? "" : String(value), el = $(id), open = whole[items[pos].material];
    if (!isCut(v) || open) { el.textContent = v || empty || ""; $(id + "-more").hidden = $(id + "-end").hidden = true; return; }
    var n = cutAt(v), left = (v.length - n).toLocaleString("en");
    el.textContent = v.slice(0, n);
    $(id + "-more").hidden = $(id + "-end").hidden = false;
    text(id + "-left", "A long answer: its first " + n.toLocaleString("en") + " of " + v.length.toLocaleString("en")
         + " characters are below; " + left + " more characters are not shown, and a failure may be in them.");
    text(id + "-tail", "\u2026 " + left + " more characters not shown.");
  }
  function showRest() {
    if (!cutItem(pos)) return;
    whole[items[pos].material] = true; render();
    var mine = labels[pos];
    if (mine && mine.whole === false)
      text("msg", mine.seen ? "The rest of the answer is shown; your label was given before it, and stands as given (not counted)."
                            : "The rest of the answer is shown. You labelled this item before it: label it again (p / f) so the label is on the whole answer.");
  }
  function render() {
    var it = items[pos], m = DATA.materials[it.material] || {};
    text("progress", "item " + (pos + 1) + " of " + items.length + " \u00b7 " + done() + " labelled");
    text("case", it.case_id + (m.title ? " \u00b7 " + m.title : "") + (DATA.runs > 1 ? " \u00b7 run " + it.run_id : "")); text("pin", it.rubric_id); text("node", it.node_id);
    text("criterion", it.criterion || "(no criterion text in judge.json)");
    text("input", m.input || "(no input recorded)"); longText("answer", m.answer, "(empty answer)");
    $("scope-box").hidden = !m.scope; text("scope", m.scope);
    var earlier = $("earlier"); earlier.textContent = "";
    (m.earlier || []).forEach(function (t) {
      var pre = document.createElement("pre");
      pre.textContent = "[turn " + t.turn + "] user: " + t.user + "\n[turn " + t.turn + "] answer: " + t.answer;
      earlier.appendChild(pre);
    });
    $("earlier-box").hidden = !(m.earlier || []).length;
    $("baseline-box").hidden = m.baseline == null; longText("baseline", m.baseline); text("baseline-run", m.baseline_run_id);
    var tools = $("tools"); tools.textContent = "";
    (m.tools || []).forEach(function (t) {
      var pre = document.createElement("pre");
      pre.textContent = t.name + "(" + t.arguments + ")\n\u2192 " + (t.error ? "error: " + t.error : t.result);
      tools.appendChild(pre);
    });
    if (!(m.tools || []).length) { var p = document.createElement("p"); p.textContent = "(no tool calls recorded)"; tools.appendChild(p); }
    var mine = labels[pos], ev = $("evidence");
    ev.textContent = ""; text("judge", ""); $("judge").className = ""; text("reason", "");
    $("judge-box").hidden = !(mine && mine.seen);
    if (mine && mine.seen) {          // only once labelled, and asked for: the label was given blind
      var j = unseal(pos);
      verdictSpan("judge", j.judge_label);
      (j.evidence || []).forEach(function (q) { var li = document.createElement("li"); li.textContent = q; ev.appendChild(li); });
      text("reason", j.reason || "(no reason given)");
      text("judge-hint", "You saw the judge's view after labelling: your label stands.");
    } else {
      text("judge-hint", mine ? "Press v (or the button) to see the judge's verdict and reason; your label then stands as given."
                              : "Hidden until you have labelled this item, so your label is your own.");
    }
    $("btn-judge").hidden = !(mine && !mine.seen);
    if (mine) { verdictSpan("mine", mine.label); } else { text("mine", "not labelled"); $("mine").className = ""; }
    text("mine-note", mine && mine.whole === false ? "given before the rest of the answer was shown: exported as saw_whole_answer false, not counted" : "");
    $("critique").value = mine && mine.critique ? mine.critique : "";
    text("msg", "");
  }
  function locked() {
    if (!(labels[pos] && labels[pos].seen)) return false;
    text("msg", "You have seen the judge's view of this item: your label stands as you gave it.");
    return true;
  }
  function reveal() {
    if (!labels[pos]) { text("msg", "Label this item first (p or f): the judge's view shows after your label."); return; }
    labels[pos].seen = true; touch(pos); save(); render();
  }
  function setLabel(label) {
    if (locked()) return;
    var prev = labels[pos] || {};
    labels[pos] = { label: label, critique: $("critique").value || prev.critique || "", ts: new Date().toISOString() };
    var partial = cutItem(pos) && !whole[items[pos].material];
    if (cutItem(pos)) labels[pos].whole = !partial;
    touch(pos); save();
    if (pos < items.length - 1) { pos += 1; }
    render();
    if (partial) text("msg", "Labelled without the rest of its answer (never shown): exported as saw_whole_answer false and not counted. k goes back, r shows the rest.");
  }
  function exportLines(quiet) {
    var reviewer = $("reviewer").value.trim(), a = $("download");
    if (!reviewer) {
      if (quiet) { $("export").value = ""; a.removeAttribute("href"); a.textContent = ""; return null; }
      text("msg", "Enter your name as reviewer before exporting."); $("reviewer").focus(); return null;
    }
    var lines = [];
    items.forEach(function (it, i) {
      var l = labels[i]; if (!l) return;
      var j = unseal(i);
      var row = { case_id: it.case_id, rubric_id: it.rubric_id, node_id: it.node_id, label: l.label,
                  judge_label: j.judge_label, reviewer: reviewer, ts: l.ts, batch: DATA.batch,
                  answer_sha256: it.answer_sha256 };
      if (l.critique) row.critique = l.critique;
      if (typeof l.whole === "boolean") row.saw_whole_answer = l.whole;
      if (j.canary) { row.canary = true; row.expected_label = j.expected; }
      lines.push(JSON.stringify(row));
    });
    var out = lines.length ? lines.join("\n") + "\n" : "";
    $("export").value = out;
    exportShown = true;
    a.href = "data:application/x-ndjson;charset=utf-8," + encodeURIComponent(out);
    a.setAttribute("download", DATA.batch + ".jsonl");
    a.textContent = "download " + DATA.batch + ".jsonl (" + lines.length + " lines)";
    if (!quiet) text("msg", lines.length ? "" : "Nothing labelled yet.");
    return out;
  }
  function copyExport() {
    if (exportLines() === null) return;
    var box = $("export"); box.focus(); box.select();
    try { document.execCommand("copy"); text("msg", "Copied."); } catch (e) { text("msg", "Select the box and copy it."); }
  }
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "TEXTAREA" || tag === "INPUT") {
      if (ev.key === "Escape") {
        if (ev.target.id === "critique" && labels[pos]) { labels[pos].critique = ev.target.value; touch(pos); save(); }
        ev.target.blur();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var k = ev.key;
    // a held key repeats: each repeat would label (or skip) the next item unseen; only moving repeats
    if (ev.repeat && "adpfsevr".indexOf(k) >= 0) { ev.preventDefault(); return; }
    if (k === "a" || k === "d") text("msg", "Label with p (pass) or f (fail): the judge's verdict is hidden until you have labelled the item.");
    else if (k === "p") setLabel("pass");
    else if (k === "f") setLabel("fail");
    else if (k === "v") reveal();
    else if (k === "r") showRest();
    else if (k === "s") { if (locked()) return; delete labels[pos]; touch(pos); save(); if (pos < items.length - 1) pos += 1; render(); }
    else if (k === "c") { ev.preventDefault(); $("critique").focus(); }
    else if (k === "j" || k === "ArrowRight") { if (pos < items.length - 1) pos += 1; render(); }
    else if (k === "k" || k === "ArrowLeft") { if (pos > 0) pos -= 1; render(); }
    else if (k === "e") exportLines();
    else return;
    ev.preventDefault();
  });
  // the same page open in another tab saved: take its labels, so this tab never saves over them
  window.addEventListener("storage", function (ev) {
    if (ev.key !== storeKey) return;
    sync();
    refresh();
    if (document.activeElement !== $("critique")) render();
  });
  $("critique").addEventListener("input", function () { if (labels[pos]) { labels[pos].critique = $("critique").value; touch(pos); save(); } });
  $("btn-export").addEventListener("click", function () { exportLines(false); });
  $("reviewer").addEventListener("input", refresh);
  $("btn-copy").addEventListener("click", copyExport);
  $("btn-judge").addEventListener("click", reveal);
  ["answer-rest", "answer-rest-end", "baseline-rest", "baseline-rest-end"].forEach(function (id) {
    $(id).addEventListener("click", showRest);
  });
  $("reviewer").value = DATA.reviewer || "";
  render();
  document.body.setAttribute("data-ready", "1");
})();
"""

BODY = """
<header><h1>Label answers · run {run_id}</h1><span id="progress"></span>
<label>reviewer <input id="reviewer" size="18" autocomplete="off"></label>
<span class="keys"><kbd>p</kbd>/<kbd>f</kbd> pass/fail <kbd>s</kbd> skip <kbd>v</kbd> judge's view (after your label)
<kbd>r</kbd> rest of a long answer <kbd>c</kbd> critique <kbd>j</kbd>/<kbd>k</kbd> move <kbd>e</kbd> export</span></header>
<main>
<p id="msg" role="status"></p>
<h2>Criterion</h2><p class="crit" id="criterion"></p>
<p>case <code id="case"></code> · rubric <code id="pin"></code> · node <code id="node"></code></p>
<div id="scope-box" hidden><h2>What the judge judged</h2><p id="scope"></p></div>
<div id="earlier-box" hidden><h2>Earlier turns (context, not the answer)</h2><div id="earlier"></div></div>
<h2>Input</h2><pre id="input"></pre>
<h2>Answer</h2>
<p class="more" id="answer-more" hidden><span id="answer-left"></span>
<button id="answer-rest" type="button">show the rest (<kbd>r</kbd>)</button></p><pre id="answer"></pre>
<p class="more" id="answer-end" hidden><span id="answer-tail"></span>
<button id="answer-rest-end" type="button">show the rest (<kbd>r</kbd>)</button></p>
<div id="baseline-box" hidden><h2>Baseline answer · run <code id="baseline-run"></code></h2>
<p class="keys">A pairwise rubric: the judge compared this run's answer (above) with the baseline run's answer, in
both orders. Label <b>fail</b> when this run's answer is worse, <b>pass</b> when it is as good or better.</p>
<p class="more" id="baseline-more" hidden><span id="baseline-left"></span>
<button id="baseline-rest" type="button">show the rest (<kbd>r</kbd>)</button></p><pre id="baseline"></pre>
<p class="more" id="baseline-end" hidden><span id="baseline-tail"></span>
<button id="baseline-rest-end" type="button">show the rest (<kbd>r</kbd>)</button></p></div>
<h2>Tool results</h2><div id="tools"></div>
<h2>Your label</h2><p><span id="mine"></span> <span class="keys" id="mine-note"></span></p>
<textarea id="critique" placeholder="critique (optional): what is wrong, in a sentence"></textarea>
<h2>Judge</h2><p class="keys" id="judge-hint"></p><p><button id="btn-judge" type="button" hidden>show the judge's view</button></p>
<div id="judge-box" hidden><p>verdict: <span id="judge"></span></p><p>evidence:</p><ul id="evidence"></ul>
<p>reason: <span id="reason"></span></p></div>
<h2>Export</h2>
<p><button id="btn-export" type="button">export</button> <button id="btn-copy" type="button">copy</button>
<a id="download"></a></p>
<p class="keys">Save the lines as <code>{save_to}</code>, then run
<code>score_agreement.py &lt;state&gt;/annotations/*.jsonl</code>.</p>
<textarea id="export" readonly rows="8"></textarea>
</main>
"""


def _embed(data: Any) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` survive literally."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


FIRST_SCREEN = 20_000   # characters of an answer on the first screen; the rest when asked (r)

SEALED = ("judge_label", "evidence", "reason", "canary", "expected")


def _seal(view: dict[str, Any], key: bytes) -> str:
    raw = json.dumps(view, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return base64.b64encode(bytes(b ^ key[i % len(key)] for i, b in enumerate(raw))).decode("ascii")


def _sealed(item: dict[str, Any], key: bytes) -> dict[str, Any]:
    """The item as the page holds it: what the person reads in the clear, the judge's view and the
    canary flags sealed (`sealed`), never in the page's text."""
    view = {k: item[k] for k in SEALED if k in item}
    view["evidence"] = show_invisible_in(view.get("evidence") or [])
    view["reason"] = show_invisible_in(view.get("reason") or "")
    clear = {k: v for k, v in item.items() if k not in SEALED}
    if "criterion" in clear:
        clear["criterion"] = show_invisible_in(clear["criterion"])
    return dict(clear, sealed=_seal(view, key))


def page_items(page: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the page's data, its items with the judge's view unsealed): what the page's export reads back,
    for a tool or a test that labels a page without a browser."""
    m = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', page, re.S)
    if m is None:
        raise ValueError("not a labelling page: no assay-data element")
    data = json.loads(m.group(1))
    key = bytes.fromhex(data["key"])
    items = []
    for it in data["items"]:
        raw = base64.b64decode(it["sealed"])
        view = json.loads(bytes(b ^ key[i % len(key)] for i, b in enumerate(raw)).decode("utf-8"))
        items.append({**{k: v for k, v in it.items() if k != "sealed"}, **view})
    return data, items


def render_page(labelset: dict[str, Any], *, batch: str, reviewer: str, save_to: str) -> str:
    # what a person reads shows bidi controls and zero-width characters as markers (core.visible);
    # the ids the export writes back stay exact
    key = secrets.token_bytes(16)
    shown = [_sealed(it, key) for it in labelset["items"]]
    data = {"batch": batch, "reviewer": reviewer, "items": shown, "key": key.hex(), "first_screen": FIRST_SCREEN, "runs": len(labelset.get("run_ids") or [1]), "materials": show_invisible_in(labelset["materials"])}
    body = BODY.format(run_id=html.escape(labelset["run_id"]), save_to=html.escape(save_to))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>assay labelling · {html.escape(labelset['run_id'])}</title>\n<style>{STYLE}</style></head>\n"
            f"<body>{body}\n<script type=\"application/json\" id=\"assay-data\">{_embed(data)}</script>\n"
            f"<script>{SCRIPT}</script>\n</body></html>\n")
