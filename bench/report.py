"""Targets (quality.md "Speed and scale") judged on the measurements, and the summary tables."""

from __future__ import annotations

from typing import Any

OVERHEAD_MS = 2.0          # median runner cost per case at max_concurrency 8
CONCURRENCY_PCT = 10.0     # wall within 10 % of cases x latency / concurrency
FLAT_PCT = 20.0            # per-case time at 10,000 within 20 % of per-case time at 1,000
MEMORY_MB = 300.0          # peak RSS at 10,000 cases
RESUME_S = 5.0             # --resume adopting 10,000 finished cases
STORAGES = ("tmpfs", "disk")


def _med(block: Any, key: str) -> float | None:
    if not isinstance(block, dict):
        return None
    v = block.get(key)
    return v.get("median") if isinstance(v, dict) else None


def _fmt(v: float | None, nd: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{nd}f}"


def judge_storage(m: dict[str, Any]) -> list[dict[str, Any]]:
    """[{name, bar, measured, unit, met, note}] for one storage's measurements."""
    out = []

    def add(name: str, bar: str, measured: float | None, ok: bool, unit: str, note: str = "") -> None:
        out.append({"name": name, "bar": bar, "measured": measured, "unit": unit,
                    "met": (ok if measured is not None else None), "note": note})

    v = _med(m.get("overhead_c8"), "net_ms_per_case")
    add("overhead, max_concurrency 8, 0 ms app", f"median <= {OVERHEAD_MS:g} ms/case", v,
        v is not None and v <= OVERHEAD_MS, "ms/case", "(wall - start-up) / cases")
    c = m.get("concurrency") or {}
    v = _med(c, "excess_pct")
    add("concurrency efficiency (2,000 @ 50 ms, c=16)", f"wall <= ideal + {CONCURRENCY_PCT:g} %", v,
        v is not None and v <= CONCURRENCY_PCT, "% over ideal",
        f"ideal {c.get('ideal_s') or 0:.2f} s, gross wall; net of start-up {_fmt(_med(c, 'excess_net_pct'), 1)} %")
    a, b = _med(m.get("flat_small"), "net_ms_per_case"), _med(m.get("flat_large"), "net_ms_per_case")
    ratio = (100.0 * (b / a - 1)) if (a and b) else None
    add("flat cost (10,000 vs 1,000 per case)", f"<= +{FLAT_PCT:g} %", ratio,
        ratio is not None and ratio <= FLAT_PCT, "% per case",
        f"{_fmt(a)} -> {_fmt(b)} ms/case")
    peak = ((m.get("flat_large") or {}).get("maxrss_mb") or {}).get("max")
    add("peak memory at 10,000", f"< {MEMORY_MB:g} MB", peak, peak is not None and peak < MEMORY_MB, "MB",
        "runner ru_maxrss via wait4, max over reps")
    r = m.get("resume") or {}
    v = _med(r.get("killed"), "wall_s")
    add("--resume of a killed 10,000-case run", f"< {RESUME_S:g} s", v, v is not None and v < RESUME_S, "s",
        f"adopts {(r.get('killed') or {}).get('adopted_cases')}, runs the rest; incl. start-up")
    return out


