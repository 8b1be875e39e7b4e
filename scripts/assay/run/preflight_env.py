"""The run's variables (pre-flight step 1, exit 3): every `${VAR}` the adapter, the cases and the
judge reference, resolved from the environment and registered for redaction."""

from __future__ import annotations

from typing import Mapping

from ..core import secrets, writer
from ..core.errors import AssayError
from ..core.runplan import RunPlan


def resolve_env(plan: RunPlan, environ: Mapping[str, str], *, app_required: bool = True,
                replaying: bool = False) -> dict[str, str]:
    """Every variable the run resolves: the adapter's and the cases' (`app_required=False`, rescore:
    those set are taken, a missing one is no error since no app is called; `replaying`, a run whose
    every answer comes from the cache: only those the replay key binds by value are required,
    `replay_unkeyed`), the judge's (always required), and the allowlisted values a cli app or a
    command judge is given (secrets too)."""
    adapter = plan.adapter
    names = secrets.env_refs(adapter.get("invocation") or {}) | secrets.env_refs(adapter.get("traces") or {})
    names |= secrets.auth_env_names(adapter) | plan.cases.env_names
    from ..judge.env import judge_allowlisted_secrets
    judge_names = _model_env_names(plan)
    if not app_required:
        optional = names - judge_names
    else:
        # the trace source is still set up on a replay (it may share the base URL's variable)
        optional = (replay_unkeyed(plan) - judge_names - secrets.env_refs(adapter.get("traces") or {})
                    if replaying else set())
    env = secrets.resolve((names | judge_names) - optional, environ, env_sources(plan))
    env.update({n: environ[n] for n in sorted(optional) if environ.get(n)})
    inv = adapter.get("invocation") or {}
    if inv.get("mode") in ("cli", "agent"):  # allowlisted values are the child's secrets too: redacted like ${VAR}s
        from ..invoke.cli import allowlisted_secrets
        env.update(allowlisted_secrets(inv, environ))
    env.update(judge_allowlisted_secrets(plan, environ))
    if _simulator_on(plan):
        from ..simulate.build import simulator_allowlisted_secrets
        env.update(simulator_allowlisted_secrets(plan, environ))
    return env


def replay_unkeyed(plan: RunPlan) -> set[str]:
    """The app variables a replay never reads: the base URL's, the auth block's, a credential-shaped
    header's or name's, a case identity's token (the replay key names them, never binds their value:
    assay.replay.key.Binding), so a replay with no app running needs none of them. Those the key binds
    (a body's `${APP_MODEL}`) and the trace source's stay required: another value is another request."""
    from ..replay.key import Binding
    inv = plan.adapter.get("invocation") or {}
    names = secrets.env_refs(inv) | secrets.auth_env_names(plan.adapter) | plan.cases.env_names
    never = Binding.of(inv, {}).never
    return {n for n in names if n in never or n in plan.cases.env_names or secrets.CREDENTIAL_HEADER.search(n)}


def placeholders(plan: RunPlan, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with every unset variable a replay never reads filled with a placeholder: the invoker
    renders the wire request (never sent) from it; the replay key holds these names, never values."""
    filled = dict(env)
    for name in replay_unkeyed(plan):
        filled.setdefault(name, "http://replay.invalid")
    return filled


def _simulator_on(plan: RunPlan) -> bool:
    """The plan enables a simulated user (the simulator's modules are loaded only then)."""
    block = plan.get("simulator")
    return isinstance(block, dict) and bool(block.get("enabled"))


def _model_env_names(plan: RunPlan) -> set[str]:
    """The variables the judge's and the simulator's configurations reference."""
    from ..judge.env import env_names
    names = env_names(plan, "judge")
    if _simulator_on(plan):
        from ..simulate.build import simulator_env_names
        names |= simulator_env_names(plan)
    return names


def register_run_secrets(plan: RunPlan, env: Mapping[str, str]) -> None:
    """From here on every byte assay writes (files, run.log, stdout) has these values redacted: every
    resolved value but an address-only variable (the app's or the judge's base URL is not a secret:
    errors show where they connected). A variable is an address only when every place that names it
    is an address. A run and a rescore of it register the same set (one rule)."""
    from ..judge.env import address_vars as model_address_vars
    app_addr = secrets.address_vars(plan.adapter, env)
    model_addr = model_address_vars(plan, env, "judge")
    if _simulator_on(plan):
        model_addr |= model_address_vars(plan, env, "simulator")
    app_names, model_names = secrets.env_refs(plan.adapter) | secrets.auth_env_names(plan.adapter), _model_env_names(plan)
    addresses = {n for n in app_addr | model_addr
                 if (n not in app_names or n in app_addr) and (n not in model_names or n in model_addr)}
    addresses -= plan.cases.env_names
    kept = {k: v for k, v in env.items() if k not in addresses}
    clash = secrets.colliding_values(kept, writer.MIN_SECRET_LEN)
    if clash:   # redacted everywhere, such a value would rewrite the run's own files: refused, named
        where = env_sources(plan)
        shown = "; ".join(f"{n} ({where.get(n) or 'an allowlisted variable (env_allowlist)'}): {why}"
                          for n, why in clash.items())
        raise AssayError(
            f"pre-flight: every variable a run is given is redacted as a secret wherever assay writes, and "
            f"these values would be redacted out of the run's own files (a verdict, a key, a count): {shown}. "
            "A value this short and common is no secret: put it in the command itself (cli: command: [env, "
            "NAME=value, ./app]; http: the adapter's text) instead of passing the variable, or give it a "
            "longer, distinctive value", 3, key="env", colliding_env=sorted(clash))
    # a URL's credentials also as they travel apart from it (a query the app or judge quotes in a 404's path);
    # a part that would rewrite the run's own files is left to the whole value
    parts = {f"{n}#{i}": part for n, v in kept.items() for i, part in enumerate(secrets.url_credentials(v))}
    clashing = secrets.colliding_values(parts, writer.MIN_SECRET_LEN)
    writer.register_secrets([*kept.values(), *(v for k, v in parts.items() if k not in clashing)])


def env_sources(plan: RunPlan) -> dict[str, str]:
    """Where each variable is referenced (file: key), so a missing one names what to fix."""
    adapter = plan.adapter
    where = {n: f"judge/judge.yaml: {path}" for n, path in
             secrets.env_ref_paths((plan.get("judge") or {}).get("config") or {}, "").items()}
    where.update({n: f"simulator/simulator.yaml: {path}" for n, path in
                  secrets.env_ref_paths((plan.get("simulator") or {}).get("config") or {}, "").items()})
    for name in sorted(plan.cases.env_names):
        where[name] = "a case's identity.token_env"
    auth = (adapter.get("invocation") or {}).get("auth") or {}
    for key in ("token_env", "cookie_env"):
        if isinstance(auth, Mapping) and isinstance(auth.get(key), str):
            where[auth[key]] = f"adapter.yaml: invocation.auth.{key}"
    for part in ("traces", "invocation"):
        where.update({n: f"adapter.yaml: {path}" for n, path in
                      secrets.env_ref_paths(adapter.get(part) or {}, part).items()})
    return where
