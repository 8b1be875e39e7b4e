#!/usr/bin/env python3
"""Generated benchmark suites: a plan.json for run_cases.py and the same suite for promptfoo.

The plan is built directly (not through case YAML + convert_suite + make_plan): the
benchmark measures the runner engine, and a plan is its whole interface (contracts
§5.2). Every plan is checked with ``assay.plan.validate.validate_plan`` before use.

Each case asserts every layer the runner scores without traces, against the reply
``bench/app.py::expected_for`` gives:

- http       ``expect.http.status: 200``
- routing    ``expect.route`` (the adapter reads ``route_from_response: route``)
- answer     ``must_contain`` (a literal; every 4th case also a ``/regex/``) and
             ``must_not_contain``
- execution  ``expect.result.scalar`` (the adapter reads ``result_from_response: data.value``)

The adapter points at ``${BENCH_BASE_URL}`` so one plan serves any app instance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

from app import expected_for, question_for  # noqa: E402

RUN_ID = "smoke-20260101T000000Z"
BASE_URL_ENV = "BENCH_BASE_URL"
REGEX_EVERY = 4
SIZES = (1_000, 2_000, 10_000)


def case_id(n: int) -> str:
    return f"b-{n:06d}"


def make_case(n: int) -> dict[str, Any]:
    """One case in the converted-suite shape (as convert_suite.py would emit it)."""
    exp = expected_for(n)
    must_contain = [f"total is {exp['data']['value']} units"]
    if n % REGEX_EVERY == 0:
        must_contain.append(r"/Reference BN-\d{6}\./")
    return {
        "id": case_id(n),
        "unit": exp["route"],
        "split": ["full", "smoke"],
        "category": "happy",
        "test_type": "MFT",
        "template_id": None,
        "gating": True,
        "input": {"messages": [{"role": "user", "content": question_for(n)}]},
        "expect": {
            "http": {"status": 200},
            "route": exp["route"],
            "answer": {"must_contain": must_contain, "must_not_contain": ["internal error"]},
            "result": {"scalar": exp["data"]["value"]},
        },
    }


def make_adapter(max_concurrency: int, timeout_s: float = 10) -> dict[str, Any]:
    """The adapter.yaml content (as JSON) the runner sees for the bench app."""
    return {
        "adapter_version": 1,
        "app": {"name": "bench-app"},
        "access_level": "black",
        "data": {"may_contain_pii": False},
        "invocation": {
            "mode": "http",
            "base_url": "${" + BASE_URL_ENV + "}",
            "auth": {"type": "none"},
            "endpoint": "POST /ask",
            "request_body": '{"message": "<user turn>", "session": "<uuid>", "case": "<case id>"}',
            "response_body": '{"answer": "<answer>"}',
            "health_check": {"method": "GET", "path": "/healthz", "expect_status": [200]},
            "route_from_response": "route",
            "result_from_response": "data.value",
            "timeout_s": timeout_s,
            "max_concurrency": max_concurrency,
        },
        "traces": {"source": "none"},
        "tools": [],
        "environment": {"kind": "mocked", "safe_to_attack": True},
    }


CAPABILITY_MATRIX = {
    "answer_quality": {"enabled": True},
    "routing": {"enabled": True},
    "execution": {"enabled": True},
    "trajectory": {"enabled": False, "blocked_by": "bench app emits no traces"},
    "tool_selection": {"enabled": False, "blocked_by": "bench app emits no traces"},
    "authz": {"enabled": False, "blocked_by": "bench app has no identities"},
    "multi_turn": {"enabled": False, "blocked_by": "single-turn bench"},
    "state": {"enabled": False, "blocked_by": "reserved"},
    "cost_latency": {"enabled": False, "blocked_by": "bench"},
}


def make_plan(n_cases: int, *, state_dir: str, max_concurrency: int, run_id: str = RUN_ID,
              timeout_s: float = 10) -> dict[str, Any]:
    """A validated plan_version 1 smoke plan (k=1) of ``n_cases`` cases, no canaries."""
    from assay.plan.validate import validate_plan

    plan = {
        "plan_version": 1,
        "run_id": run_id,
        "mode": "smoke",
        "k": 1,
        "gate": "soft",
        "selecting_split": "smoke",
        "paths": {"scripts_dir": None, "state_dir": state_dir, "holdout_ledger": None,
                  "judge_calibration": None},
        "adapter": make_adapter(max_concurrency, timeout_s),
        "capability_matrix": CAPABILITY_MATRIX,
        "cases": [make_case(n) for n in range(n_cases)],
        # Retries must never hide in a timing: one attempt, so any infra error shows up
        # as an infra_error verdict (bench/run.py refuses to report such a run).
        "execution": {"timeout_s": timeout_s, "max_attempts": 1, "backoff_s": []},
        "manifest_extra": {"dataset_version": 1},
    }
    return validate_plan(plan, source=f"bench plan ({n_cases} cases)")


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    return path


# --- the same suite for promptfoo ------------------------------------------------------------

# promptfoo's HTTP provider yields one output string per case; it carries the answer plus the
# route and value lines so plain `contains` / `regex` asserts check the same four things.
PROMPTFOO_TRANSFORM = "`${json.answer}\\nroute=${json.route}\\nvalue=${json.data.value}\\n`"


def promptfoo_config(n_cases: int, base_url: str, timeout_s: float = 10) -> dict[str, Any]:
    """A promptfooconfig (JSON is valid YAML) with the same cases and checks as ``make_plan``."""
    tests = []
    for n in range(n_cases):
        exp = expected_for(n)
        asserts = [
            {"type": "contains", "value": f"total is {exp['data']['value']} units"},
            {"type": "not-contains", "value": "internal error"},
            {"type": "contains", "value": f"\nroute={exp['route']}\n"},
            {"type": "contains", "value": f"\nvalue={exp['data']['value']}\n"},
        ]
        if n % REGEX_EVERY == 0:
            asserts.append({"type": "regex", "value": r"Reference BN-\d{6}\."})
        tests.append({"description": case_id(n), "vars": {"message": question_for(n)}, "assert": asserts})
    return {
        "description": f"assay bench: {n_cases} cases",
        "prompts": ["{{message}}"],
        "providers": [{
            "id": "http",
            "label": "bench-app",
            "config": {
                "url": base_url.rstrip("/") + "/ask",
                "method": "POST",
                "headers": {"Content-Type": "application/json"},
                "body": {"message": "{{prompt}}"},
                "transformResponse": PROMPTFOO_TRANSFORM,
                "timeout": int(timeout_s * 1000),
            },
        }],
        "tests": tests,
    }