def judge_targets(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    judged = {s: judge_storage(m) for s, m in (results.get("measurements") or {}).items()}
    if results.get("quick"):
        for rows in judged.values():
            for t in rows:
                t["met"] = None
                t["note"] = "quick mode: too small to judge; " + t["note"]
    return judged


def _cell(block: Any, key: str, scale: float = 1.0, nd: int = 2) -> str:
    s = block.get(key) if isinstance(block, dict) else None
    if not isinstance(s, dict) or s.get("median") is None:
        return "n/a"
    if s["n"] == 1:
        return f"{s['median'] * scale:.{nd}f}"
    return f"{s['median'] * scale:.{nd}f} ({s['min'] * scale:.{nd}f}-{s['max'] * scale:.{nd}f}, n={s['n']})"


def render_summary(results: dict[str, Any]) -> str:
    mach = results.get("machine", {})
    ms = results.get("measurements", {})
    storages = [s for s in STORAGES if s in ms]
    st = results.get("startup") or {}
    lines = [
        f"# bench summary ({'QUICK smoke: sizes too small to mean anything' if results.get('quick') else 'full'})",
        "",
        f"- machine: {mach.get('cores')} cores ({mach.get('cpu_model')}), {mach.get('memory_mb')} MB RAM, "
        f"{mach.get('os')}",
        f"- Python {mach.get('python')}, Node {mach.get('node') or 'absent'}",
        f"- measured: commit {(results.get('git') or {}).get('commit')} "
        f"(uncommitted changes under scripts/: {(results.get('git') or {}).get('scripts_dirty')}), "
        f"started {results.get('started_utc')}",
        f"- load average (1 min) at start {_fmt((results.get('loadavg_at_start') or [None])[0], 1)}, "
        f"at end {_fmt((results.get('loadavg_at_end') or [None])[0], 1)}",
        f"- runner start-up (`run_cases.py --version`): {_cell(st, 'wall_s', 1000, 0)} ms",
        f"- measuring took {_fmt(results.get('measure_wall_s'), 0)} s",
        "",
        "Cells: median (min-max, n=repetitions).",
        "",
        "| measurement | " + " | ".join(storages) + " |",
        "|---|" + "---:|" * len(storages),
    ]

    def row(label: str, getter) -> None:
        lines.append(f"| {label} | " + " | ".join(getter(ms[s]) for s in storages) + " |")

    row("file-system floor: mkdir + 6 atomic writes, ms/case",
        lambda m: _fmt((m.get("fs_floor") or {}).get("ms_per_case"), 3))
    for key, title in (("overhead_c1", "overhead c=1"), ("overhead_c8", "overhead c=8"),
                       ("flat_small", "flat c=8"), ("flat_large", "flat c=8")):
        n = next((ms[s].get(key, {}).get("cases") for s in storages if ms[s].get(key)), None)
        if n is None:
            continue
        row(f"{title}, {n} cases: net ms/case", lambda m, k=key: _cell(m.get(k), "net_ms_per_case"))
        row(f"{title}, {n} cases: runner CPU ms/case", lambda m, k=key: _cell(m.get(k), "cpu_ms_per_case"))
        row(f"{title}, {n} cases: app CPU ms/case", lambda m, k=key: _cell(m.get(k), "app_cpu_ms_per_case"))
        row(f"{title}, {n} cases: wall s", lambda m, k=key: _cell(m.get(k), "wall_s"))
        row(f"{title}, {n} cases: s before the first request", lambda m, k=key: _cell(m.get(k), "before_first_request_s"))
        row(f"{title}, {n} cases: s after the last answer", lambda m, k=key: _cell(m.get(k), "after_last_answer_s"))
        row(f"{title}, {n} cases: peak RSS MB", lambda m, k=key: _cell(m.get(k), "maxrss_mb", nd=0))
    cc = next((ms[s]["concurrency"] for s in storages if ms[s].get("concurrency")), {})
    row(f"concurrency {cc.get('cases')} @ {cc.get('latency_ms')} ms, c={cc.get('concurrency')}: wall s",
        lambda m: _cell(m.get("concurrency"), "wall_s"))
    row("concurrency: runner CPU ms/case", lambda m: _cell(m.get("concurrency"), "cpu_ms_per_case"))
    row("concurrency: app CPU ms/case", lambda m: _cell(m.get("concurrency"), "app_cpu_ms_per_case"))
    row("concurrency: requests in flight at the app, mean (max)",
        lambda m: f"{_cell(m.get('concurrency'), 'app_inflight_mean', nd=1)} "
                  f"({_fmt(_med(m.get('concurrency'), 'app_inflight_max'), 0)})")
    row("concurrency: s before the first request", lambda m: _cell(m.get("concurrency"), "before_first_request_s"))
    row("concurrency: s after the last answer", lambda m: _cell(m.get("concurrency"), "after_last_answer_s"))
    row("concurrency: app handler ms per request (incl. the sleep)",
        lambda m: _cell(m.get("concurrency"), "app_busy_ms_per_case"))
    row("concurrency: ideal s", lambda m: _fmt((m.get("concurrency") or {}).get("ideal_s")))
    row("concurrency: % over ideal (gross)", lambda m: _cell(m.get("concurrency"), "excess_pct", nd=1))
    row("concurrency: % over ideal (net of start-up)", lambda m: _cell(m.get("concurrency"), "excess_net_pct", nd=1))
    nv = next((ms[s]["verify"].get("cases") for s in storages if ms[s].get("verify")), None)
    row(f"--verify, {nv} cases: wall s", lambda m: _cell(m.get("verify"), "wall_s"))
    for variant in ("killed", "derived_lost"):
        row(f"--resume ({variant}): cases adopted",
            lambda m, v=variant: str(((m.get("resume") or {}).get(v) or {}).get("adopted_cases", "n/a")))
        row(f"--resume ({variant}): wall s", lambda m, v=variant: _cell((m.get("resume") or {}).get(v), "wall_s"))
    row("determinism c=1 vs c=8: files compared / differing",
        lambda m: f"{(m.get('determinism') or {}).get('files_compared', 'n/a')} / "
                  f"{(m.get('determinism') or {}).get('differing_count', 'n/a')}")
    row("load average (1 min) during overhead c=8", lambda m: _cell(m.get("overhead_c8"), "loadavg_1m", nd=1))

    lines += ["", "## promptfoo side by side", ""]
    pst = results.get("promptfoo_startup")
    if pst:
        lines.append(f"promptfoo {pst['version']}, start-up (`promptfoo --version`) {_cell(pst, 'wall_s', 1000, 0)} ms. "
                     "Same suite, same app, same concurrency (`-j`), cache off, both timed in this run; the first column says where promptfoo kept its config, sqlite DB and output.")
        lines += ["", "| promptfoo files on | suite | promptfoo wall s | "
                  + " | ".join(f"assay wall s ({a})" for a in storages)
                  + " | " + " | ".join(f"promptfoo / assay ({a})" for a in storages)
                  + " | assay CPU ms/case | promptfoo CPU ms/case | promptfoo RSS MB |",
                  "|---|---|---:|" + "---:|" * (2 * len(storages)) + "---:|---:|---:|"]
    notes = []
    for s in storages:
        pf = ms[s].get("promptfoo") or {}
        if "skipped" in pf:
            notes.append(f"- {s}: promptfoo skipped: {pf['skipped']}")
            continue
        for name in ("overhead_c8", "concurrency"):
            b = pf.get(name)
            if not b:
                continue
            pf_med = (b.get("wall_s") or {}).get("median")
            ours = [_med(ms[a].get(name), "wall_s") for a in storages]
            ratios = [f"**{pf_med / o:.2f}x**" if (pf_med and o) else "n/a" for o in ours]
            lines.append(f"| {s} | {b['cases']} cases @ {b['latency_ms']} ms, c={b['concurrency']} "
                         f"| {_cell(b, 'wall_s')} | " + " | ".join(_fmt(o) for o in ours) + " | "
                         + " | ".join(ratios)
                         + f" | {_fmt(b['assay_cpu_ms_per_case_median'])} | {_cell(b, 'cpu_ms_per_case')} "
                         f"| {_cell(b, 'maxrss_mb', nd=0)} |")

    if notes:
        lines += [""] + notes
    lines += ["", "## targets", "", "| target | bar | " + " | ".join(storages) + " |",
              "|---|---|" + "---|" * len(storages)]
    targets = results.get("targets") or {}
    names = [t["name"] for t in next(iter(targets.values()), [])]
    for i, name in enumerate(names):
        cells = []
        for s in storages:
            t = targets[s][i]
            met = {True: "met", False: "**MISSED**", None: "not judged"}[t["met"]]
            cells.append(f"{_fmt(t['measured'], 3)} {t['unit']}: {met}")
        lines.append(f"| {name} | {targets[storages[0]][i]['bar']} | " + " | ".join(cells) + " |")

    invalid = []
    for s in storages:
        for key, b in ms[s].items():
            blocks = [b] + [v for v in (b.values() if isinstance(b, dict) else []) if isinstance(v, dict)]
            for blk in blocks:
                for r in (blk.get("runs") or []) if isinstance(blk, dict) else []:
                    if isinstance(r, dict) and not r.get("valid", True):
                        invalid.append(f"- {s} {key}: {'; '.join(r.get('problems', []))[:400]}")
    if invalid:
        lines += ["", "## invalid runs (timings not counted)", ""] + invalid
    lines.append("")
    return "\n".join(lines)
