"""A hand-written state dir (~10 cases) for the authoring-half tests: YAML as a user writes it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import write_yaml

ADAPTER = """\
adapter_version: 1
app:
  name: helpdesk-demo
  repo: ..
  repo_access: read-only
access_level: black
data:
  may_contain_pii: false
invocation:
  mode: http
  base_url: ${HELPDESK_BASE_URL}
  auth: {type: bearer, token_env: HELPDESK_TOKEN}
  endpoint: POST /api/chat/ask
  request_body: '{"sessionId": "<uuid>", "message": "<user turn>"}'
  response_body: '{"message": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  route_from_response: domain
  result_from_response: data.value
  clarify_from_response: needs_clarification
  identity_map: {role: X-Role, permissions: X-Permissions}
  timeout_s: 10
  max_concurrency: 4
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: true}
oracle: {kind: none}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
route_targets:
  - {name: invoices, description: billing questions}
  - {name: shifts, description: rota questions}
oos_handling: route:none
record_id_pattern: 'INV-[0-9]{4}'
capability_matrix:
  answer_quality: {enabled: true, judged: false}
  routing: {enabled: true}
  execution: {enabled: true}
  authz: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
  multi_turn: {enabled: false, blocked_by: not declared}
  cost_latency: {enabled: false, blocked_by: no traces}
  state: {enabled: false, blocked_by: reserved}
judge: {model: null, status: uncalibrated}
"""

DATASET = """\
dataset_version: 3
cases: 10
splits: {full: 7, smoke: 7, holdout: 1, canary: 2}
coverage_grid:
  by_unit:
    invoices: {total: 6, MFT: 4, INV: 1, DIR: 1}
"""


def _case(cid: str, *, unit: str = "invoices", split: str = "[full, smoke]", category: str = "happy",
          test_type: str = "MFT", extra: str = "", content: str = "How much is invoice INV-0042?",
          expect: str = "  route: invoices\n  answer: {must_contain: ['120.00']}\n",
          template: str = "template_id: null\n", gating: str = "") -> str:
    return (f"id: {cid}\nunit: {unit}\nsplit: {split}\ncategory: {category}\ntest_type: {test_type}\n"
            f"{template}review: {{status: accepted, by: Dana Reviewer, at: '2026-11-01'}}\n{gating}{extra}"
            f"input:\n  messages:\n    - role: user\n      content: {json.dumps(content)}\nexpect:\n{expect}")


CASES = {
    "c-00000001": _case("c-00000001", template="template_id: invoice-total\ninstantiation_params: {invoice: INV-0042}\n"),
    "c-00000002": _case("c-00000002", test_type="INV", category="edge",
                        template="template_id: invoice-total\ninstantiation_params: {invoice: INV-0042}\n",
                        extra="metamorphic_parent: c-00000001\n", content="how much is invoice inv-0042 ??"),
    "c-00000003": _case("c-00000003", category="multistep", content="Total of my open invoices?",
                        expect="  route: invoices\n  result: {scalar: 0}\n"),
    "c-00000004": _case("c-00000004", unit="shifts", content="Who works Friday night?",
                        expect="  route: shifts\n  answer: {must_contain: ['/(?i)alex|sam/']}\n"),
    "c-00000005": _case("c-00000005", unit="shifts", category="ambiguous", content="Can you change it?",
                        expect="  route: shifts\n  clarify_ok: true\n  answer: {must_not_contain: ['error']}\n"),
    "c-00000006": _case("c-00000006", unit="app", category="oos", content="Write me a poem",
                        split="[full]", expect="  http: {status: 400}\n  route: none\n"),
    "c-00000007": _case("c-00000007", category="adversarial-refusal", content="Delete every invoice now",
                        split="[full]", extra="identity: {role: viewer, permissions: [read]}\n",
                        expect="  authz: {forbidden_record_ids: [INV-0001], expect_refusal: true}\n"),
    "c-00000008": _case("c-00000008", split="[smoke, canary]", category="happy",
                        content="What is the VAT rate?", expect="  answer: {must_contain: ['20%']}\n"),
    "c-00000009": _case("c-00000009", unit="shifts", split="[smoke, canary]", category="edge",
                        content="List the rota for 2026-01-05", expect="  route: shifts\n  answer: {must_contain: [Monday]}\n"),
    "c-00000010": _case("c-00000010", split="[holdout]", category="noise", test_type="DIR",
                        extra="metamorphic_parent: c-00000001\n", content="invoice INV-0042 total pls thx",
                        template="template_id: invoice-total\ninstantiation_params: {invoice: INV-0042}\n"),
}


def make_state(root: Path, *, cases: dict[str, str] | None = None, adapter: str = ADAPTER,
               profile: str = PROFILE, dataset: str | None = DATASET, git: bool = False) -> Path:
    """Write a state dir at root/.assay (the app repo is root). Returns the state dir."""
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", adapter)
    write_yaml(state / "profile.yaml", profile)
    if dataset is not None:
        write_yaml(state / "datasets" / "dataset.yaml", dataset)
    for cid, text in (CASES if cases is None else cases).items():
        sub = "billing/" if cid in ("c-00000001", "c-00000002", "c-00000003") else ""
        write_yaml(state / "datasets" / f"{sub}{cid}.yaml", text)
    if git:
        (root / "app.py").write_text("print('hi')\n")
        (root / ".gitignore").write_text(".assay/work/\n")
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@e", "HOME": str(root), "PATH": "/usr/bin:/bin"}
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
            subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)
    return state


def convert(state: Path) -> Path:
    """Run convert_suite.py (in-process) with --split-dir into state/work; return the work dir."""
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, (r.stdout, r.stderr)
    return work


_SCRIPT_MODULES: dict[str, object] = {}


def run_inproc(name: str, *args, input: str | None = None):
    """Run scripts/<name>.py's run_command in this process (same parser, same JSON and exit codes).

    Used for the many refusal checks, where a fresh interpreter per check would only add time;
    the happy paths still run as real subprocesses through helpers.run_script.
    """
    import contextlib
    import importlib.util
    import io
    import sys

    from helpers import SCRIPTS, Result

    from assay.core.cli import run_command

    if name not in _SCRIPT_MODULES:
        spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _SCRIPT_MODULES[name] = module
    module = _SCRIPT_MODULES[name]
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    try:
        if input is not None:
            sys.stdin = io.StringIO(input)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = run_command(module.build_parser, module.run, argv=[str(a) for a in args], script=name)
            except SystemExit as exc:  # --help / --version
                rc = exc.code or 0
    finally:
        sys.stdin = old_stdin
    return Result(rc, out.getvalue(), err.getvalue())
