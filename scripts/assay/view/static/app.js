/* assay view: vanilla JS, no framework. Every piece of run data is written with textContent
   (createTextNode); links are built only from "#/" routes with encodeURIComponent. */
"use strict";
(function () {
  const BUNDLE = !!window.ASSAY_BUNDLE;
  const store = {};
  window.ASSAY_PUT = function (key, doc) { store[key] = doc; };

  function keyOf(path) { return path.replace(/^\/api\//, "").replace(/[^A-Za-z0-9._-]/g, "__"); }
  function load(path, query) {
    if (!BUNDLE) {
      const qs = query ? "?" + new URLSearchParams(query).toString() : "";
      return fetch(path + qs).then(r => r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)));
    }
    const key = keyOf(path);
    if (store[key]) return Promise.resolve(store[key]);
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "data/" + key + ".js";
      s.onload = () => store[key] ? resolve(store[key]) : reject(new Error("not in this bundle"));
      s.onerror = () => reject(new Error("not in this bundle: " + path));
      document.head.appendChild(s);
    });
  }

  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "href") n.setAttribute("href", String(v).startsWith("#/") || String(v).startsWith("raw/") ? v : "#/");
      else if (k === "on") for (const [ev, f] of Object.entries(v)) n.addEventListener(ev, f);
      else n.setAttribute(k, v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined) continue;
      n.appendChild(kid instanceof Node ? kid : document.createTextNode(vis(kid)));  /* bidi shown, never obeyed */
    }
    return n;
  }
  const E = encodeURIComponent;
  const main = () => document.getElementById("main");
  function show(...nodes) { const m = main(); m.replaceChildren(...nodes); }
  function chip(text, cls) { return el("span", {class: "chip " + (cls || String(text).replace(/[^a-z_]/g, ""))}, text); }
  function pct(x) { return typeof x === "number" ? (x * 100).toFixed(1) + " %" : "–"; }
  /* bidi controls and zero-width marks are shown as ⟨U+XXXX⟩, so a hostile answer cannot reorder text */
  const BIDI = /[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
  function vis(t) { return String(t).replace(BIDI, c => "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9"); }
  function json(v) { return el("pre", {}, v === undefined || v === null ? "(none)" : vis(JSON.stringify(v, null, 2))); }

  /* ---------------------------------------------------------------- runs */
  function gateChip(r) {
    if (r.gate === "checking") return chip("checking…", "checking");
    return r.green ? chip("open", "open") : chip(r.gate === "open" ? "open (marked)" : r.gate, r.gate === "open" ? "mark" : "closed");
  }
  function refreshGates(table) {  /* rows still "checking": ask again; only their gate cells change */
    setTimeout(() => load("/api/runs").then(doc => {
      if (!table.isConnected) return;
      for (const r of doc.runs) {
        const cell = table.querySelector('td.gate-cell[data-run="' + CSS.escape(r.run_id) + '"]');
        if (cell) cell.replaceChildren(gateChip(r), ...r.marks.map(m => chip(m, "mark")));
      }
      if (doc.checking) refreshGates(table);
    }), 1000);
  }
  function runsPage() {
    return load("/api/runs").then(doc => {
      const picked = [];
      const btn = el("button", {id: "compare-btn", disabled: "disabled", on: {click: () => {
        location.hash = "#/compare/" + E(picked[0]) + "/" + E(picked[1]);
      }}}, "Compare the two picked runs");
      const rows = doc.runs.map(r => {
        const box = el("input", {type: "checkbox", "data-run": r.run_id, on: {change: ev => {
          const i = picked.indexOf(r.run_id);
          if (ev.target.checked && i < 0) picked.push(r.run_id); else if (!ev.target.checked && i >= 0) picked.splice(i, 1);
          while (picked.length > 2) { const old = picked.shift(); document.querySelector('input[data-run="' + CSS.escape(old) + '"]').checked = false; }
          if (picked.length === 2) btn.removeAttribute("disabled"); else btn.setAttribute("disabled", "disabled");
        }}});
        const gate = gateChip(r);
        return el("tr", {class: "run-row"}, el("td", {}, box),
          el("td", {class: "nowrap"}, el("a", {href: "#/run/" + E(r.run_id)}, r.run_id)), el("td", {}, r.mode),
          el("td", {class: "nowrap", title: r.started_at || ""}, String(r.started_at || "").replace("T", " ").replace(/\.\d+Z$/, "Z")),
          el("td", {class: "nowrap"}, pct(r.pass_rate), r.interval ? " [" + pct(r.interval[0]) + ", " + pct(r.interval[1]) + "]" : ""),
          el("td", {class: "gate-cell", "data-run": r.run_id}, gate, r.marks.map(m => chip(m, "mark"))), el("td", {}, r.gating_failures),
          el("td", {}, pct(r.infra_rate)), el("td", {}, (r.suite_sha256 || "").slice(0, 12)), el("td", {}, r.series));
      });
      const table = el("table", {id: "runs"}, el("tr", {}, ["", "run", "mode", "started", "pass rate [95 % Wilson]", "gate",
          "gating failures", "infra rate", "suite", "series"].map(h => el("th", {}, h))), rows);
      if (doc.checking && !BUNDLE) refreshGates(table);
      return [el("h1", {}, "Runs (" + doc.count + ")"), btn, table];
    });
  }

  /* ---------------------------------------------------------------- run */
  const FILTERS = ["verdict", "layer", "unit", "tag", "split", "conversation", "q", "sort"];
  /* The bundle only (the server filters in assay.view.cases): a run's case index is written in
     chunks (data/run__<id>__cases__<i>.js); the first page loads only the chunk it shows, a filter
     or a sort loads them all once and filters here. */
  const SORTS = {id: r => r.case_id, verdict: r => String(r.verdict) + "\u0000" + r.case_id,
    unit: r => String(r.unit) + "\u0000" + r.case_id, latency: r => typeof r.latency_ms === "number" ? r.latency_ms : -1};
  function bundlePage(runId, q) {
    const size = 100, number = Math.max(0, parseInt(q.page || "0", 10) || 0);
    const filtered = FILTERS.some(k => q[k]);
    return load("/api/run/" + E(runId) + "/cases").then(head => {
      const want = [];
      for (let i = 0; i < head.chunks; i++) {
        if (filtered || (i + 1) * head.chunk_size > number * size && i * head.chunk_size < (number + 1) * size) want.push(i);
      }
      return Promise.all(want.map(i => load("/api/run/" + E(runId) + "/cases/" + i))).then(parts => {
        let rows = [].concat(...parts.map(p => p.rows)), offset = filtered ? 0 : want.length ? want[0] * head.chunk_size : 0;
        rows = rows.filter(r => (!q.verdict || r.verdict === q.verdict) &&
          (!q.unit || r.unit === q.unit) && (!q.split || String(r.split) === q.split) && (!q.tag || (r.tags || []).includes(q.tag)) &&
          (!q.conversation || r.multi_turn === (q.conversation === "yes")) &&
          (!q.layer || r.layers[q.layer.split(":")[0]] === q.layer.split(":")[1]) &&
          (!q.q || r.case_id.toLowerCase().includes(q.q.toLowerCase())));
        if (SORTS[q.sort]) {
          const key = SORTS[q.sort];
          rows.sort((a, b) => { const x = key(a), y = key(b); return x < y ? -1 : x > y ? 1 : 0; });
          if (q.desc === "1") rows.reverse();
        }
        const matched = filtered ? rows.length : head.total;
        const start = number * size - offset;
        return Object.assign({}, head, {matched: matched, page: number, size: size, cases: rows.slice(start, start + size)});
      });
    });
  }
  /* The gate's decision, or "checking…" until the server has evaluated it (never a verdict it has
     not computed); the section then asks /api/run/<id>/gate, which waits up to a few seconds. */
  function gateSection(sec, runId, g, marks) {
    const known = g.gate !== "checking";
    sec.setAttribute("data-gate", known ? g.gate : "checking");
    sec.replaceChildren(el("h2", {}, "Gate: ", known ? chip(g.gate, g.gate) : chip("checking…", "checking"), marks.map(m => chip(m, "mark"))),
      !known ? el("p", {}, "The gate is being evaluated; the cases below are already complete.")
        : g.reasons.length ? el("ul", {class: "reasons"}, g.reasons.map(x => el("li", {}, x))) : el("p", {}, "No reason to close."),
      el("p", {class: "note"}, "The gate's own evaluation (assay.report.gate), without run_cases.py --verify."));
    if (known || BUNDLE) return;
    load("/api/run/" + E(runId) + "/gate", {wait: "3"}).then(ng => {
      if (sec.isConnected) gateSection(sec, runId, ng, marks);
    }, err => { sec.replaceChildren(el("h2", {}, "Gate: ", chip("unknown", "closed")), el("p", {}, String(err.message || err))); });
  }
  function runPage(runId, q) {
    return Promise.all([load("/api/run/" + E(runId)), BUNDLE ? bundlePage(runId, q) : load("/api/run/" + E(runId) + "/cases", q)]).then(([run, page]) => {
      const decision = el("section", {id: "gate"});
      gateSection(decision, runId, run.gate, run.run.marks);
      const form = el("form", {class: "filters", id: "filters", on: {submit: ev => {
        ev.preventDefault();
        const fd = new FormData(ev.target); const nq = {};
        for (const [k, v] of fd.entries()) if (v) nq[k] = v;
        location.hash = "#/run/" + E(runId) + "?" + new URLSearchParams(nq).toString();
      }}});
      const sel = (name, opts) => el("label", {}, name + " ", el("select", {name: name},
        [el("option", {value: ""}, "any")].concat(opts.map(o => { const op = el("option", {value: o}, o); if (q[name] === o) op.setAttribute("selected", ""); return op; }))));
      if (page.meta_ready === false && !BUNDLE) {  /* units and tags are known once every case was read */
        load("/api/run/" + E(runId) + "/cases", {size: "1", wait: "20"}).then(p2 => {
          for (const [name, opts] of [["unit", p2.facets.units], ["tag", p2.facets.tags]]) {
            const s = form.querySelector("select[name=" + name + "]");
            if (s && s.options.length === 1) s.append(...opts.map(o => el("option", {value: o}, o)));
          }
          form.setAttribute("data-facets", "ready");
        }, () => {});
      } else form.setAttribute("data-facets", "ready");
      const verdicts = Object.keys(page.counts).sort();
      const layerOpts = [];
      for (const l of page.facets.layers) for (const s of ["pass", "fail", "unscored", "error"]) layerOpts.push(l + ":" + s);
      form.append(sel("verdict", verdicts), sel("layer", layerOpts), sel("unit", page.facets.units), sel("tag", page.facets.tags),
        sel("conversation", ["yes", "no"]), sel("sort", ["id", "verdict", "unit", "latency"]),
        el("label", {}, "text ", el("input", {name: "q", value: q.q || "", type: "search"})), el("button", {type: "submit"}, "Filter"));
      const counts = el("p", {class: "counts", id: "counts"}, el("span", {}, "showing " + page.cases.length + " of " + page.matched + " matching, " + page.total + " cases"),
        Object.entries(page.counts).map(([k, v]) => el("span", {}, chip(k), v)),
        page.holdout.n ? el("span", {}, "holdout: " + page.holdout.n + " (counts only: " + page.holdout.pass + " pass, " + page.holdout.fail + " fail)") : null);
      const table = el("table", {id: "cases"}, el("tr", {}, ["case", "verdict", "failing layers", "unit", "conversation"].map(h => el("th", {}, h))),
        page.cases.map(c => el("tr", {class: "case-row"}, el("td", {}, el("a", {href: "#/case/" + E(runId) + "/" + E(c.case_id)}, c.case_id)),
          el("td", {}, chip(c.verdict)), el("td", {}, Object.entries(c.layers).filter(([, v]) => v === "fail" || v === "error").map(([k]) => k).join(", ")),
          el("td", {}, c.unit || ""), el("td", {}, c.multi_turn ? "yes" : ""))));
      const pager = el("p", {class: "pager"});
      {
        const go = n => { location.hash = "#/run/" + E(runId) + "?" + new URLSearchParams(Object.assign({}, q, {page: n})).toString(); };
        if (page.page > 0) pager.append(el("button", {on: {click: () => go(page.page - 1)}}, "previous"));
        pager.append("page " + (page.page + 1) + " of " + Math.max(1, Math.ceil(page.matched / page.size)));
        if ((page.page + 1) * page.size < page.matched) pager.append(el("button", {id: "next", on: {click: () => go(page.page + 1)}}, "next"));
      }
      return [el("h1", {}, "Run " + runId), decision, el("h2", {}, "Cases"), form, counts, table, pager];
    });
  }

  /* ---------------------------------------------------------------- case */
  function timeline(t) {
    if (!t) return el("p", {}, "No trajectory (no trace was collected for this case).");
    const items = [];
    for (const c of t.llm_calls || []) items.push({k: "model", at: c.start_ns || 0, node: el("li", {class: "model"},
      chip("model"), (c.agent || "") + " " + (c.model || "") + " " + (c.operation || ""),
      " tokens in/out: " + (c.input_tokens ?? "?") + "/" + (c.output_tokens ?? "?"), c.latency_ms != null ? " " + c.latency_ms + " ms" : "")});
    for (const c of t.tool_calls || []) items.push({k: "tool", at: c.start_ns || 0, node: el("li", {class: "tool"},
      chip("tool"), c.name || "?", c.agent ? " (agent " + c.agent + ")" : "", c.error ? " error: " + c.error : "",
      el("div", {}, "arguments"), json(c.arguments), el("div", {}, "result"), json(c.result))});
    for (const h of t.handoffs || []) items.push({k: "handoff", at: h.start_ns || 0, node: el("li", {class: "handoff"}, chip("handoff"), (h.from || "?") + " → " + (h.to || "?"))});
    items.sort((a, b) => a.at - b.at);
    return el("div", {}, el("p", {}, "agents: " + (t.agents || []).map(a => a.name).join(", ")),
      el("ol", {class: "timeline", id: "timeline"}, items.map(i => i.node)), t.usage ? el("p", {}, "usage: " + JSON.stringify(t.usage.total || t.usage)) : null);
  }
  function layers(v) {
    if (!v || !v.layers) return el("p", {}, "(no verdict)");
    return el("table", {id: "layers"}, el("tr", {}, ["layer", "verdict", "expected", "actual / detail"].map(h => el("th", {}, h))),
      Object.entries(v.layers).filter(([, l]) => l.verdict !== "n/a").map(([name, l]) => {
        const rest = Object.assign({}, l); delete rest.verdict; const exp = rest.expected; delete rest.expected;
        return el("tr", {}, el("td", {}, name), el("td", {}, chip(l.verdict)), el("td", {}, exp === undefined ? "" : json(exp)), el("td", {}, json(rest)));
      }));
  }
  /* every rubric (calibrated or provisional), every node (criterion, verdict, reason, evidence) and
     every call to the judge (status, latency, usage, what it said; the prompt and raw reply folded) */
  function judgeCall(c, i) {
    const said = c.parsed && typeof c.parsed === "object" ? c.parsed : null;
    const u = c.usage && typeof c.usage === "object" ? " · tokens in/out " + (c.usage.input_tokens ?? "?") + "/" + (c.usage.output_tokens ?? "?") : " · no usage reported";
    return el("div", {class: "judge-call"},
      el("div", {class: "note"}, "call " + (i + 1) + " · status " + (c.status ?? "–") + " · attempts " + (c.attempts ?? "–") +
        " · " + (c.latency_ms != null ? c.latency_ms + " ms" : "latency –") + u, c.error ? el("span", {class: "err"}, " · error: " + c.error) : null),
      said ? el("div", {}, "the judge said ", chip(String(said.verdict ?? "?")), " ", String(said.reason ?? "")) : el("div", {}, "no parsed reply"),
      el("details", {}, el("summary", {}, "prompt and raw reply"), el("h5", {}, "prompt"), el("pre", {}, c.prompt ?? "(none)"),
        el("h5", {}, "raw reply"), el("pre", {}, c.raw_reply ?? "(none)")));
  }
  /* the case's judge.json (id "judge") and each conversation turn's turns/<n>/judge.json (id
     "judge-turn-<n>"): one rendering for both */
  function judge(j, id) {
    if (!j) return el("p", {}, "Not judged.");
    const u = j.usage || {};
    const facts = [j.provider ? "judge " + j.provider : null, j.model ? "model " + j.model : null,
      j.prompt_version != null ? "prompt version " + j.prompt_version : null,
      j.usage ? (u.calls ?? 0) + " call(s), tokens in/out " + (u.input_tokens ?? 0) + "/" + (u.output_tokens ?? 0) +
        (u.calls_without_usage ? " (" + u.calls_without_usage + " call(s) reported no usage)" : "") : null].filter(Boolean);
    const head = facts.length ? el("p", {class: "note"}, facts.join(" · ")) : null;
    return el("div", {id: id || "judge", class: "judge-doc"}, head, (j.rubrics || []).map(r => el("div", {class: "judge"},
      el("h4", {}, "rubric " + (r.pin || r.rubric_id || r.id || ""), " ", chip(r.verdict || "?"), " ",
        r.turn != null ? chip("turn " + r.turn, "mark") : null, r.scope ? chip("scope " + r.scope) : null,
        r.provisional ? chip("provisional (not gating)", "mark") : chip("calibrated", "calibrated"), r.infra ? chip("infra", "infra_error") : null),
      r.why_provisional ? el("p", {class: "note"}, r.why_provisional) : null, r.reason ? el("p", {}, r.reason) : null,
      (r.nodes || []).map(n => el("div", {class: "judge-node"},
        el("div", {}, el("strong", {}, n.criterion || n.node_id || ""), " ", chip(n.verdict || "?"), n.infra ? chip("infra", "infra_error") : null,
          el("span", {class: "note"}, " node " + (n.node_id || "?"))),
        el("div", {}, el("span", {class: "label"}, "reason "), n.reason || "–"),
        el("div", {}, el("span", {class: "label"}, "evidence "), (Array.isArray(n.evidence) ? n.evidence : [n.evidence]).filter(x => x != null).length ? null : "none quoted"),
        el("ul", {class: "evidence"}, (Array.isArray(n.evidence) ? n.evidence : [n.evidence]).filter(x => x != null).map(x => el("li", {}, typeof x === "string" ? x : JSON.stringify(x)))),
        (n.calls || []).map(judgeCall))))));
  }
  /* a simulated user: what it said at a turn (turns/<n>/simulator.json: turn {message, stop,
     closing}, outcome, reason, calls) and how the conversation ended (simulator.json) */
  function simTurn(s, id) {
    if (!s || typeof s !== "object") return null;
    const t = s.turn && typeof s.turn === "object" ? s.turn : null;
    return el("div", {class: "simulator", id: id},
      el("h4", {}, "simulated user", s.outcome ? [" ", chip(String(s.outcome))] : null, t && t.stop ? chip("stop", "mark") : null),
      t ? [el("div", {}, el("span", {class: "label"}, "said "), el("pre", {class: "sim-message"}, vis(t.message ?? ""))),
        t.closing ? el("div", {}, el("span", {class: "label"}, "closing "), vis(t.closing)) : null] : el("div", {}, "no user message"),
      s.reason ? el("div", {}, el("span", {class: "label"}, "reason "), s.reason) : null,
      Array.isArray(s.calls) && s.calls.length ? el("details", {}, el("summary", {}, s.calls.length + " simulator call(s)"), s.calls.map(json)) : null);
  }
  function simulator(s) {
    if (!s || typeof s !== "object") return null;
    return el("div", {id: "simulator"}, el("p", {}, "outcome ", chip(String(s.outcome ?? "?")), s.reason ? " " + s.reason : "",
        s.seed != null ? el("span", {class: "note"}, " · seed " + s.seed) : null),
      el("details", {}, el("summary", {}, "identity and scenario"), json(s.identity), json(s.scenario)),
      s.final ? simTurn(s.final, "simulator-final") : null);
  }
  function turn(t) {
    return el("div", {class: "turn", id: "turn-" + t.turn}, simTurn(t.simulator, "simulator-turn-" + t.turn), part("turn " + t.turn, t), layers(t.verdict),
      t.judge ? [el("h4", {}, "judge calls at turn " + t.turn), judge(t.judge, "judge-turn-" + t.turn)] : null);
  }
  function part(title, p) {
    return el("div", {}, el("h3", {}, title), el("h4", {}, "request"), json(p.request && (p.request.body !== undefined ? p.request.body : p.request)),
      el("h4", {}, "answer"), el("pre", {class: "answer"}, p.answer === null ? "(no answer.txt)" : vis(p.answer)),
      el("h4", {}, "trajectory"), timeline(p.trajectory));
  }
  function casePage(runId, caseId) {
    return load("/api/case/" + E(runId) + "/" + E(caseId)).then(c => {
      const v = c.verdict || {};
      const out = [el("p", {}, el("a", {href: "#/run/" + E(runId)}, "← run " + runId)),
        el("h1", {}, "Case " + caseId + " ", chip(v.verdict || "?")),
        el("p", {}, "unit " + (v.unit || "–") + ", category " + (v.category || "–") + ", latency " + (v.latency_ms ?? "–") + " ms, attempts " + (v.attempts ?? "–"))];
      out.push(el("h2", {}, "Layers"), layers(v));
      if (c.turns.length) out.push(el("h2", {}, "Conversation (" + c.turns.length + " turns)"), c.turns.map(turn));
      else out.push(part("Request and answer", c));
      if (c.simulator) out.push(el("h2", {}, "Simulated user"), simulator(c.simulator));
      out.push(el("h2", {}, "Judge"), judge(c.judge));
      if (c.repeats.length) out.push(el("h2", {}, "Repeats (k = " + c.repeats.length + ")"),
        el("div", {class: "sides", id: "repeats"}, c.repeats.map(r => el("div", {}, el("h3", {}, "repeat " + r.n + " ", chip((r.verdict || {}).verdict || "?")),
          el("pre", {class: "answer"}, vis(r.answer || "")), timeline(r.trajectory)))));
      out.push(el("h2", {}, "Expected"), json(c.expect), el("h2", {}, "Raw files"),
        el("ul", {}, c.files.map(f => el("li", {}, BUNDLE ? f : el("a", {href: "raw/" + f.split("/").map(E).join("/")}, f)))));
      return out;
    });
  }

  /* ---------------------------------------------------------------- compare, history */
  function comparePage(base, cand) {
    return load("/api/compare/" + E(base) + "/" + E(cand)).then(d => {
      if (d.error) return [el("h1", {}, "Compare"), el("p", {class: "reasons"}, d.error)];
      const out = [el("h1", {}, "Compare " + base + " → " + cand), el("p", {id: "headline"}, d.headline),
        el("ul", {}, (d.notes || []).map(n => el("li", {}, n))),
        el("table", {id: "buckets"}, Object.entries(d.counts || {}).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))))];
      for (const [bucket, pairs] of Object.entries(d.buckets || {})) {
        if (!Array.isArray(pairs) || !pairs.length || bucket === "still_passing") continue;
        out.push(el("h2", {}, bucket + " (" + pairs.length + ")"), el("ul", {}, pairs.slice(0, 200).map(p => el("li", {},
          el("a", {href: "#/case/" + E(cand) + "/" + E(p.case_id)}, p.case_id), " ",
          (p.layers_changed || []).map(l => l.layer + ": " + l.base + "→" + l.candidate).join(", "),
          p.answer && p.answer.changed ? " (answer changed)" : "", p.trajectory && p.trajectory.changed ? " (trajectory changed)" : ""))));
      }
      return out;
    });
  }
  function historyPage() {
    return load("/api/history").then(h => {
      if (h.error) return [el("h1", {}, "History"), el("p", {}, h.error)];
      return [el("h1", {}, "History"), el("p", {}, "runs used: " + h.runs_used + " (not verified)"),
        (h.series || []).map(s => {
          const rows = (s.runs || []).map(r => el("tr", {}, el("td", {}, el("a", {href: "#/run/" + E(r.run_id)}, r.run_id)),
            el("td", {}, pct(r.pass_rate))));
          return el("section", {}, el("h2", {}, s.name), el("table", {}, rows));
        }),
        el("h2", {}, "Flaky cases"), el("ul", {id: "flaky"}, (h.flaky_cases || []).map(f => el("li", {}, f.series + ": " + f.case_id + " (" + f.flips + " flips)")))];
    });
  }

  function render() {
    const h = location.hash.slice(1) || "/";
    const [path, qs] = h.split("?");
    const q = Object.fromEntries(new URLSearchParams(qs || ""));
    const p = path.split("/").filter(Boolean).map(decodeURIComponent);
    let job;
    if (p[0] === "run" && p.length === 2) job = runPage(p[1], q);
    else if (p[0] === "case" && p.length === 3) job = casePage(p[1], p[2]);
    else if (p[0] === "compare" && p.length === 3) job = comparePage(p[1], p[2]);
    else if (p[0] === "history") job = historyPage();
    else job = runsPage();
    job.then(nodes => { show(...[nodes].flat(2)); document.body.setAttribute("data-ready", h); })
       .catch(err => { show(el("h1", {}, "Cannot show this page"), el("p", {}, String(err.message || err))); document.body.setAttribute("data-ready", h); });
  }
  window.addEventListener("hashchange", render);
  render();
})();
