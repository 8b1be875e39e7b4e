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
    for (const kid of kids.flat(Infinity)) {
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
        /* an unfinished run's counts are the decision's recount: they come with its gate */
        for (const [k, v] of Object.entries(countCells(r))) {
          const c = table.querySelector('td[data-count="' + k + '"][data-run="' + CSS.escape(r.run_id) + '"]');
          if (c) c.replaceChildren(v);
        }
      }
      if (doc.checking) refreshGates(table);
    }), 1000);
  }
  /* a run's counts as its row says them ("–" where unknown: an unfinished run not decided yet) */
  function countCells(r) {
    return {rate: pct(r.pass_rate) + (r.interval ? " [" + pct(r.interval[0]) + ", " + pct(r.interval[1]) + "]" : ""),
            gating: typeof r.gating_failures === "number" ? String(r.gating_failures) : "–", infra: pct(r.infra_rate)};
  }
  function runsPage() {
    return load("/api/runs").then(doc => {
      const picked = [];
      /* the older of the two (lower in the list: newest first) is the base, whichever was ticked first */
      const older = id => doc.runs.findIndex(r => r.run_id === id);
      const btn = el("button", {id: "compare-btn", disabled: "disabled", on: {click: () => {
        const [base, cand] = picked.slice().sort((a, b) => older(b) - older(a));
        location.hash = "#/compare/" + E(base) + "/" + E(cand);
      }}}, "Compare the two picked runs");
      /* "vs previous": the next older run that is a run, never a shard's dir (a slice of the plan:
         compared, its cases outside the shard read as removed); a shard's own row has none */
      const shard = r => (r.marks || []).includes("shard");
      const prev = i => shard(doc.runs[i]) ? null : doc.runs.slice(i + 1).find(o => !shard(o)) || null;
      const rows = doc.runs.map((r, i) => {
        const box = el("input", {type: "checkbox", "data-run": r.run_id, on: {change: ev => {
          const i = picked.indexOf(r.run_id);
          if (ev.target.checked && i < 0) picked.push(r.run_id); else if (!ev.target.checked && i >= 0) picked.splice(i, 1);
          while (picked.length > 2) { const old = picked.shift(); document.querySelector('input[data-run="' + CSS.escape(old) + '"]').checked = false; }
          if (picked.length === 2) btn.removeAttribute("disabled"); else btn.setAttribute("disabled", "disabled");
        }}});
        const gate = gateChip(r), counts = countCells(r);
        return el("tr", {class: "run-row"}, el("td", {}, box),
          el("td", {class: "nowrap"}, el("a", {href: "#/run/" + E(r.run_id)}, r.run_id)), el("td", {}, r.mode),
          el("td", {class: "nowrap", title: r.started_at || ""}, String(r.started_at || "").replace("T", " ").replace(/\.\d+Z$/, "Z")),
          el("td", {class: "nowrap", "data-count": "rate", "data-run": r.run_id}, counts.rate),
          el("td", {class: "gate-cell", "data-run": r.run_id}, gate, r.marks.map(m => chip(m, "mark"))),
          el("td", {"data-count": "gating", "data-run": r.run_id}, counts.gating),
          el("td", {"data-count": "infra", "data-run": r.run_id}, counts.infra), el("td", {}, (r.suite_sha256 || "").slice(0, 12)), el("td", {}, r.series),
          el("td", {class: "nowrap"}, prev(i) ? el("a", {href: "#/compare/" + E(prev(i).run_id) + "/" + E(r.run_id), class: "vs-prev"}, "vs previous") : ""));
      });
      const table = el("table", {id: "runs"}, el("tr", {}, ["", "run", "mode", "started", "pass rate [95 % Wilson]", "gate",
          "gating failures", "infra rate", "suite", "series", "compare"].map(h => el("th", {}, h))), rows);
      if (doc.checking && !BUNDLE) refreshGates(table);
      const bad = doc.unreadable || [];
      const note = bad.length ? el("div", {id: "unreadable-runs", class: "note"},
        el("p", {}, bad.length + " run dir(s) under reports/ cannot be shown:"),
        el("ul", {}, bad.map(u => el("li", {}, el("code", {}, u.run_id), ": " + u.reason)))) : "";
      const never = doc.not_started || [];   /* a newer run stopped at pre-flight: the top row is not its result */
      const neverNote = never.length ? el("div", {id: "not-started-runs", class: "note"},
        el("ul", {}, never.map(n => el("li", {}, el("code", {}, n.run_id), ": " + n.message)))) : "";
      return [el("h1", {}, "Runs (" + doc.count + ")"), neverNote, btn, table, note];
    });
  }

  /* ---------------------------------------------------------------- run */
  const FILTERS = ["verdict", "layer", "unit", "tag", "split", "conversation", "q", "sort"];
  /* The bundle only (the server filters in assay.view.cases): a run's case index is written in
     chunks (data/run__<id>__cases__<i>.js); the first page loads only the chunk it shows, a filter
     or a sort loads them all once and filters here. */
  const SORTS = {id: r => r.case_id, verdict: r => String(r.verdict) + "\u0000" + r.case_id,
    title: r => (r.title ? "0" + r.title : "1") + "\u0000" + r.case_id,
    failure: r => (r.failure ? "0" + r.failure.layer + "\u0000" + r.failure.sentence : "1") + "\u0000" + r.case_id,
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
          (!q.q || [r.case_id, r.title, r.input, r.failure && r.failure.sentence].join("\n").toLowerCase().includes(q.q.toLowerCase())));
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
  function gateSection(sec, runId, g, marks, banner) {
    const known = g.gate !== "checking";
    if (banner) checkBanner(banner, g.check);
    sec.setAttribute("data-gate", known ? g.gate : "checking");
    sec.replaceChildren(el("h2", {}, "Gate: ", known ? chip(g.gate, g.gate) : chip("checking…", "checking"), marks.map(m => chip(m, "mark"))),
      !known ? el("p", {}, "The gate is being evaluated; the cases below are already complete.")
        : g.reasons.length ? el("ul", {class: "reasons"}, g.reasons.map(x => el("li", {}, x))) : el("p", {}, "No reason to close."),
      el("p", {class: "note", id: "gate-verified"}, !known ? "" : marks.includes("running") || marks.includes("interrupted")
        ? "The gate's own evaluation (assay.report.gate), without the completeness check (run_cases.py --verify): the run did not finish, so there is nothing whole to check yet; the check runs once it is finished."
        : g.verified
        ? "The gate's evaluation (assay.report.gate) with the completeness check (run_cases.py --verify): run here on a run this small, or the answer a gate kept for these exact files."
        : "The gate's own evaluation (assay.report.gate), without the completeness check (run_cases.py --verify), too long to run here on a run this size: gate.py runs it and keeps its answer for these exact files, which this page then shows."));
    if (known || BUNDLE) return;
    load("/api/run/" + E(runId) + "/gate", {wait: "3"}).then(ng => {
      if (sec.isConnected) gateSection(sec, runId, ng, marks, banner);
    }, err => { sec.replaceChildren(el("h2", {}, "Gate: ", chip("unknown", "closed")), el("p", {}, String(err.message || err))); });
  }
  /* Above a run's rows: the run's completeness check as its gate decided it (the same answer the
     gate section shows). Failed: the rows come from files the check rejects, and the page says so;
     "checking…" until the decision is known (the rows are never held back for it). */
  function checkBanner(box, c) {
    const state = c && c.state ? c.state : "checking";
    box.setAttribute("data-check", state);
    box.replaceChildren(...(state === "failed"
      ? ["These rows come from files that fail the run's check (" + c.detail + "): they are not the run's verdicts as recorded; the gate is closed."]
      : state === "checking" ? [chip("checking…", "checking"), " The run's check (run_cases.py --verify, as the gate reads it) has not answered yet: the rows below are the run's files as they are."]
      : []));
  }
  /* the run's gate on the case and compare pages: the same decision as the run page (its first
     reason and how many more), "checking…" until the server has evaluated it */
  function gateLine(runId) {
    const line = el("p", {class: "gate-line", "data-gate": "checking"}, "gate of run " + runId + ": ", chip("checking…", "checking"));
    const fill = g => {
      const known = g.gate !== "checking";
      line.setAttribute("data-gate", known ? g.gate : "checking");
      line.replaceChildren("gate of ", el("a", {href: "#/run/" + E(runId)}, "run " + runId), ": ", known ? chip(g.gate, g.gate) : chip("checking…", "checking"),
        known && g.reasons.length ? " " + g.reasons[0] + (g.reasons.length > 1 ? " (and " + (g.reasons.length - 1) + " more)" : "") : "");
      if (!known && !BUNDLE) load("/api/run/" + E(runId) + "/gate", {wait: "3"}).then(fill, () => {});
    };
    load("/api/run/" + E(runId)).then(doc => fill(doc.gate), () => line.replaceChildren("gate of run " + runId + ": ", chip("unknown", "closed")));
    return line;
  }
  function runPage(runId, q) {
    return Promise.all([load("/api/run/" + E(runId)), BUNDLE ? bundlePage(runId, q) : load("/api/run/" + E(runId) + "/cases", q)]).then(([run, page]) => {
      const decision = el("section", {id: "gate"});
      const banner = el("div", {id: "check-banner", class: "check-banner"});
      gateSection(decision, runId, run.gate, run.run.marks, banner);
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
        sel("conversation", ["yes", "no"]), sel("sort", ["id", "title", "verdict", "failure", "unit", "latency"]),
        el("label", {}, "text ", el("input", {name: "q", value: q.q || "", type: "search"})), el("button", {type: "submit"}, "Filter"));
      const counts = el("p", {class: "counts", id: "counts"}, el("span", {}, "showing " + page.cases.length + " of " + page.matched + " matching, " + page.total + " cases"),
        Object.entries(page.counts).map(([k, v]) => el("span", {}, chip(k), v)),
        page.holdout.n ? el("span", {}, "holdout: " + page.holdout.n + " (counts only: " + page.holdout.pass + " pass, " + page.holdout.fail + " fail)") : null);
      /* a row says what the case is (title, the input's first line), why it failed (the first
         failing layer's reason in words) and where it is written (file:line); headers sort */
      const sortBy = key => {
        const desc = q.sort === key && q.desc !== "1" ? "1" : "";
        const nq = Object.assign({}, q, {sort: key}); delete nq.page; if (desc) nq.desc = desc; else delete nq.desc;
        location.hash = "#/run/" + E(runId) + "?" + new URLSearchParams(nq).toString();
      };
      const head = [["case", "title"], ["verdict", "verdict"], ["why it failed", "failure"], ["case file", null], ["unit", "unit"], ["latency", "latency"]]
        .map(([label, key]) => el("th", key ? {class: "sortable", "data-sort": key} : {}, key ? el("a", {href: "#/", on: {click: ev => { ev.preventDefault(); sortBy(key); }}},
          label, q.sort === key ? (q.desc === "1" ? " \u25be" : " \u25b4") : "") : label));
      const table = el("table", {id: "cases"}, el("tr", {}, head),
        page.cases.map(c => el("tr", {class: "case-row" + (c.verdict === "pass" ? "" : " bad")},
          el("td", {class: "what"}, el("a", {href: "#/case/" + E(runId) + "/" + E(c.case_id), class: "clamp", title: vis(c.title || c.case_id)}, c.title || c.case_id),
            c.title ? el("span", {class: "cid"}, " " + c.case_id) : null, c.multi_turn ? chip("conversation", "mark") : null,
            c.input ? el("div", {class: "input"}, c.input) : null),
          el("td", {}, chip(c.verdict)),
          el("td", {class: "why"}, c.failure ? [c.failure.layer ? chip(c.failure.layer, "layer") : null, el("span", {class: "reason"}, (c.failure.turn ? "turn " + c.failure.turn + ": " : "") + c.failure.sentence)] : ""),
          el("td", {class: "src", "data-case": c.case_id}, ""),
          el("td", {}, c.unit || ""), el("td", {class: "nowrap"}, typeof c.latency_ms === "number" ? Math.round(c.latency_ms) + " ms" : ""))));
      /* the failing rows' case file:line, asked once the rows are painted (the rows' own request
         reads no case file) */
      const failing = page.cases.filter(c => c.failure).map(c => c.case_id);
      if (failing.length && !BUNDLE) load("/api/run/" + E(runId) + "/sources", {ids: failing.join(",")}).then(d => {
        for (const [cid, src] of Object.entries(d.sources || {})) {
          const cell = table.querySelector('td.src[data-case="' + CSS.escape(cid) + '"]');
          if (cell) cell.replaceChildren(src.path + (src.line ? ":" + src.line : ""));
        }
        table.setAttribute("data-sources", "ready");
      }, () => {}); else table.setAttribute("data-sources", "ready");
      const pager = el("p", {class: "pager"});
      {
        const go = n => { location.hash = "#/run/" + E(runId) + "?" + new URLSearchParams(Object.assign({}, q, {page: n})).toString(); };
        if (page.page > 0) pager.append(el("button", {on: {click: () => go(page.page - 1)}}, "previous"));
        pager.append("page " + (page.page + 1) + " of " + Math.max(1, Math.ceil(page.matched / page.size)));
        if ((page.page + 1) * page.size < page.matched) pager.append(el("button", {id: "next", on: {click: () => go(page.page + 1)}}, "next"));
      }
      return [el("h1", {}, "Run " + runId), banner, decision, el("h2", {}, "Cases"), form, counts, table, pager];
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
  /* the failure first: each layer that did not pass, its reason in words, expected beside actual */
  function failureCards(fs) {
    if (!fs || !fs.length) return el("p", {class: "ok-line"}, "Every scored layer passed.");
    return el("div", {id: "failures"}, fs.map(f => el("div", {class: "failure " + f.verdict},
      el("h3", {}, chip(f.layer, "layer"), chip(f.verdict), f.provisional ? chip("provisional (not gating)", "mark") : null, " ", el("span", {class: "reason"}, f.sentence)),
      el("div", {class: "sides"}, el("div", {class: "expected"}, el("div", {class: "label"}, "expected"), el("div", {}, f.expected || "(this layer's expectation is not in expect.json)")),
        el("div", {class: "actual"}, el("div", {class: "label"}, "actual"), el("div", {}, f.actual || f.sentence))),
      checksTable(f))));
  }
  function checksTable(f) {  /* the checks, when there is more to read than the sentence says */
    const cs = f.checks || [];
    if (!cs.length || (cs.length === 1 && !cs[0].expected && f.sentence.includes(String(cs[0].why || "")))) return null;
    const withExp = cs.some(c => c.expected);
    return el("table", {class: "checks"}, el("tr", {}, ["check", "", withExp ? "expected" : null, "why"].filter(h => h !== null).map(h => el("th", {}, h))),
      cs.map(c => el("tr", {}, el("td", {}, c.check), el("td", {}, chip(c.status || "?")), withExp ? el("td", {}, c.expected || "") : null,
        el("td", {}, c.why === "tool_not_called" ? "not called" : c.why || ""))));
  }
  function folded(title, node, open) {
    const d = el("details", {class: "fold"}, el("summary", {}, title), node);
    if (open) d.setAttribute("open", "");
    return d;
  }
  function layerJson(v) {
    if (!v || !v.layers) return null;
    return el("div", {id: "layers"}, Object.entries(v.layers).filter(([, l]) => l.verdict !== "n/a").map(([name, l]) =>
      folded([name + " ", chip(l.verdict)], json(l))));
  }
  function answerBeside(answer, base, label) {
    const mine = el("pre", {class: "answer"}, answer === null || answer === undefined ? "(no answer)" : vis(answer));
    if (!base) return mine;
    return el("div", {class: "sides beside"}, el("div", {}, el("div", {class: "label"}, label || "this run"), mine),
      el("div", {}, el("div", {class: "label"}, "baseline " + base.run_id + (base.verdict ? " (" + base.verdict + ")" : "")),
        el("pre", {class: "answer-baseline"}, base.answer === null || base.answer === undefined ? "(no answer)" : vis(base.answer))));
  }
  function requestBody(p) { return p.request && (p.request.body !== undefined ? p.request.body : p.request); }
  function userSaid(p) {
    const b = requestBody(p);
    const msgs = b && Array.isArray(b.messages) ? b.messages.filter(m => m && m.role === "user") : [];
    if (msgs.length) return String(msgs[msgs.length - 1].content ?? "");
    if (b && typeof b === "object") for (const k of ["message", "input", "query", "prompt", "question", "text"]) if (typeof b[k] === "string") return b[k];
    return null;
  }
  /* a conversation: the failing turn open, passing turns folded; the baseline's answer beside */
  function turn(t, failedTurn, base) {
    const v = (t.verdict || {}).verdict || "?";
    const said = userSaid(t) || ((t.simulator || {}).turn || {}).message || "";
    const open = t.turn === failedTurn || (failedTurn == null && v !== "pass");
    const bt = base && base.turns ? base.turns[String(t.turn)] : null;
    const d = el("details", {class: "turn", id: "turn-" + t.turn},
      el("summary", {}, "turn " + t.turn + " ", chip(v), t.turn === failedTurn ? chip("failed here", "fail") : null, " ", el("span", {class: "said"}, said.length > 140 ? said.slice(0, 140) + "…" : said)),
      simTurn(t.simulator, "simulator-turn-" + t.turn),
      el("h4", {}, "answer"), answerBeside(t.answer, bt ? {run_id: base.run_id, verdict: bt.verdict, answer: bt.answer} : null),
      folded("request", json(requestBody(t))), el("h4", {}, "trajectory"), timeline(t.trajectory), layerJson(t.verdict),
      t.judge ? [el("h4", {}, "judge calls at turn " + t.turn), judge(t.judge, "judge-turn-" + t.turn)] : null);
    if (open) d.setAttribute("open", "");
    return d;
  }
  /* an agent case: what the agent left in its workdir (workdir.json), each changed file with its
     status and its unified diff, added lines green, removed lines red; text only, never markup */
  const WD_WORDS = {added: "added", modified: "modified", deleted: "deleted"};
  function patchLines(text) {
    return String(text).split("\n").map(line => el("span", {class: "dl " + (line.startsWith("@@") ? "hunk" :
      line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("\\") ? "meta" : "ctx")}, line || " "));
  }
  function workdirDiff(w, checkShown) {  /* checkShown: the check's failure card already says how it exited */
    if (!w || typeof w !== "object") return null;
    const files = (w.patch && Array.isArray(w.patch.files)) ? w.patch.files : [];
    const chk = w.check && typeof w.check === "object" && !checkShown ? w.check : null;
    const checkLine = chk ? el("p", {class: "note wd-check"}, "check ", el("span", {class: "src"}, (chk.command || []).join(" ")),
      " exited " + (chk.exit_code ?? "–") + (chk.error ? " · " + chk.error : "")) : null;
    if (!files.length) return el("div", {id: "workdir"}, el("p", {class: "note"}, "The agent changed no file in its workdir."), checkLine);
    const blocks = files.map(f => el("div", {class: "wd-file"},
      el("div", {class: "wd-head"}, chip(WD_WORDS[f.status] || String(f.status), "wd-" + String(f.status).replace(/[^a-z]/g, "")), " ",
        el("span", {class: "src"}, f.path), f.note ? el("span", {class: "note"}, " · " + f.note) : null),
      f.diff ? el("pre", {class: "patch"}, patchLines(f.diff)) : null));
    const list = el("ul", {class: "wd-files"}, files.map((f, i) => el("li", {class: "jump", title: "show its diff", on: {click: () => blocks[i].scrollIntoView()}},
      chip(WD_WORDS[f.status] || String(f.status), "wd-" + String(f.status).replace(/[^a-z]/g, "")), " ",
      el("span", {class: "src"}, f.path), el("span", {class: "note"}, " +" + (f.added ?? 0) + " \u2212" + (f.removed ?? 0)))));
    return el("div", {id: "workdir"}, list, checkLine, blocks,
      w.patch && w.patch.clipped ? el("p", {class: "note"}, "The diff was clipped (too many lines or files); workdir.json in the raw files holds what was kept.") : null);
  }
  function casePage(runId, caseId, q) {
    return load("/api/case/" + E(runId) + "/" + E(caseId), q && q.baseline ? {baseline: q.baseline} : null).then(c => {
      const v = c.verdict || {};
      const src = c.source;
      const out = [el("p", {}, el("a", {href: "#/run/" + E(runId)}, "\u2190 run " + runId)), gateLine(runId),
        el("h1", {}, chip(v.verdict || "?"), " ", el("span", {class: "clamp", id: "case-title", title: vis(v.title || caseId)}, v.title || caseId)),
        el("p", {class: "note", id: "case-facts"}, "case " + caseId + " · unit " + (v.unit || "–") + " · category " + (v.category || "–") +
          " · latency " + ms(v.latency_ms) + " · attempts " + (v.attempts ?? "–"), src ? [" · ", el("span", {class: "src"}, src.path + (src.line ? ":" + src.line : ""))] : null)];
      if (v.input_text) out.push(el("div", {class: "input-block"}, el("span", {class: "label"}, "input "), v.input_text));
      out.push(el("h2", {}, v.verdict === "pass" ? "Result" : "Why it failed"), failureCards(c.failures));
      if (c.workdir) {
        const n = ((c.workdir.patch || {}).files || []).length;
        out.push(el("h2", {}, "What the agent changed in its workdir (" + n + (n === 1 ? " file" : " files") + ")"),
          workdirDiff(c.workdir, (c.failures || []).some(f => f.layer === "check")));
      }
      if (c.turns.length) {
        out.push(el("h2", {}, "Conversation (" + c.turns.length + (c.turns.length === 1 ? " turn" : " turns") + (v.failed_turn ? ", failed at turn " + v.failed_turn : "") + ")"),
          el("div", {id: "conversation"}, c.turns.map(t => turn(t, v.failed_turn, c.baseline))));
      } else {
        out.push(el("h2", {}, "Request"), json(requestBody(c)), el("h2", {}, "Answer"), answerBeside(c.answer, c.baseline),
          el("h2", {}, "Trajectory"), timeline(c.trajectory));
      }
      if (c.simulator) out.push(el("h2", {}, "Simulated user"), simulator(c.simulator));
      if (c.judge) out.push(el("h2", {}, "Judge"), judge(c.judge)); else out.push(el("h2", {}, "Judge"), el("p", {id: "judge"}, "Not judged."));
      if (c.repeats.length) out.push(el("h2", {}, "Repeats (k = " + c.repeats.length + ")"),
        el("div", {class: "sides", id: "repeats"}, c.repeats.map(r => el("div", {}, el("h3", {}, "repeat " + r.n + " ", chip((r.verdict || {}).verdict || "?")),
          el("pre", {class: "answer"}, vis(r.answer || "")), timeline(r.trajectory)))));
      out.push(el("h2", {}, "Every layer (JSON)"), layerJson(v) || el("p", {}, "(no verdict)"),
        el("h2", {}, "The case's source"), src ? folded([el("span", {class: "src"}, src.path + (src.line ? ":" + src.line : "")), " (as it is on disk now)"], el("pre", {id: "source"}, vis(src.text)))
          : el("p", {class: "note"}, "The case's YAML file was not found under the state dir's datasets/."),
        folded("expect.json", json(c.expect)), folded("raw files (" + c.files.length + ")",
        el("ul", {}, c.files.map(f => el("li", {}, BUNDLE ? f : el("a", {href: "raw/" + f.split("/").map(E).join("/")}, f))))));
      return out;
    });
  }

  /* ---------------------------------------------------------------- compare, history */
  function money(x, cur) { return typeof x === "number" ? (Math.abs(x) < 0.01 && x !== 0 ? x.toPrecision(3) : x.toFixed(4)) + (cur ? " " + cur : "") : "–"; }   /* 0.0005 USD, as the gate words it; signed: −0.0005 USD */
  /* under 10 ms a tenth is shown, so 6.4 -> 5.8 ms never reads "6 ms -> 6 ms (-1 ms)" */
  function ms(x) { return typeof x === "number" ? (Math.abs(x) >= 1000 ? (x / 1000).toFixed(2) + " s" : Math.abs(x) < 10 ? x.toFixed(1) + " ms" : Math.round(x) + " ms") : "–"; }
  /* a change that rounds to nothing as shown (0.4 ms: "0 ms") is ±, never "−0 ms" */
  function shownZero(x, f) { return typeof x !== "number" || x === 0 || !/[1-9]/.test(f(Math.abs(x)).replace(/e[-+]?[0-9]+/i, "")); }
  function signed(x, f) { return typeof x === "number" ? (shownZero(x, f) ? "\u00b1" : x > 0 ? "+" : "\u2212") + f(Math.abs(x)) : "–"; }
  function deltaCell(x, f) { return el("td", {class: "delta " + (shownZero(x, f) ? "" : x > 0 ? "up" : "down")}, signed(x, f)); }
  /* the answer's diff (deleted words struck out on the base side, inserted ones marked on the
     candidate's) and the tool calls side by side, the first differing call marked */
  function answerDiff(a) {
    if (!a || !a.changed) return null;
    const left = el("div", {}, el("div", {class: "label"}, "base")), right = el("div", {}, el("div", {class: "label"}, "candidate"));
    if (a.diff && Array.isArray(a.diff.ops)) {
      for (const op of a.diff.ops) {
        if (op.op === "equal") { left.append(vis(op.base) + " "); right.append(vis(op.candidate) + " "); continue; }
        if (op.base) left.append(el("del", {}, op.base), " ");
        if (op.candidate) right.append(el("ins", {}, op.candidate), " ");
      }
      if (a.diff.truncated) right.append(el("span", {class: "note"}, " …(diff cut)"));
    } else { left.append(vis(a.base ?? "(no answer)")); right.append(vis(a.candidate ?? "(no answer)")); }
    return [el("div", {class: "what"}, "answer changed"), el("div", {class: "sides diff answer-diff"}, left, right)];
  }
  function trajDiff(t) {
    if (!t || !t.changed) return null;
    const first = (t.first_difference || {}).index;
    const calls = list => list && list.length ? el("ol", {class: "calls"}, list.map((c, i) => el("li", i === first ? {class: "first"} : {}, typeof c === "string" ? c : JSON.stringify(c)))) : el("em", {}, "no tool call");
    return [el("div", {class: "what"}, "trajectory changed: " + (t.first_line || "")),
      el("div", {class: "sides diff traj-diff"}, el("div", {}, el("div", {class: "label"}, "base"), calls(t.base)), el("div", {}, el("div", {class: "label"}, "candidate"), calls(t.candidate)))];
  }
  function pairCard(p, base, cand) {
    const v = p.verdict || {};
    const chips = [chip(String(v.base)), " \u2192 ", chip(String(v.candidate))];
    if (p.rubric_only) chips.push(chip("only a rubric sees it", "mark"));
    for (const f of p.judge_flips || []) chips.push(chip("judge flip on " + f.layer + ": " + f.base + " \u2192 " + f.candidate + (f.provisional ? " (provisional rubric: not gating)" : ""), f.provisional ? "mark" : "fail"));
    if (p.case === "changed") chips.push(chip("case edited", "mark"));
    if (p.gating === false) chips.push(chip("gating: false"));
    if (p.canary) chips.push(chip("canary"));
    const c = p.cost_latency;   /* the pair's own cost and latency, when they changed (compare_runs.py) */
    const exp = p.expectation;
    return el("div", {class: "pair", "data-case": p.case_id},
      el("h3", {}, el("a", {href: "#/case/" + E(cand) + "/" + E(p.case_id) + "?baseline=" + E(base)}, p.title || p.case_id), p.title ? el("span", {class: "cid"}, " " + p.case_id) : null),
      el("div", {}, chips), (p.layers_changed || []).length ? el("div", {class: "what"}, "layers: ", p.layers_changed.map(l => chip(l.layer + ": " + l.base + " \u2192 " + l.candidate, l.candidate === "fail" ? "fail" : l.candidate === "pass" ? "pass" : ""))) : null,
      exp ? el("div", {class: "what"}, "the case was edited: " + (exp.note || (exp.keys || []).map(k => k.key + " " + JSON.stringify(k.base) + " \u2192 " + JSON.stringify(k.candidate)).join("; "))) : null,
      answerDiff(p.answer), trajDiff(p.trajectory),
      c ? el("div", {class: "what cost-line"}, "app cost " + money(c.cost[0]) + " \u2192 " + money(c.cost[1]) + " (" + signed(c.cost[2], x => money(x)) + ") · latency " + ms(c.latency_ms[0]) + " \u2192 " + ms(c.latency_ms[1]) + " (" + signed(c.latency_ms[2], ms) + ")") : null);
  }
  /* what each figure covers, in assay.stats.cost_words' words (the API sends them: one definition) */
  function costLabel(w, key) { return ((w || {})[key] || {}).label || key; }
  function judgeNotes(cl) {
    return [["base", cl.base], ["candidate", cl.candidate]].filter(([, s]) => s && s.judge_note)
      .map(([role, s]) => "the " + role + ": " + s.judge_note + " — so its " + costLabel(cl.words, "cost_per_case_with_judge") + ", what gate.py's cost budget checks, is unknown too");
  }
  function costTable(cl) {
    if (!cl || cl.error) return el("p", {class: "note"}, "Cost and latency: " + ((cl || {}).error || "not known"));
    const cur = cl.currency || "", both = cl.both_traced || {};
    const judged = (cl.base.judge_calls || 0) + (cl.candidate.judge_calls || 0) > 0;
    const judge = (s) => s.judge_calls ? (typeof s.judge_cost_per_case === "number" ? money(s.judge_cost_per_case, cur) : "unknown") : "no judge call";
    const count = x => String(x ?? "–");
    const rows = [[costLabel(cl.words, "cost_per_case"), s => money(s.cost_per_case, cur), cl.delta.cost_per_case, x => money(x, cur)],
      judged ? [costLabel(cl.words, "judge_cost_per_case"), judge, cl.delta.judge_cost_per_case, x => money(x, cur)] : null,
      judged ? [costLabel(cl.words, "cost_per_case_with_judge"), s => money(s.cost_per_case_with_judge, cur), cl.delta.cost_per_case_with_judge, x => money(x, cur)] : null,
      ["app cost over the " + (both.cases ?? "–") + " case(s) traced in both runs", (s, role) => money(((both[role] || {}).cost_total), cur), (both.delta || {}).cost_total, x => money(x, cur)],
      [costLabel(cl.words, "input_tokens_per_case"), s => count(s.input_tokens_per_case), cl.delta.input_tokens_per_case, count],
      [costLabel(cl.words, "output_tokens_per_case"), s => count(s.output_tokens_per_case), cl.delta.output_tokens_per_case, count],
      ["traced cases", s => count(s.traced_cases), cl.delta.traced_cases, count, "neutral"],
      [costLabel(cl.words, "latency") + " p50", s => ms(s.latency_p50_ms), cl.delta.latency_p50_ms, ms],
      [costLabel(cl.words, "latency") + " p95", s => ms(s.latency_p95_ms), cl.delta.latency_p95_ms, ms]].filter(Boolean);
    const covers = Object.values(cl.words || {}).filter(w => judged || !/judge/.test(w.label)).map(w => el("li", {}, el("strong", {}, w.label), ": " + w.covers));
    return el("div", {}, el("table", {id: "cost", class: "narrow"}, el("tr", {}, ["", "base", "candidate", "change"].map(h => el("th", {}, h))),
      rows.map(([label, f, d, fd, neutral]) => el("tr", {}, el("td", {}, label), el("td", {}, f(cl.base, "base")), el("td", {}, f(cl.candidate, "candidate")),
        neutral ? el("td", {class: "delta"}, signed(d, fd)) : deltaCell(d, fd)))),
      el("ul", {class: "notes", id: "cost-notes"}, [cl.traced_note, ...[["base", cl.base], ["candidate", cl.candidate]].filter(([, s]) => s.cost_note).map(([role, s]) => "the " + role + ": " + s.cost_note), ...judgeNotes(cl), cl.note].filter(Boolean).map(x => el("li", {}, x))),
      folded("what each figure covers", el("ul", {class: "note", id: "cost-covers"}, covers)));
  }
  /* the paired statistics in the words the compare document carries (assay.stats.paired) */
  const STAT_WORDS = /(_note|_warning|advice|_explanation|sub_mde_keep)$/;
  function statsBlock(d) {
    const s = d.stats;
    if (!s) return el("p", {class: "note", id: "stats"}, "Paired statistics: " + (d.stats_note || "none"));
    return el("div", {id: "stats"}, el("p", {}, el("strong", {}, s.verdict_phrase || s.verdict_words || ""), " — pass rate " + pct(s.baseline_pass_rate) + " \u2192 " + pct(s.candidate_pass_rate) + " over " + s.n + " paired cases; fixed " + s.fixed_by_candidate + ", broken " + s.broken_by_candidate + "."),
      el("ul", {class: "stat-words"}, Object.entries(s).filter(([k, x]) => typeof x === "string" && STAT_WORDS.test(k)).map(([, x]) => el("li", {}, x))),
      folded("method", el("p", {class: "note"}, [s.method, s.mde_method, s.decision_rule].filter(Boolean).join(" · "))), d.stats_pairs ? el("p", {class: "note"}, "over " + d.stats_pairs) : null);
  }
  const WORSE = ["newly_failing", "changed_unscored"], BETTER = ["newly_passing"];
  /* the change in the app's cost per traced case, labelled as such; beside it the judge's, or why it
     is unknown (a drop in the app's cost is never shown alone when the gate's budget cannot be checked) */
  function costBox(cl) {
    const ok = cl && cl.delta, cur = ok ? cl.currency : "";
    const judged = ok && (cl.base.judge_calls || 0) + (cl.candidate.judge_calls || 0) > 0;
    const unknown = ok ? judgeNotes(cl) : [];
    return el("div", {class: "box", id: "cost-box"}, el("div", {class: "big"}, ok ? signed(cl.delta.cost_per_case, x => money(x, cur)) : "–"),
      ok ? costLabel(cl.words, "cost_per_case") : "cost per case",
      judged ? el("div", {class: unknown.length ? "note warn" : "note"}, unknown.length
        ? "judge's cost unknown in the " + [["base", cl.base], ["candidate", cl.candidate]].filter(([, s]) => s.judge_note).map(([r]) => r).join(" and ") + ": not in this figure, and gate.py's cost budget cannot be checked"
        : "judge " + signed(cl.delta.judge_cost_per_case, x => money(x, cur)) + " per case, not in this figure") : null,
      ok && cl.traced_note ? el("div", {class: "note warn"}, "traced cases differ: " + cl.base.traced_cases + " \u2192 " + cl.candidate.traced_cases) : null,
      el("div", {class: "note"}, "p95 latency " + (ok ? signed(cl.delta.latency_p95_ms, ms) : "–")));
  }
  function comparePage(base, cand) {
    return load("/api/compare/" + E(base) + "/" + E(cand)).then(d => {
      if (d.error) return [el("h1", {}, "Compare"), el("p", {class: "reasons", id: "compare-error"}, d.error)];
      if (d.checking) {  /* a side's check not answered yet: no diff is shown as final; asked again */
        const box = el("p", {id: "compare-checking", class: "check-banner", "data-check": "checking"}, chip("checking…", "checking"), " " + d.words);
        if (!BUNDLE) setTimeout(() => { if (box.isConnected) render(); }, 1000);
        return [el("h1", {}, "Compare " + base + " \u2192 " + cand), box];
      }
      const cl = d.cost_latency, counts = d.counts || {};
      const n = list => list.reduce((a, b) => a + (counts[b] || 0), 0);
      const summary = el("div", {id: "summary", class: "summary"},
        el("div", {class: "box worse"}, el("div", {class: "big"}, String(n(WORSE))), "got worse", el("div", {class: "note"}, (counts.newly_failing || 0) + " newly failing")),
        el("div", {class: "box better"}, el("div", {class: "big"}, String(n(BETTER))), "got better", el("div", {class: "note"}, (counts.newly_passing || 0) + " newly passing")),
        el("div", {class: "box"}, el("div", {class: "big"}, String(d.judge_flips || 0)), "judge flips"),
        costBox(cl));
      const out = [el("h1", {}, "Compare " + base + " \u2192 " + cand), gateLine(cand), el("p", {id: "headline", class: "headline"}, d.headline,
          d.stats && d.stats.verdict_phrase ? el("span", {class: "phrase"}, " · " + d.stats.verdict_phrase) : null), summary,
        (d.unchecked || []).length ? el("ul", {class: "notes", id: "compare-unchecked"}, d.unchecked.map(x => el("li", {}, x))) : null,
        (d.notes || []).length ? el("ul", {class: "notes", id: "compare-notes"}, d.notes.map(x => el("li", {}, x))) : null];
      for (const [bucket, pairs] of Object.entries(d.buckets || {})) {
        if (!Array.isArray(pairs) || !pairs.length || bucket === "still_passing") continue;
        out.push(folded(el("span", {class: "bucket-title"}, bucket + " (" + pairs.length + ")"),
          [el("p", {class: "note"}, (d.meaning || {})[bucket] || ""), pairs.slice(0, 200).map(p => pairCard(p, base, cand)),
           pairs.length > 200 ? el("p", {class: "note"}, "and " + (pairs.length - 200) + " more (compare_runs.py writes them all)") : null],
          bucket !== "still_failing" && bucket !== "only_in_base" && bucket !== "only_in_candidate"));
        out[out.length - 1].setAttribute("id", "bucket-" + bucket);
      }
      out.push(el("h2", {}, "Cost and latency"), costTable(cl), el("h2", {}, "Paired statistics"), statsBlock(d),
        el("h2", {}, "Every bucket"), el("table", {id: "buckets"}, Object.entries(counts).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v), el("td", {class: "note meaning"}, (d.meaning || {})[k] || "")))));
      return out;
    });
  }
  /* history: inline SVG trend charts per series (pass rate with its Wilson band, cost per case,
     p95 latency); regressions and fixes apart from flaky cases */
  const SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...kids) {
    const n = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    for (const k of kids.flat(Infinity)) if (k != null) n.appendChild(k instanceof Node ? k : document.createTextNode(vis(k)));
    return n;
  }
  function chart(title, runs, value, band, fmt, cls) {
    const W = 360, H = 150, R = 10, T = 22, B = 22;
    const pts = runs.map((r, i) => ({i: i, r: r, y: value(r), b: band ? band(r) : null})).filter(p => typeof p.y === "number");
    const box = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", class: "chart " + cls, "aria-label": title});
    box.append(svg("text", {x: 4, y: 14, class: "ct"}, title));
    if (!pts.length) { box.append(svg("text", {x: 56, y: H / 2, class: "empty"}, "not measured in these runs")); return box; }
    let lo = Math.min(...pts.map(p => p.b ? p.b[0] : p.y)), hi = Math.max(...pts.map(p => p.b ? p.b[1] : p.y));
    if (band) { lo = Math.min(lo, 0); hi = Math.max(hi, 1); } else { lo = Math.min(lo, 0); if (hi === lo) hi = lo + 1; }
    /* the plot starts right of its widest axis label (0.0000974 needs more room than 26 ms) */
    const L = Math.max(56, 10 + 6.5 * Math.max(fmt(lo).length, fmt(hi).length));
    const x = i => L + (runs.length > 1 ? i * (W - L - R) / (runs.length - 1) : (W - L - R) / 2);
    const y = v => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
    for (const v of [lo, hi]) box.append(svg("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid"}), svg("text", {x: L - 4, y: y(v) + 4, class: "axis", "text-anchor": "end"}, fmt(v)));
    /* a run with no figure (no scored case, no price, no timing) breaks the line and the band: nothing is
       drawn through it as if it had been measured between its neighbours */
    const segs = [];
    for (const p of pts) { const s = segs[segs.length - 1]; if (s && s[s.length - 1].i === p.i - 1) s.push(p); else segs.push([p]); }
    for (const s of segs) {
      if (band && s.length > 1) {
        const up = s.map(p => x(p.i) + "," + y(p.b[1])), down = s.slice().reverse().map(p => x(p.i) + "," + y(p.b[0]));
        box.append(svg("polygon", {points: up.concat(down).join(" "), class: "band"}));
      } else if (band && s[0].b) box.append(svg("line", {x1: x(s[0].i), x2: x(s[0].i), y1: y(s[0].b[0]), y2: y(s[0].b[1]), class: "band-bar"}));
      if (s.length > 1) box.append(svg("polyline", {points: s.map(p => x(p.i) + "," + y(p.y)).join(" "), class: "line"}));
    }
    /* a run whose completeness check never answered (no kept answer, too big to check here) is a hollow point that says so */
    for (const p of pts) box.append(svg("circle", {cx: x(p.i), cy: y(p.y), r: 3.5, class: "pt" + ((p.r.gate ? p.r.gate === "closed" : p.r.gating_failures) ? " bad" : "") + (p.r.verified === false ? " unverified" : "")}, svg("title", {}, p.r.run_id + ": " + fmt(p.y) + (p.b ? " [" + fmt(p.b[0]) + ", " + fmt(p.b[1]) + "]" : "") + (p.r.verified === false ? "; " + NOT_VERIFIED : ""))));
    const last = pts[pts.length - 1];
    box.append(svg("text", {x: W - R, y: 14, class: "last", "text-anchor": "end"}, "last " + fmt(last.y)));
    return box;
  }
  const GLYPH = {pass: "\u2713", fail: "\u2717"};
  const NOT_VERIFIED = "not verified (run_cases.py --verify not run on it)";
  /* why a case is flaky, with its count (history.flaky): its repeats disagreed within runs (k > 1; its pass^k
     verdict may have flipped once, or never), or its verdicts flipped between pass and fail and back */
  function flakyWords(f) {
    const n = (f.repeats_disagreed_in || []).length, flips = f.flips === 1 ? "1 flip" : f.flips + " flips";
    return n ? "repeats disagreed in " + n + (n === 1 ? " run" : " runs") + (f.flips ? ", " + flips : "")
      : "flipped back and forth: " + flips;
  }
  /* under the charts: what the cost figure covers (assay.stats.cost_words), and the judge's part */
  function costCovers(w, runs, judged) {
    const unknown = runs.filter(r => r.judge_calls && typeof r.judge_cost_per_case !== "number");
    return el("p", {class: "note cost-covers"}, costLabel(w, "cost_per_case") + ": " + (((w || {}).cost_per_case || {}).covers || "") + ". ",
      judged ? costLabel(w, "cost_per_case_with_judge") + " (" + (((w || {}).cost_per_case_with_judge || {}).covers || "") + ") is in the runs table" +
        (unknown.length ? "; the judge's cost is unknown in " + unknown.map(r => r.run_id).join(", ") + ", so gate.py's cost budget could not be checked there" : "") + ". " : "",
      "p95 " + costLabel(w, "latency") + ": " + (((w || {}).latency || {}).covers || "") + ".");
  }
  function historyPage() {
    return load("/api/history").then(h => {
      if (h.error) return [el("h1", {}, "History"), el("p", {}, h.error)];
      const series = (h.series || []).map(s => {
        const runs = s.runs || [];
        const curs = [...new Set(runs.map(r => r.currency).filter(Boolean))], cur = curs.length > 1 ? "mixed: " + curs.join(", ") : curs[0] || "";
        const judged = runs.some(r => r.judge_calls);
        const judgeCell = r => !r.judge_calls ? "no judge call" : typeof r.judge_cost_per_case === "number" ? money(r.judge_cost_per_case, r.currency) : "unknown: " + (r.judge_cost_note || "");
        const rows = runs.slice().reverse().map(r => el("tr", {}, el("td", {}, el("a", {href: "#/run/" + E(r.run_id)}, r.run_id)),
          el("td", {}, pct(r.pass_rate), r.interval ? " [" + pct(r.interval[0]) + ", " + pct(r.interval[1]) + "]" : ""), el("td", {}, r.gating_failures),
          el("td", {}, money(r.cost_per_case, r.currency)), judged ? el("td", {class: "judge-cost"}, judgeCell(r)) : null,
          judged ? el("td", {}, money(r.cost_per_case_with_judge, r.currency)) : null, el("td", {}, ms(r.p95_latency_ms)), el("td", {class: "gate"}, r.gate === "closed" ? "gate closed: " + (r.gate_reasons || [])[0] : r.gate === "open" ? "gate open" : ""),
          el("td", {class: "checked"}, r.verified === false ? NOT_VERIFIED : "--verify clean"), el("td", {}, r.clean === false ? "not clean: " + r.not_clean : "")));
        const changed = s.changed || [], flaky = s.flaky || [];
        return el("section", {class: "series"}, el("h2", {}, s.name), s.started_by ? el("p", {class: "note"}, "new series: " + s.started_by) : null,
          el("div", {class: "charts"}, chart("pass rate (95 % Wilson band)", runs, r => r.pass_rate, r => r.interval, pct, "rate"),
            chart(costLabel(h.cost_words, "cost_per_case") + (cur ? " (" + cur + ")" : ""), runs, r => r.cost_per_case, null, v => money(v), "cost"),
            chart("p95 " + costLabel(h.cost_words, "latency"), runs, r => r.p95_latency_ms, null, ms, "latency")),
          costCovers(h.cost_words, runs, judged),
          s.drift ? el("p", {class: s.drift.flagged ? "reasons" : "note"}, "drift " + (s.drift.flagged ? "FLAGGED" : "not flagged") + ": " + (s.drift.reason || "")) : null,
          s.holdout ? el("p", {class: "note"}, s.note || "holdout: aggregate only") : [
            el("h3", {}, "Regressions and fixes (changed with the app and stayed): " + changed.length),
            changed.length ? el("ul", {class: "changed"}, changed.slice(0, 100).map(c => el("li", {}, chip(c.kind, c.kind === "regression" ? "fail" : "pass"), " ", runs.length ? el("a", {href: "#/case/" + E(runs[runs.length - 1].run_id) + "/" + E(c.case_id)}, c.case_id) : c.case_id, el("span", {class: "note"}, " since " + c.since_run + "  " + c.sequence.map(v => GLYPH[v] || "\u00b7").join(" ") + ((c.repeats_disagreed_in || []).length ? " (its repeats split in " + c.repeats_disagreed_in[0] + " as it changed)" : ""))))) : el("p", {class: "note"}, "none"),
            el("h3", {}, "Flaky (repeats disagreed in a run, or flipped back and forth): " + flaky.length),
            flaky.length ? el("ul", {class: "flaky"}, flaky.slice(0, 100).map(f => el("li", {}, f.case_id + " ", chip(flakyWords(f), "mark"), el("span", {class: "note"}, "  " + f.sequence.map(v => GLYPH[v] || "\u00b7").join(" "))))) : el("p", {class: "note"}, "none")],
          folded("runs (" + runs.length + ")", el("table", {}, el("tr", {}, ["run", "pass rate [95 % Wilson]", "gating failures", costLabel(h.cost_words, "cost_per_case"),
            judged ? costLabel(h.cost_words, "judge_cost_per_case") : null, judged ? costLabel(h.cost_words, "cost_per_case_with_judge") : null,
            "p95 latency", "gate", "checked", ""].filter(Boolean).map(t => el("th", {}, t))), rows)));
      });
      /* a replayed run (answers from a recording) and a rescored one (stored answers scored again) did not call
         the app: listed with the runs that do not count, never a point of its trend */
      const excluded = (h.replayed_runs || []).map(r => ({run_id: r.run_id, reason: r.replayed + " (not a point of the app's trend)"})).concat(
        (h.rescored_runs || []).map(r => ({run_id: r.run_id, reason: "RESCORED from run " + r.rescored_from + ": the app was not called (not a point of the app's trend)"})),
        h.excluded_runs || []);
      /* a run whose check answered clean (its gate ran it or kept its answer) is verified; one whose check failed is
         excluded above (run_history.py's rule); the rest were never checked here, and the page says so */
      const verified = h.runs_verified || 0, unverified = h.runs_used - verified;
      const checkedWords = !verified ? " (not verified)" : !unverified ? " (each checked: run_cases.py --verify)"
        : " (" + verified + " checked by run_cases.py --verify, " + unverified + " not verified)";
      return [el("h1", {}, "History"), el("p", {class: "note"}, "runs used: " + h.runs_used + checkedWords + " · excluded: " + excluded.length + (excluded.length ? ", not in any trend:" : "")),
        /* why each run does not count, on the first screen: nobody reads a trend over a run they think counts */
        excluded.length ? el("ul", {class: "notes", id: "excluded-runs"}, excluded.slice(0, 5).map(r => el("li", {}, el("code", {}, r.run_id), ": " + r.reason)),
          excluded.length > 5 ? el("li", {class: "note"}, "and " + (excluded.length - 5) + " more (run_history.py lists them all in history.json)") : null) : null,
        series, el("h2", {}, "Flaky cases, every series"), el("ul", {id: "flaky"}, (h.flaky_cases || []).map(f => el("li", {}, f.series + ": " + f.case_id + " (" + flakyWords(f) + ")")))];
    });
  }

  function render() {
    const h = location.hash.slice(1) || "/";
    const [path, qs] = h.split("?");
    const q = Object.fromEntries(new URLSearchParams(qs || ""));
    const p = path.split("/").filter(Boolean).map(decodeURIComponent);
    let job;
    if (p[0] === "run" && p.length === 2) job = runPage(p[1], q);
    else if (p[0] === "case" && p.length === 3) job = casePage(p[1], p[2], q);
    else if (p[0] === "compare" && p.length === 3) job = comparePage(p[1], p[2]);
    else if (p[0] === "history") job = historyPage();
    else job = runsPage();
    job.then(nodes => { show(...[nodes].flat(Infinity).filter(n => n !== null && n !== undefined)); window.scrollTo(0, 0); document.body.setAttribute("data-ready", h); })
       .catch(err => { show(el("h1", {}, "Cannot show this page"), el("p", {}, String(err.message || err))); document.body.setAttribute("data-ready", h); });
  }
  window.addEventListener("hashchange", render);
  render();
})();
