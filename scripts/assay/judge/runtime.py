"""The judge during a run: one call per rubric node, on its own pool bounded by the judge's
`max_concurrency`, with the runner's retry/backoff/Retry-After rules and infra taxonomy
(`assay.invoke.outcome`). A judge outage is infra, never a fail.

`JudgeRuntime.judge_case(case, answer, trajectory) -> JudgedCase(layer, doc, usage)`; the
worker writes `doc` as `cases/<id>/judge.json`. Whether a rubric version gates is read from
the calibration sidecar (`judge/calibration.json`): calibrated iff `rubrics[<pin>].calibrated is
true` and the calibration is bound to this judge and this rubric text (assay.judge.binding); every
other verdict is `provisional: true`.
"""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import secrets, writer
from ..core.jsonio import dumps
from ..invoke.outcome import Outcome, attempt_with_retries
from . import config as judge_config
from . import pairwise
from . import probe as judge_probe
from . import transport
from .binding import CALIBRATION_SCHEMA, calibration_of, judge_identity  # noqa: F401 (re-exported)
from .binding import load_calibration as _load_sidecar, lowered_floors
from .env import command_env
from .prompt import PROMPT_VERSION, Material, as_stdin, build_prompt
from .providers import build_request, read_reply
from .rubrics import resolve_pin
from .verdict import checked_node, parse_reply, rubric_verdict

PARSE_TRIES = 2          # an unparseable reply is retried once, then the node is unknown


# ---------------------------------------------------------------- the runtime
@dataclass
class JudgedCase:
    layer: dict[str, Any]
    doc: dict[str, Any]
    usage: dict[str, int]


