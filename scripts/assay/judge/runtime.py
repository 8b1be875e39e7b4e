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
from ..core.runplan import RunPlan
from ..core.vocab import JUDGE_UNSTABLE
from ..invoke.outcome import Outcome, attempt_with_retries
from . import config as judge_config
from . import pairwise
from . import probe as judge_probe
from . import served
from . import transport
from .binding import CALIBRATION_SCHEMA, calibration_of, judge_identity  # noqa: F401 (re-exported)
from .binding import load_calibration as _load_sidecar
from .binding import lowered_floors, rubric_sha256
from .env import allowlisted_unset, command_env, say_allowlisted_unset
from .fold import fold_node, fold_pair_node, judged_layer, usage_of  # noqa: F401 (judged_layer re-exported)
from .prompt import ANSWER_SCOPE, PROMPT_VERSION, Material, as_stdin, build_prompt
from .providers import build_request, read_reply
from .rubrics import resolve_pin
from .verdict import checked_node, parse_reply, rubric_verdict

PARSE_TRIES = 2          # an unparseable reply is retried once, then the node is unknown


# ---------------------------------------------------------------- the runtime
@dataclass
class JudgedCase:
    layer: dict[str, Any]
    doc: dict[str, Any]
    usage: dict[str, Any]


@dataclass
class JudgeRuntime:
    config: dict[str, Any]                 # resolved (secrets in it): the wire only; an ensemble's `judges` too
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
    probe: Any = None                      # the pre-flight probe's result (judge_probe.probe); a list for an ensemble
    baseline: Any = None                   # pairwise rubrics: the baseline's answers (judge.pairwise.BaselineAnswers)
    key_variable: str | None = None        # "$VAR" the api_key comes from, named in judge errors
    key_variables: list[str | None] = field(default_factory=list)   # per judge of an ensemble
    cache: Any = None                      # assay.replay.session.ReplaySession: the verdict cache
    _pool: ThreadPoolExecutor | None = field(default=None, repr=False)

    @property
    def judges(self) -> list[dict[str, Any]]:
        """Every judge asked (one, or each of an ensemble), resolved."""
        return judge_config.members(self.config)

    @property
    def aggregate(self) -> str:
        return judge_config.aggregate_of(self.config)

    @property
    def repeats(self) -> int:
        return judge_config.repeats_of(self.config)

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
        # identity: what the verdicts are of, the scripts' content too (label.py keeps it; --write checks it)
        return dict(self.recorded, enabled=True, prompt_version=PROMPT_VERSION, probe=self.probe, identity=self.identity,
                    pairwise_baseline=getattr(self.baseline, "run_id", None),
                    rubrics={p: {"calibrated": self.calibration(p)[0], "why_provisional": self.calibration(p)[1],
                                 "calibrated_below_defaults": (lowered_floors(self.sidecar, p)
                                                               if self.calibration(p)[0] else None)}
                             for p in pins})

    def _key_var(self, judge: int) -> str | None:
        return self.key_variables[judge] if judge < len(self.key_variables) else self.key_variable

    # ------------------------------------------------------------ one call
    def _send(self, cfg: dict[str, Any], system: str, user: str, ask: Any = None) -> Outcome:
        timeout = float(cfg["timeout_s"])
        if cfg["provider"] == "command":
            return transport.run_command(list(cfg["command"]), as_stdin(system, user), timeout, self.state, self.child_env)
        url, headers, body = (build_request(cfg, system, user) if ask is None
                              else build_request(cfg, system, user, ask.shape))
        return transport.post(url, headers, dumps(body, indent=None).encode("utf-8"), timeout, bool(cfg.get("insecure_tls")))

    def _call(self, system: str, user: str, where: dict, judge: int = 0,
              ask: Any = None) -> tuple[dict[str, Any], dict | None, str | None, bool]:
        """One judge call with retries -> (call record, parsed verdict or None, error, infra). Every
        judge call of a run goes through here (`judge`: which judge of an ensemble, 0-based); through
        the verdict cache when the run has one (a hit is marked `cache` in the call record). `ask`
        (assay.judge.pairwise.Ask) asks for another reply than a node verdict: its shape and parser."""
        if self.cache is None:
            call, *rest = self._call_live(system, user, where, judge, ask)
        else:
            from .verdict_cache import judge_through
            call, *rest = judge_through(self, system, user, dict(where, judge=judge),
                                        lambda s, u, _w: self._call_live(s, u, where, judge, ask))
        return (served.mark(call, self.judges[judge]), *rest)   # a cached call is checked against this judge

    def _call_live(self, system: str, user: str, where: dict, judge: int = 0,
                   ask: Any = None) -> tuple[dict[str, Any], dict | None, str | None, bool]:
        cfg = self.judges[judge]

        def on_retry(attempt: int, out: Outcome, wait: float) -> None:
            if self.on_retry:
                self.on_retry(attempt=attempt, outcome=self.scrub(out.describe()), wait_s=round(wait, 3), **where)
        outcomes = attempt_with_retries(lambda: self._send(cfg, system, user, ask),
                                        max_attempts=int(self.execution["max_attempts"]),
                                        backoff_s=list(self.execution["backoff_s"]), on_retry=on_retry,
                                        sleep=self.sleep)
        final = outcomes[-1]
        target = judge_probe.target(cfg, self._key_var(judge))
        call: dict[str, Any] = {"prompt": as_stdin(system, user), "raw_reply": None, "parsed": None,
                                "latency_ms": round(sum(o.latency_ms for o in outcomes), 3), "usage": None,
                                "error": None, "attempts": len(outcomes), "status": final.status}
        if len(self.judges) > 1 or cfg.get("model"):
            call["model"] = cfg.get("model")
        if final.retriable:
            call["error"] = self.scrub(f"judge unavailable: {final.describe()} on all {len(outcomes)} attempt(s) "
                                       f"({target})")
            call["raw_reply"] = self.scrub(final.body_text)
            return call, None, call["error"], True
        if final.status is None or not 200 <= final.status < 300:
            call["raw_reply"] = self.scrub(final.body_text)
            call["error"] = self.scrub(f"judge refused the call: {target} got HTTP {final.status}: "
                                       f"{writer.clip(final.body_text or '', 200)}"
                                       + judge_probe.hint(cfg, final.status, self._key_var(judge), body=final.body_text))
            return call, None, call["error"], True
        provider = cfg["provider"]
        body = final.body_text if provider == "command" else final.body_json
        if provider != "command" and body is None:
            call["raw_reply"] = self.scrub(final.body_text)
            call["error"] = "the provider's reply is not JSON"
            return call, None, call["error"], False
        name = served.served_model_of(body)   # the model the provider says answered (a command names none)
        if name:   # checked against the resolved model in memory; recorded as safe to write
            call["served_model"] = self.scrub(name)
            served.mark(call, cfg, served=name)
        raw, value, usage, err = read_reply(provider, body) if ask is None else read_reply(provider, body, ask.shape.tool)
        call["raw_reply"], call["usage"] = self.scrub(raw), usage
        if err:
            call["error"] = self.scrub(err)
            return call, None, err, False
        parsed, perr = parse_reply(value) if ask is None else ask.parse(value)
        call["parsed"], call["error"] = parsed, perr
        return call, parsed, perr, False

    def _ask(self, rubric: dict, node: dict, material: Material, ref: dict, judge: int, ask: int,
             prompt: tuple[str, str]) -> dict[str, Any]:
        """One judge's answer to one node (one of `repeats` asks): an unparseable reply is retried once."""
        out: dict[str, Any] = {"judge": judge + 1, "ask": ask, "verdict": "unknown", "evidence": [], "reason": "",
                               "infra": False, "calls": []}
        where = dict(ref, judge_node=f"{rubric['pin']}/{node['id']}")
        if len(self.judges) > 1:
            where["judge"] = judge + 1
        for _ in range(PARSE_TRIES):
            call, parsed, err, infra = self._call(prompt[0], prompt[1], where, judge)
            if len(self.judges) > 1 or self.repeats > 1:
                call.update(judge=judge + 1, ask=ask)
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

    def _node_asks(self, rubric: dict, node: dict, material: Material, ref: dict) -> list | None:
        """Every (judge, ask) of one node on the pool, or None when the node is not judged."""
        if node.get("reference_guided") and material.gold is None:
            return None
        # The prompt sent is the prompt stored: redacted here, not only by the writer on disk.
        prompt = tuple(writer.redact_text(t) for t in build_prompt(rubric, node, material))
        return [self.pool.submit(self._ask, rubric, node, material, ref, j, r, prompt)
                for j in range(len(self.judges)) for r in range(1, self.repeats + 1)]

    def _node(self, node: dict, futures: list | None) -> dict[str, Any]:
        out: dict[str, Any] = {"node_id": node["id"], "criterion": node["criterion"], "verdict": "unknown",
                               "evidence": [], "reason": "", "infra": False, "calls": []}
        if futures is None:
            out["reason"] = "reference-guided node and the case has no gold value (expect.result): not judged"
            return out
        asks = [f.result() for f in futures]
        folded = fold_node(asks, self.aggregate, len(self.judges))
        out.update({k: folded[k] for k in ("verdict", "evidence", "reason", "infra")})
        out["calls"] = [c for a in asks for c in a["calls"]]
        if len(self.judges) > 1 or self.repeats > 1:
            out["judges"] = folded["judges"]
        return out

    # ------------------------------------------------------------ one case
    def judge_case(self, case: Mapping[str, Any], material: Material, pins: list[Any],
                   ref: dict | None = None, turn: int | None = None) -> JudgedCase:
        """Judge every node of every pinned rubric on `material` (a single-turn case's answer, one
        turn of a conversation, or a whole conversation: Material.scope); `ref` names the case in
        run.log (holdout: by index); `turn` is the conversation turn judged."""
        ref = ref if ref is not None else {"case_id": case["id"]}
        if turn is not None:
            ref = dict(ref, turn=turn)
        results = []
        futures = []
        for pin in pins:
            rubric, _, problem = resolve_pin(pin, self.rubrics)
            if rubric is None:
                # a pin naming no rubric file at that version (a typo, a version bumped without its cases;
                # only through make_plan --allow-invalid) judged nothing: a check that never ran, never a
                # provisional pin that leaves the case to pass on its other layers
                results.append({"pin": str(pin), "rubric_id": None, "version": None, "provisional": False,
                                "why_provisional": None, "verdict": "unscored", "infra": False,
                                "reason": f"never judged: {problem}; fix the pin in the case", "nodes": []})
                futures.append(None)
                continue
            calibrated, why = self.calibration(rubric["pin"])
            content = rubric_sha256(rubric)
            results.append({"pin": rubric["pin"], "rubric_id": rubric["rubric_id"], "version": rubric["version"],
                            "rubric_sha256": content,
                            "provisional": not calibrated, "why_provisional": why, "verdict": None,
                            "infra": False, "reason": None, "nodes": []})
            old = (self.reuse.get((case["id"], sha256_text(material.answer), rubric["pin"], PROMPT_VERSION))
                   if material.scope == ANSWER_SCOPE and not pairwise.is_pairwise(rubric) else None)
            # a verdict is reused only for the rubric text it judged (an older judge.json without the
            # hash is judged again) and, rescore checks, the same judge identity; never a pairwise one
            # (its baseline may differ)
            if old is not None and not old.get("infra") and old.get("rubric_sha256") == content:
                results[-1].update({k: old[k] for k in ("verdict", "infra", "reason", "nodes")},
                                   reused_from=self.reused_from)
                futures.append(None)
                continue
            if pairwise.is_pairwise(rubric):
                subs = pairwise.submit(self, rubric, str(case["id"]), material, ref, results[-1], PARSE_TRIES)
                futures.append(None if subs is None else (pairwise.KIND, subs))
                continue
            futures.append(("nodes", [(node, self._node_asks(rubric, node, material, ref)) for node in rubric["nodes"]]))
        for res, futs in zip(results, futures):
            if futs is None:
                continue
            kind, items = futs
            if kind == pairwise.KIND:
                res["nodes"] = [fold_pair_node(node, [f.result() for f in fs], self.aggregate, len(self.judges))
                                for node, fs in items]
                res.update(pairwise.fold_rubric(res["nodes"]))
                continue
            res["nodes"] = [self._node(node, f) for node, f in items]
            infra = [n for n in res["nodes"] if n["infra"]]
            if infra:
                res.update(verdict="unscored", infra=True, reason=infra[0]["reason"])
            else:
                res["verdict"] = rubric_verdict([n["verdict"] for n in res["nodes"]])
                unknown = [n for n in res["nodes"] if n["verdict"] == "unknown"]
                unstable = [n for n in res["nodes"] if n["verdict"] == JUDGE_UNSTABLE]
                why = f" ({unknown[0].get('reason')})" if unknown and unknown[0].get("reason") else ""
                res["reason"] = (f"node(s) unknown: {', '.join(n['node_id'] for n in unknown)}{why}"
                                 if res["verdict"] == "unscored" else None)
                if res["verdict"] == JUDGE_UNSTABLE:
                    res["reason"] = "; ".join(f"node {n['node_id']}: {n['reason']}" for n in unstable)
        if material.scope != ANSWER_SCOPE:
            for res in results:
                res["scope"] = material.scope
        usage = usage_of(results)
        doc = {"case_id": case["id"], "provider": self.recorded.get("provider"), "model": self.recorded.get("model"),
               "prompt_version": PROMPT_VERSION, "answer_sha256": sha256_text(material.answer), "rubrics": results,
               "usage": usage}
        if len(self.judges) > 1 or self.repeats > 1:
            doc.update(judges=self.recorded.get("judges") or [judge_config.manifest_view(self.recorded)],
                       aggregate=self.aggregate, repeats=self.repeats)
        if material.scope != ANSWER_SCOPE:
            doc.update(scope=material.scope, turn=turn)
        return JudgedCase(layer=judged_layer(results, usage), doc=doc, usage=usage)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_runtime(plan: RunPlan, env: Mapping[str, str], state: Path,
                  execution: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                  probe: bool = True) -> JudgeRuntime | None:
    """The judge for this run, or None when the plan does not enable one. Pre-flight checks: exit 3."""
    block = plan.judge_block
    if block is None or not block.get("enabled"):
        return None
    cfg = judge_config.effective(block["config"])
    resolved = secrets.expand_deep(cfg, env)
    many = isinstance(cfg.get("judges"), list)
    for i, member in enumerate(judge_config.members(resolved)):
        source = f"plan judge.config{f'.judges[{i}]' if many else ''} (judge/judge.yaml)"
        judge_config.check_resolved(member, source)
        judge_config.check_command(member, state, source=source)
    sidecar, why = load_calibration(plan, state)
    rubrics = {r["rubric_id"]: r for r in (block.get("rubrics") or {}).values()}
    unresolved = judge_config.members(cfg)
    child = (command_env(plan, judge_env_names(plan), env, os.environ if environ is None else environ)
             if any(m["provider"] == "command" for m in unresolved) else None)
    keys = [judge_probe.key_variable(m) for m in unresolved]
    runtime = JudgeRuntime(config=resolved, recorded=judge_config.manifest_view(cfg), rubrics=rubrics, state=state,
                           execution=execution, sidecar=sidecar, sidecar_why=why, identity=judge_identity(cfg, state, env),
                           child_env=child, key_variable=keys[0], key_variables=keys)
    if probe:  # exit 3 on a judge that is configured wrong; an ensemble probes each of its judges
        probes = [judge_probe.probe(runtime, judge=i) for i in range(len(runtime.judges))]
        unset = allowlisted_unset(plan, os.environ if environ is None else environ) if child is not None else []
        say_allowlisted_unset(unset, judge_probe.JUDGE.file, judge_probe.JUDGE.name)
        for member, got in zip(unresolved, probes):
            if unset and member["provider"] == "command":
                got["allowlisted_unset"] = unset
        runtime.probe = probes if many else probes[0]
    else:
        runtime.probe = {"ok": None, "reason": "replay: not probed (a cached verdict answers; a miss is judged live, "
                                               "and a judge outage is infra)"}
    return runtime


def load_calibration(plan: RunPlan, state: Path) -> tuple[dict | None, str | None]:
    """(sidecar, None) or (None, why every rubric is provisional), from the plan's paths."""
    return _load_sidecar(plan.paths.get("judge_calibration"), state)


def judge_env_names(plan: Mapping[str, Any]) -> set[str]:
    from .env import env_names
    return env_names(plan, "judge")
