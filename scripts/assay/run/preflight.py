"""Pre-flight (contracts §5.4), in order: everything here happens before the first case.

1. plan validation (exit 2) and env resolution (exit 3); 2. invocation mode supported and
well-formed; 3. health check; 4. trace branch; 5. safety gates recorded; 6. the PII
.gitignore; 7. cases/ and manifest.yaml; 8. results.json `running`; 9. the holdout ledger.
Steps 1-4 write nothing; exit 2 and exit 3 leave nothing behind (the lock is beside the
run dir and removed on exit).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import secrets, writer
from ..core.errors import AssayError
from ..core.ids import utc_now_iso
from ..core.jsonio import atomic_write_json, loads, read_json, read_jsonl, sha256_json
from ..core.version import HARNESS_VERSION
from ..plan.validate import effective_execution, effective_scoring, validate_plan
from ..traces.collect import TraceConfig, trace_branch

SUPPORTED_MODES = ("http", "function", "cli")


# ---------------------------------------------------------------- step 1: plan + --out
def load_plan(path: str, stdin_text: Callable[[], str] | None = None) -> dict[str, Any]:
    try:
        if path == "-":
            text = (stdin_text or sys.stdin.read)()
        else:
            with open(path, "rb") as fh:
                text = fh.read().decode("utf-8")
        plan = loads(text)
    except FileNotFoundError:
        raise AssayError(f"--plan {path}: no such file; build it with make_plan.py", 2)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AssayError(f"--plan {path}: not readable JSON ({exc}); rebuild it with make_plan.py", 2)
    validate_plan(plan, source=path)
    return plan


def state_dir_of(plan: Mapping[str, Any]) -> Path:
    p = Path(plan["paths"]["state_dir"])
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: not a directory either
        is_dir = False
    if not is_dir:
        raise AssayError(f"plan paths.state_dir {str(p)!r} is not a directory; rebuild the plan with "
                         "make_plan.py --state-dir <app>/.assay", 2, key="paths.state_dir")
    real = p.resolve()
    problem = not_a_state_dir(real)
    if problem:
        raise AssayError(f"plan paths.state_dir {str(p)!r} {problem}; the runner writes only under an assay "
                         "state dir's reports/. Rebuild the plan with make_plan.py --state-dir <app>/.assay",
                         2, key="paths.state_dir")
    return real


STATE_DIR_MARKERS = ("adapter.yaml", "profile.yaml", "datasets", "reports")


def not_a_state_dir(path: Path) -> str | None:
    """Why `path` (resolved) is not an assay state dir, or None. A state dir holds at least one
    of STATE_DIR_MARKERS and is never the filesystem root or the home directory (a hand-edited
    `state_dir: "/"` must not let --out point anywhere)."""
    if path == Path(path.anchor):
        return "is the filesystem root, not an assay state dir"
    try:
        if path == Path.home().resolve():
            return "is the home directory, not an assay state dir"
    except (OSError, RuntimeError):
        pass
    if not any((path / m).exists() for m in STATE_DIR_MARKERS):
        return f"is not an assay state dir (it holds none of {', '.join(STATE_DIR_MARKERS)})"
    return None


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return True
    except ValueError:
        return False


def check_out(plan: Mapping[str, Any], out_arg: str, *, resume: bool, name: str | None = None) -> Path:
    """The --out rules: basename = run_id (or `name`: a shard's), inside the state dir, no symlink,
    empty unless --resume."""
    try:
        return _check_out(plan, out_arg, resume=resume, name=name)
    except (OSError, ValueError) as exc:  # e.g. a path component longer than the filesystem allows
        raise AssayError(f"--out {out_arg!r}: unusable path ({exc}); use --out <state>/reports/"
                         f"{name or plan['run_id']}", 2, key="--out") from None


def _check_out(plan: Mapping[str, Any], out_arg: str, *, resume: bool, name: str | None = None) -> Path:
    out = Path(os.path.abspath(out_arg))
    name = name or plan["run_id"]
    if out.name != name:
        what = "the plan's run_id" if name == plan["run_id"] else "the plan's run_id and the shard (<run_id>.shard-<I>)"
        raise AssayError(f"--out {out_arg!r}: its last path component must be {name!r}, {what} "
                         f"(use --out <state>/reports/{name})", 2, key="--out")
    state = state_dir_of(plan)
    real = out.parent.resolve() / out.name
    if _inside(real, state):  # never through a link: the run dir, reports/ and anything between
        writer.refuse_symlinks_between(out, state, "on the --out path inside the state dir")
    if out.is_symlink() or not _inside(real, state / "reports"):
        raise AssayError(f"--out {out_arg!r} is outside the state dir's reports/ {str(state / 'reports')!r} "
                         f"(or a symlink); use --out {state}/reports/{name}", 2, key="--out")
    if resume:
        if out.is_dir():  # --resume reads, rewrites and deletes in here: no link anywhere inside
            writer.refuse_symlinks_in(out, what="inside the run directory --resume would repair")
        if out.exists() and not (out / "manifest.yaml").is_file() and unstarted_debris(out) is None:
            raise AssayError(f"--resume: {out_arg} is not a run directory (no manifest.yaml); start the run "
                             "without --resume", 2, key="--out")
    elif out.exists() and (not out.is_dir() or any(out.iterdir())):
        hint = (" (a start that was killed before its manifest.yaml was written: --resume starts it over)"
                if out.is_dir() and unstarted_debris(out) is not None else "")
        raise AssayError(f"--out {out_arg} already exists and is not empty{hint}; pass --resume to finish that "
                         "run, or use a new run id", 2, key="--out")
    return out


# What a runner killed in its first milliseconds can leave before manifest.yaml exists.
_START_DEBRIS = ("cases", "results.json", "run.log")


def unstarted_debris(out: Path) -> list[Path] | None:
    """A run dir with no manifest.yaml and no finished case (a kill before pre-flight wrote the
    manifest): the entries to clear so the run starts over, [] for an empty dir. None when it
    holds anything else (a manifest, a verdict.json, a file the runner never writes)."""
    if not out.is_dir() or (out / "manifest.yaml").exists():
        return None
    found: list[Path] = []
    for entry in out.iterdir():
        temp = entry.name.startswith(".") and entry.name.endswith(".tmp")
        if entry.is_symlink() or not (entry.name in _START_DEBRIS or temp):
            return None
        if entry.name == "cases":
            if not entry.is_dir():
                return None
            for cdir in entry.iterdir():
                if cdir.is_symlink() or not cdir.is_dir() or (cdir / "verdict.json").exists():
                    return None
        found.append(entry)
    return found


def clear_unstarted(out: Path) -> bool:
    """--resume on a run that never got its manifest: clear the debris (under the runner lock) so
    the run starts over as a fresh one. False when `out` is not such a dir."""
    debris = unstarted_debris(out)
    if debris is None:
        return False
    for entry in debris:
        writer.remove_tree(entry)
    return True


def ledger_path(plan: Mapping[str, Any]) -> Path | None:
    """The holdout ledger for a holdout-touching plan, confined to the state dir."""
    if plan["selecting_split"] != "holdout" and plan["mode"] != "holdout":
        return None
    state = state_dir_of(plan)
    raw = Path(plan["paths"]["holdout_ledger"])
    path = raw if raw.is_absolute() else state / raw
    real = Path(os.path.realpath(path))
    if not _inside(real, state):
        raise AssayError(f"plan paths.holdout_ledger {str(raw)!r} resolves outside the state dir "
                         f"{str(state)!r}; use datasets/holdout-looks.jsonl", 2, key="paths.holdout_ledger")
    writer.refuse_symlinks_between(path, state, "the holdout ledger path")
    return real


def dataset_version(plan: Mapping[str, Any]) -> int:
    v = (plan.get("manifest_extra") or {}).get("dataset_version", 1)
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def check_baseline(path: str | None, plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """--baseline-verdicts: its run's manifest must match dataset_version, harness_version and k."""
    if not path:
        return None
    p = Path(path)
    try:
        rows = read_jsonl(p)
    except (OSError, ValueError) as exc:
        raise AssayError(f"--baseline-verdicts {path}: not readable JSONL ({exc}); pass "
                         "reports/<baseline-run>/verdicts_for_stats.jsonl", 2, key="--baseline-verdicts")
    mpath = p.parent / "manifest.yaml"
    try:
        manifest = read_json(mpath)
    except (OSError, ValueError) as exc:
        raise AssayError(f"--baseline-verdicts {path}: its run's manifest.yaml is missing or unreadable "
                         f"({exc}); the baseline must be a run directory's verdicts_for_stats.jsonl", 2,
                         key="--baseline-verdicts")
    mine = {"dataset_version": dataset_version(plan), "harness_version": HARNESS_VERSION, "k": plan["k"]}
    theirs = {key: manifest.get(key) for key in mine}
    diff = [key for key in mine if mine[key] != theirs[key]]
    if diff:
        detail = ", ".join(f"{key}: baseline {theirs[key]!r} vs this plan {mine[key]!r}" for key in diff)
        raise AssayError(f"--baseline-verdicts {path} is not comparable with this plan ({detail}); "
                         "re-run the baseline under the same dataset_version, harness_version and k, or "
                         "run without --baseline-verdicts", 2, key="--baseline-verdicts", mismatch=diff)
    holdout_ids = [c.get("id") for c in manifest.get("cases") or [] if isinstance(c, dict) and c.get("set") == "holdout"]
    return {"path": str(p), "rows": rows, "holdout_ids": holdout_ids, "run_id": manifest.get("run_id"), **theirs}


# ---------------------------------------------------------------- env
def resolve_env(plan: Mapping[str, Any], environ: Mapping[str, str], *, app_required: bool = True) -> dict[str, str]:
    """Every variable the run resolves: the adapter's and the cases' (`app_required=False`, rescore:
    those set are taken, a missing one is no error since no app is called), the judge's (always
    required), and the allowlisted values a cli app or a command judge is given (secrets too)."""
    adapter = plan["adapter"]
    names = secrets.env_refs(adapter.get("invocation") or {}) | secrets.env_refs(adapter.get("traces") or {})
    names |= secrets.auth_env_names(adapter) | secrets.case_env_names(plan["cases"])
    from ..judge.env import judge_allowlisted_secrets
    from ..judge.runtime import judge_env_names
    judge_names = judge_env_names(plan)
    if app_required:
        env = secrets.resolve(names | judge_names, environ, env_sources(plan))
    else:
        env = secrets.resolve(judge_names, environ, env_sources(plan))
        env.update({n: environ[n] for n in sorted(names - judge_names) if environ.get(n)})
    inv = adapter.get("invocation") or {}
    if inv.get("mode") == "cli":  # allowlisted values are the child's secrets too: redacted like ${VAR}s
        from ..invoke.cli import allowlisted_secrets
        env.update(allowlisted_secrets(inv, environ))
    env.update(judge_allowlisted_secrets(plan, environ))
    return env


def register_run_secrets(plan: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """From here on every byte assay writes (files, run.log, stdout) has these values redacted: every
    resolved value but an address-only variable (the base URL is not a secret: errors show where
    they connected). A run and a rescore of it register the same set (one rule)."""
    from ..judge.runtime import judge_env_names
    addresses = (secrets.address_vars(plan["adapter"], env) - judge_env_names(plan)
                 - secrets.case_env_names(plan["cases"]))
    writer.register_secrets(v for k, v in env.items() if k not in addresses)


def env_sources(plan: Mapping[str, Any]) -> dict[str, str]:
    """Where each variable is referenced (file: key), so a missing one names what to fix."""
    adapter = plan["adapter"]
    where = {n: f"judge/judge.yaml: {path}" for n, path in
             secrets.env_ref_paths((plan.get("judge") or {}).get("config") or {}, "").items()}
    for name in secrets.case_env_names(plan["cases"]):
        where[name] = "a case's identity.token_env"
    auth = (adapter.get("invocation") or {}).get("auth") or {}
    for key in ("token_env", "cookie_env"):
        if isinstance(auth, Mapping) and isinstance(auth.get(key), str):
            where[auth[key]] = f"adapter.yaml: invocation.auth.{key}"
    for part in ("traces", "invocation"):
        where.update({n: f"adapter.yaml: {path}" for n, path in
                      secrets.env_ref_paths(adapter.get(part) or {}, part).items()})
    return where


# ---------------------------------------------------------------- step 2: invoker
def check_adapter(plan: Mapping[str, Any]) -> None:
    """The invocation mode is one this runner runs, and the adapter matches its schema (exit 3
    naming the key). Runs before anything reads the adapter (env resolution included)."""
    inv = plan["adapter"].get("invocation") or {}
    mode = inv.get("mode") if isinstance(inv, Mapping) else None
    if mode not in SUPPORTED_MODES:
        raise AssayError(f"pre-flight: invocation.mode {mode!r} is not supported (http, function, cli)", 3,
                         key="invocation.mode", mode=mode)
    # The adapter crossed a step boundary inside the plan: check its shape before using it.
    from ..schemas import validate
    validate(plan["adapter"], "adapter", source="adapter", code=3, what="the plan's")


def build_invoker(plan: Mapping[str, Any], env: Mapping[str, str], execution: Mapping[str, Any], *,
                  out: Path | None = None, environ: Mapping[str, str] | None = None):
    """The invoker for the (already checked, `check_adapter`) invocation."""
    inv = plan["adapter"].get("invocation") or {}
    mode = inv.get("mode")
    if mode == "http":
        from ..invoke.http import HttpInvoker
        inv_obj = HttpInvoker(inv, env, timeout_s=execution["timeout_s"], insecure_tls=bool(execution["insecure_tls"]))
    elif mode == "cli":
        from ..invoke.function import app_root
        from ..invoke.cli import CliInvoker, scratch_area
        environ = os.environ if environ is None else environ
        state = state_dir_of(plan)
        run_dir = out if out is not None else state / "reports" / plan["run_id"]
        inv_obj = CliInvoker(inv, env, environ=environ, timeout_s=execution["timeout_s"],
                             app_root=app_root(plan["adapter"], state), state_dir=state,
                             area=scratch_area(plan["run_id"], Path(os.path.abspath(run_dir)), environ))
    else:
        from ..invoke.function import FunctionInvoker, app_root, import_entrypoint
        fn = import_entrypoint(inv.get("entrypoint"), app_root(plan["adapter"], state_dir_of(plan)))
        inv_obj = FunctionInvoker(inv, env, fn, timeout_s=execution["timeout_s"])
    rb = inv.get("response_body")
    if rb is not None:
        from ..invoke.templates import ANSWER_MARK, find_mark, parse_template
        tmpl = parse_template(rb, "invocation.response_body")
        if find_mark(tmpl, ANSWER_MARK) is None:
            raise AssayError("pre-flight: invocation.response_body must mark the answer leaf with "
                             "\"<answer>\"", 3, key="invocation.response_body")
    return inv_obj


# ---------------------------------------------------------------- step 3: health
def health_check(invoker: Any, invocation: Mapping[str, Any], *, resume: bool = False) -> dict[str, Any]:
    if getattr(invoker, "mode", None) == "cli":
        return invoker.health(resume=resume)
    if getattr(invoker, "mode", None) != "http":
        return {"checked": False, "reason": "function mode: the entrypoint imported"}
    hc = invocation.get("health_check") or {}
    method = str(hc.get("method") or "GET").upper()
    url = invoker.health_url(hc.get("path"))
    expect = hc.get("expect_status")
    out = invoker.request(method, url, {"Accept": "*/*"}, None)
    invoker.close()
    shown = invoker.base_recorded + (hc.get("path") or "")
    resolved = invoker.shown_resolved(url)
    if resolved:
        shown += f" (resolved: {resolved})"
    if out.kind != "response":
        fix = invoker.base_fix_hint()
        raise AssayError(f"pre-flight: health check {method} {shown} failed: {out.error}. Start the app (or "
                         f"fix {fix} / invocation.health_check) and re-run.", 3, key="invocation.health_check",
                         health_error=out.error, url=resolved or shown)
    if expect and out.status not in (expect if isinstance(expect, list) else [expect]):
        raise AssayError(f"pre-flight: health check {method} {shown} returned {out.status}, not one of "
                         f"{expect}; is the app healthy?", 3, key="invocation.health_check.expect_status",
                         status=out.status)
    return {"checked": True, "method": method, "status": out.status}


# ---------------------------------------------------------------- step 5: safety
def safety_gates(adapter: Mapping[str, Any]) -> dict[str, Any]:
    envb = adapter.get("environment") or {}
    kind = envb.get("kind")
    never_live = sorted(str(t.get("name")) for t in (adapter.get("tools") or [])
                        if isinstance(t, Mapping) and t.get("side_effects") == "never-live")
    return {"safe_to_attack": envb.get("safe_to_attack") is True, "environment_kind": kind,
            "never_live_tools": never_live, "live_environment": isinstance(kind, str) and kind.startswith("live"),
            "identity_map": sorted((adapter.get("invocation") or {}).get("identity_map") or {})}


# ---------------------------------------------------------------- judged layer
JUDGE_PENDING = "judge pending"


def judged_reason_fn(plan: Mapping[str, Any], state: Path) -> Callable[[Mapping[str, Any]], str]:
    """The judged layer's reason before any judge call: JUDGE_PENDING when the plan enables a judge
    (the case worker then judges), else why nothing judges this run."""
    block = plan.get("judge")
    if isinstance(block, dict):
        if block.get("enabled"):
            return lambda case: JUDGE_PENDING
        why = f"unjudged ({block.get('reason') or 'judge disabled in the plan'})"
        from ..plan.modes import MODES
        if not (plan.get("mode") in MODES and MODES[plan["mode"]].judge):
            return lambda case: why  # smoke / targeted without --judge: the mode's choice
        # A mode that judges by default, with no judge.yaml: a calibrated pin would gate here,
        # so leaving it unjudged is a check that never ran, not a choice.
        from ..judge.rubrics import case_pins
        from ..judge.runtime import calibration_of, load_calibration
        sidecar, sidecar_why = load_calibration(plan, state)

        def reason(case: Mapping[str, Any]) -> str:
            gating = [str(p) for p in case_pins(dict(case)) if calibration_of(sidecar, sidecar_why, str(p))[0]]
            if not gating:
                return why
            return (f"no judge/judge.yaml in the state dir, so the calibrated (gating) rubric {', '.join(gating)} "
                    f"never ran in this {plan['mode']} run; add judge/judge.yaml (docs/runner-contract.md, The judge)")
        return reason
    if plan["mode"] == "smoke":
        return lambda case: "unjudged (mode: smoke)"
    raw = (plan.get("paths") or {}).get("judge_calibration")
    sidecar: Any = None
    if raw:
        p = Path(raw)
        try:
            sidecar = read_json(p if p.is_absolute() else state / p)
        except (OSError, ValueError):
            sidecar = None

    def reason(case: Mapping[str, Any]) -> str:
        rubric = ((case.get("expect") or {}).get("answer") or {}).get("rubric")
        return "unjudged (deferred to skill)" if rubric_calibrated(sidecar, rubric) else "unjudged (judge not calibrated)"
    return reason


def rubric_calibrated(sidecar: Any, rubric: Any) -> bool:
    """True only when the sidecar says this rubric (or every rubric) is calibrated."""
    if not isinstance(sidecar, Mapping):
        return False
    rubrics = sidecar.get("rubrics")
    ids = rubric if isinstance(rubric, list) else [rubric]
    if isinstance(rubrics, Mapping) and rubrics:
        return all(isinstance(rubrics.get(r), Mapping) and rubrics[r].get("calibrated") is True for r in ids)
    if isinstance(rubrics, list) and rubrics:
        by_id = {str(r.get("rubric") or r.get("id")): r for r in rubrics if isinstance(r, Mapping)}
        return all(isinstance(by_id.get(str(r)), Mapping) and by_id[str(r)].get("calibrated") is True for r in ids)
    return sidecar.get("calibrated") is True or sidecar.get("status") == "calibrated"


# ---------------------------------------------------------------- steps 6-9: writes
def write_gitignore(reports: Path, adapter: Mapping[str, Any]) -> bool:
    if (adapter.get("data") or {}).get("may_contain_pii") is not True:
        return False
    path = reports / ".gitignore"
    existing = writer.read_bytes(path).decode("utf-8") if path.exists() or path.is_symlink() else ""
    if "*/cases/" not in existing.splitlines():
        from ..core.jsonio import atomic_write_text
        atomic_write_text(path, existing + ("" if not existing or existing.endswith("\n") else "\n") + "*/cases/\n")
    return True


def case_set(case: Mapping[str, Any]) -> str:
    split = case.get("split") or []
    return "canary" if "canary" in split else ("holdout" if "holdout" in split else "main")


@dataclass
class RunSetup:
    plan: dict[str, Any]
    plan_sha256: str
    out: Path
    state: Path
    execution: dict[str, Any]
    scoring: dict[str, Any]
    env: dict[str, str]
    invoker: Any
    trace: TraceConfig
    safety: dict[str, Any]
    baseline: dict[str, Any] | None
    ledger: Path | None
    max_concurrency: int
    health: dict[str, Any] = field(default_factory=dict)
    conversation: Any = None   # invoke.conversation.ConversationConfig, or None when undeclared
    shard: dict[str, Any] | None = None     # run_cases.py --shard: {index, count}, recorded in the manifest
    judge: Any = None              # assay.judge.runtime.JudgeRuntime when the plan enables a judge
    # False for a rescore: no app is called, so execution.infra_rate_abort (a verdict on the app's
    # health, exit 5) never applies; its infra cases are counted and gated like any others
    calls_app: bool = True


def max_concurrency(plan: Mapping[str, Any]) -> int:
    v = (plan["adapter"].get("invocation") or {}).get("max_concurrency", 1)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise AssayError(f"pre-flight: invocation.max_concurrency must be an integer >= 1 (got {v!r})", 3,
                         key="invocation.max_concurrency")
    return v


def build_manifest(setup: RunSetup, started_at: str) -> dict[str, Any]:
    plan = setup.plan
    inv = plan["adapter"].get("invocation") or {}
    invocation: dict[str, Any] = {"mode": inv.get("mode"), "timeout_s": setup.execution["timeout_s"],
                                  "timeout_enforced": True,
                                  "max_concurrency": setup.max_concurrency}
    if inv.get("mode") == "http":
        invocation["url"] = str(inv.get("base_url") or "").rstrip("/") + str(inv.get("endpoint") or "").split(None, 1)[-1]
        invocation["endpoint"] = inv.get("endpoint")
    elif inv.get("mode") == "cli":
        invocation.update(setup.invoker.manifest())
    else:
        invocation["entrypoint"] = inv.get("entrypoint")
    identity_headers = sorted({str(v) for v in (inv.get("identity_map") or {}).values()})
    auth = inv.get("auth") or {}
    auth_headers = sorted(str(h) for h in (auth.get("headers") or {})) if auth.get("type") == "headers" else []
    baseline = None
    if setup.baseline:
        baseline = {k: v for k, v in setup.baseline.items() if k not in ("rows", "holdout_ids")}
    from ..suite.version import manifest_cases, suite_version
    version = suite_version(plan)
    return {
        "run_id": plan["run_id"], "mode": plan["mode"], "gate": plan["gate"],
        "selecting_split": plan["selecting_split"], "k": plan["k"],
        "plan_sha256": setup.plan_sha256, "harness_version": HARNESS_VERSION,
        "dataset_version": dataset_version(plan), "started_at": started_at,
        "cases": manifest_cases(plan, case_set, version),
        "suite_sha256": version["suite_sha256"], "suite_parts_sha256": version["suite_parts_sha256"],
        "invocation": invocation, "identity_headers": identity_headers,
        "auth": {"type": auth.get("type", "none"), "header_names": auth_headers},
        "traces": setup.trace.manifest(), "capability_matrix": plan["capability_matrix"],
        "scoring": setup.scoring, "execution": setup.execution, "baseline_verdicts": baseline,
        "max_concurrency": setup.max_concurrency, "safety": setup.safety, "health_check": setup.health,
        "data": {"may_contain_pii": (plan["adapter"].get("data") or {}).get("may_contain_pii") is True},
        "manifest_extra": plan.get("manifest_extra") or {},
        "conversation": setup.conversation.manifest() if setup.conversation is not None else None,
        **({"shard": setup.shard} if setup.shard else {}),
        "judge": judge_manifest(setup),
    }


def judge_manifest(setup: RunSetup) -> dict[str, Any]:
    """The manifest's `judge` block: the config as written (never a key) and each rubric's gating status."""
    if setup.judge is not None:
        return setup.judge.manifest()
    block = setup.plan.get("judge")
    reason = block.get("reason") if isinstance(block, dict) else None
    return {"enabled": False, "reason": reason or judged_reason_fn(setup.plan, setup.state)({})}


def append_ledger(path: Path, plan: Mapping[str, Any], stderr=None) -> int:
    """Append one look for this run id (never a second); return the running look count."""
    stderr = stderr or sys.stderr
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if path.exists() or path.is_symlink():
        for line in writer.read_bytes(path).decode("utf-8").splitlines():
            try:
                rows.append(loads(line))
            except ValueError:
                continue
    if not any(isinstance(r, dict) and r.get("run_id") == plan["run_id"] for r in rows):
        reason = (plan.get("manifest_extra") or {}).get("holdout_reason") or "run_cases.py holdout run"
        row = {"run_id": plan["run_id"], "date": utc_now_iso(), "mode": plan["mode"], "reason": reason}
        fd = writer.open_append(path)
        try:
            os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        rows.append(row)
    looks = len(rows)
    stderr.write(f"assay: holdout look {looks} recorded in {path.name} (run {plan['run_id']}); "
                 f"{looks} look(s) so far{' - a reseal is due after 5' if looks >= 5 else ''}\n")
    return looks


def prepare(plan: dict[str, Any], out: Path, *, environ: Mapping[str, str], baseline: dict | None) -> RunSetup:
    """Steps 1-5 (no writes): env, invoker, traces, safety. The health check is the caller's."""
    execution = effective_execution(plan)
    scoring = effective_scoring(plan)
    state = state_dir_of(plan)
    ledger = ledger_path(plan)
    check_adapter(plan)
    env = resolve_env(plan, environ)
    register_run_secrets(plan, env)
    mc = max_concurrency(plan)
    invoker = build_invoker(plan, env, execution, out=out, environ=environ)
    from ..invoke.conversation import conversation_config
    conv = conversation_config(plan["adapter"].get("invocation") or {},
                               getattr(invoker, "conversation_template", getattr(invoker, "body_recorded", None)))
    trace = trace_branch(plan["adapter"], state, env)
    from ..judge.runtime import build_runtime
    judge = build_runtime(plan, env, state, execution, environ)
    return RunSetup(judge=judge, plan=plan, plan_sha256=sha256_json(plan), out=out, state=state, execution=execution,
                    scoring=scoring, env=env, invoker=invoker, trace=trace, safety=safety_gates(plan["adapter"]),
                    baseline=baseline, ledger=ledger, max_concurrency=mc, conversation=conv)


def write_running_results(out: Path, plan: Mapping[str, Any], started_at: str, summary: dict) -> None:
    atomic_write_json(out / "results.json", {
        "run_id": plan["run_id"], "mode": plan["mode"], "gate": plan["gate"],
        "selecting_split": plan["selecting_split"], "k": plan["k"], "harness_version": HARNESS_VERSION,
        "dataset_version": dataset_version(plan), "exit_code": None, "started_at": started_at,
        "finished_at": None, "summary": summary, "cases": []})