@dataclass
class JudgeRuntime:
    config: dict[str, Any]                 # resolved (secrets in it): the wire only
    recorded: dict[str, Any]               # manifest view, unresolved
    rubrics: dict[str, dict[str, Any]]     # by rubric_id
    state: Path
    execution: Mapping[str, Any]
    sidecar: dict | None
    sidecar_why: str | None
    identity: dict[str, Any] = field(default_factory=dict)   # the configured judge (assay.judge.binding)
    scrub: Callable[[str | None], str | None] = lambda s: s
    on_retry: Callable[..., None] | None = None
    # rescore: (case_id, answer sha256, pin, prompt_version) -> a source run's rubric result, reused
    # instead of calling the judge again; `reused_from` names that run.
    reuse: dict[tuple, dict] = field(default_factory=dict)
    reused_from: str | None = None
    child_env: dict[str, str] | None = None   # command: its whole environment (judge_env.command_env)
    sleep: Callable[[float], None] = time.sleep
    probe: dict | None = None              # the pre-flight probe's result (judge_probe.probe)
    baseline: Any = None                   # pairwise rubrics: the baseline's answers (judge.pairwise.BaselineAnswers)
    key_variable: str | None = None        # "$VAR" the api_key comes from, named in judge errors
    _pool: ThreadPoolExecutor | None = field(default=None, repr=False)

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=int(self.config["max_concurrency"]),
                                            thread_name_prefix="assay-judge")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def calibration(self, pin: str) -> tuple[bool, str | None]:
        rubric, _, _ = resolve_pin(pin, self.rubrics)
        return calibration_of(self.sidecar, self.sidecar_why, pin, identity=self.identity, rubric=rubric)

    def manifest(self) -> dict[str, Any]:
        pins = sorted({r["pin"] for r in self.rubrics.values()})
        return dict(self.recorded, enabled=True, prompt_version=PROMPT_VERSION, probe=self.probe,
                    pairwise_baseline=getattr(self.baseline, "run_id", None),
                    rubrics={p: {"calibrated": self.calibration(p)[0], "why_provisional": self.calibration(p)[1],
                                 "calibrated_below_defaults": (lowered_floors(self.sidecar, p)
                                                               if self.calibration(p)[0] else None)}
                             for p in pins})

    # ------------------------------------------------------------ one call
    def _send(self, system: str, user: str, ask: Any = None) -> Outcome:
        cfg = self.config
        timeout = float(cfg["timeout_s"])
        if cfg["provider"] == "command":
            return transport.run_command(list(cfg["command"]), as_stdin(system, user), timeout, self.state, self.child_env)
        url, headers, body = (build_request(cfg, system, user) if ask is None
                              else build_request(cfg, system, user, ask.schema, ask.tool))
        return transport.post(url, headers, dumps(body, indent=None).encode("utf-8"), timeout, bool(cfg.get("insecure_tls")))

    def _call(self, system: str, user: str, where: dict,
              ask: Any = None) -> tuple[dict[str, Any], dict | None, str | None, bool]:
        """One judge call with retries -> (call record, parsed verdict or None, error, infra). `ask`
        (assay.judge.pairwise.Ask) asks for another reply than a node verdict: its schema and parser."""
        def on_retry(attempt: int, out: Outcome, wait: float) -> None:
            if self.on_retry:
                self.on_retry(attempt=attempt, outcome=self.scrub(out.describe()), wait_s=round(wait, 3), **where)
        outcomes = attempt_with_retries(lambda: self._send(system, user, ask),
                                        max_attempts=int(self.execution["max_attempts"]),
                                        backoff_s=list(self.execution["backoff_s"]), on_retry=on_retry,
                                        sleep=self.sleep)
        final = outcomes[-1]
        where = judge_probe.target(self.config, self.key_variable)
        call: dict[str, Any] = {"prompt": as_stdin(system, user), "raw_reply": None, "parsed": None,
                                "latency_ms": round(sum(o.latency_ms for o in outcomes), 3), "usage": None,
                                "error": None, "attempts": len(outcomes), "status": final.status}
        if final.retriable:
            call["error"] = self.scrub(f"judge unavailable: {final.describe()} on all {len(outcomes)} attempt(s) "
                                       f"({where})")
            call["raw_reply"] = self.scrub(final.body_text)
            return call, None, call["error"], True
        if final.status is None or not 200 <= final.status < 300:
            call["raw_reply"] = self.scrub(final.body_text)
            call["error"] = self.scrub(f"judge refused the call: {where} got HTTP {final.status}: "
                                       f"{writer.clip(final.body_text or '', 200)}"
                                       + judge_probe.hint(self.config, final.status, self.key_variable))
            return call, None, call["error"], True
        provider = self.config["provider"]
        body = final.body_text if provider == "command" else final.body_json
        if provider != "command" and body is None:
            call["raw_reply"] = self.scrub(final.body_text)
            call["error"] = "the provider's reply is not JSON"
            return call, None, call["error"], False
        raw, value, usage, err = read_reply(provider, body) if ask is None else read_reply(provider, body, ask.tool)
        call["raw_reply"], call["usage"] = self.scrub(raw), usage
        if err:
            call["error"] = self.scrub(err)
            return call, None, err, False
        parsed, perr = parse_reply(value) if ask is None else ask.parse(value)
        call["parsed"], call["error"] = parsed, perr
        return call, parsed, perr, False

    def _node(self, rubric: dict, node: dict, material: Material, ref: dict) -> dict[str, Any]:
        out = {"node_id": node["id"], "criterion": node["criterion"], "verdict": "unknown", "evidence": [],
               "reason": "", "infra": False, "calls": []}
        if node.get("reference_guided") and material.gold is None:
            out["reason"] = "reference-guided node and the case has no gold value (expect.result): not judged"
            return out
        # The prompt sent is the prompt stored: redacted here, not only by the writer on disk.
        system, user = (writer.redact_text(t) for t in build_prompt(rubric, node, material))
        for _ in range(PARSE_TRIES):
            call, parsed, err, infra = self._call(system, user, dict(ref, judge_node=f"{rubric['pin']}/{node['id']}"))
            out["calls"].append(call)
            if infra:
                out.update(infra=True, reason=err)
                return out
            if parsed is not None:
                verdict, reason = checked_node(parsed, material, bool(node.get("reference_guided")))
                out.update(verdict=verdict, evidence=parsed["evidence"], reason=self.scrub(reason) or "")
                return out
        out["reason"] = f"the judge's reply did not parse ({PARSE_TRIES} tries): {out['calls'][-1]['error']}"
        return out

    # ------------------------------------------------------------ one case
    def judge_case(self, case: Mapping[str, Any], material: Material, pins: list[Any],
                   ref: dict | None = None) -> JudgedCase:
        """Judge every node of every pinned rubric; `ref` names the case in run.log (holdout: by index)."""
        ref = ref if ref is not None else {"case_id": case["id"]}
        results = []
        futures = []
        for pin in pins:
            rubric, _, problem = resolve_pin(pin, self.rubrics)
            if rubric is None:
                results.append({"pin": str(pin), "rubric_id": None, "version": None, "provisional": True,
                                "why_provisional": problem, "verdict": "unscored", "infra": False,
                                "reason": problem, "nodes": []})
                futures.append(None)
                continue
            calibrated, why = self.calibration(rubric["pin"])
            results.append({"pin": rubric["pin"], "rubric_id": rubric["rubric_id"], "version": rubric["version"],
                            "provisional": not calibrated, "why_provisional": why, "verdict": None,
                            "infra": False, "reason": None, "nodes": []})
            old = self.reuse.get((case["id"], sha256_text(material.answer), rubric["pin"], PROMPT_VERSION))
            if old is not None and not old.get("infra") and not pairwise.is_pairwise(rubric):  # baseline may differ
                results[-1].update({k: old[k] for k in ("verdict", "infra", "reason", "nodes")},
                                   reused_from=self.reused_from)
                futures.append(None)
                continue
            if pairwise.is_pairwise(rubric):
                futures.append(pairwise.submit(self, rubric, str(case["id"]), material, ref, results[-1], PARSE_TRIES))
                continue
            futures.append([self.pool.submit(self._node, rubric, node, material, ref) for node in rubric["nodes"]])
        for res, futs in zip(results, futures):
            if futs is None:
                continue
            res["nodes"] = [f.result() for f in futs]
            if res.get("kind") == pairwise.KIND:
                res.update(pairwise.fold_rubric(res["nodes"]))
                continue
            infra = [n for n in res["nodes"] if n["infra"]]
            if infra:
                res.update(verdict="unscored", infra=True, reason=infra[0]["reason"])
            else:
                res["verdict"] = rubric_verdict([n["verdict"] for n in res["nodes"]])
                unknown = [n for n in res["nodes"] if n["verdict"] == "unknown"]
                why = f" ({unknown[0].get('reason')})" if unknown and unknown[0].get("reason") else ""
                res["reason"] = (f"node(s) unknown: {', '.join(n['node_id'] for n in unknown)}{why}"
                                 if res["verdict"] == "unscored" else None)
        usage = usage_of(results)
        doc = {"case_id": case["id"], "provider": self.recorded.get("provider"), "model": self.recorded.get("model"),
               "prompt_version": PROMPT_VERSION, "answer_sha256": sha256_text(material.answer), "rubrics": results,
               "usage": usage}
        return JudgedCase(layer=judged_layer(results, usage), doc=doc, usage=usage)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def usage_of(results: list[dict]) -> dict[str, int]:
    total = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "calls_without_usage": 0}
    for res in results:
        if res.get("reused_from"):
            continue  # calls made (and paid for) by the source run
        for node in res["nodes"]:
            for call in node["calls"]:
                total["calls"] += 1
                u = call.get("usage")
                if isinstance(u, dict):
                    total["input_tokens"] += int(u.get("input_tokens") or 0)
                    total["output_tokens"] += int(u.get("output_tokens") or 0)
                else:
                    total["calls_without_usage"] += 1
    return total


def _fold(results: list[dict]) -> str:
    if any(r["infra"] for r in results):
        return "infra_error"
    verdicts = [r["verdict"] for r in results]
    if "fail" in verdicts:
        return "fail"
    if verdicts and all(v == "pass" for v in verdicts):
        return "pass"
    return "unscored"


def judged_layer(results: list[dict], usage: dict[str, int]) -> dict[str, Any]:
    """The `judged` layer, decided per pin: calibrated rubric versions decide it (one that did not
    run makes it unscored, whatever the others said); provisional ones are recorded beside it
    (`provisional_verdict`) and never change it. `provisional` is true only when no calibrated pin
    decides the layer: a provisional pin beside a calibrated one never makes the layer read as a
    chosen unscored."""
    calibrated = [r for r in results if not r["provisional"]]
    provisional = [r for r in results if r["provisional"]]
    layer: dict[str, Any] = {
        "rubrics": [{"pin": r["pin"], "verdict": r["verdict"], "provisional": r["provisional"], "infra": r["infra"],
                     "why_provisional": r["why_provisional"], **pairwise.layer_fields(r)} for r in results],
        "provisional": not calibrated,
        "provisional_verdict": _fold(provisional) if provisional else None,
        "usage": usage,
    }
    verdict = _fold(calibrated) if calibrated else "unscored"
    layer["verdict"] = verdict
    if verdict == "infra_error":
        layer["reason"] = next(r["reason"] for r in calibrated if r["infra"])
    elif verdict == "unscored":
        if not calibrated:
            whys = sorted({str(r["why_provisional"]) for r in provisional})
            layer["reason"] = (f"provisional (not gating): the judge said {layer['provisional_verdict']}; "
                               + "; ".join(whys))
        else:
            layer["reason"] = "; ".join(f"{r['pin']}: {r['reason']}" for r in calibrated  # judge_unstable too
                                        if r["verdict"] not in ("pass", "fail"))
    if provisional and calibrated:
        layer["provisional_note"] = "; ".join(sorted({str(r["why_provisional"]) for r in provisional}))
    return layer


def build_runtime(plan: Mapping[str, Any], env: Mapping[str, str], state: Path,
                  execution: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> JudgeRuntime | None:
    """The judge for this run, or None when the plan does not enable one. Pre-flight checks: exit 3."""
    block = plan.get("judge")
    if not isinstance(block, dict) or not block.get("enabled"):
        return None
    cfg = judge_config.effective(block["config"])
    resolved = secrets.expand_deep(cfg, env)
    judge_config.check_resolved(resolved, "plan judge.config (judge/judge.yaml)")
    judge_config.check_command(resolved, state)
    sidecar, why = load_calibration(plan, state)
    rubrics = {r["rubric_id"]: r for r in (block.get("rubrics") or {}).values()}
    child = (command_env(plan, judge_env_names(plan), env, os.environ if environ is None else environ)
             if cfg["provider"] == "command" else None)
    runtime = JudgeRuntime(config=resolved, recorded=judge_config.manifest_view(cfg), rubrics=rubrics, state=state,
                           execution=execution, sidecar=sidecar, sidecar_why=why, identity=judge_identity(cfg, state),
                           child_env=child, key_variable=judge_probe.key_variable(cfg))
    runtime.probe = judge_probe.probe(runtime)  # exit 3 on a judge that is configured wrong
    return runtime


def load_calibration(plan: Mapping[str, Any], state: Path) -> tuple[dict | None, str | None]:
    """(sidecar, None) or (None, why every rubric is provisional), from the plan's paths."""
    return _load_sidecar((plan.get("paths") or {}).get("judge_calibration"), state)


def judge_env_names(plan: Mapping[str, Any]) -> set[str]:
    block = plan.get("judge")
    if not isinstance(block, dict) or not block.get("enabled"):
        return set()
    return secrets.env_refs(block.get("config") or {})
