"""Record the spans real agent frameworks write for tests/handoffapp.py, as test fixtures (not a test).

    .venv/bin/python tests/record_handoffspans.py [FLAVOR ...]   # rewrites tests/fixtures/handoffspans/

For each flavor (default: all below) it starts tests/handoffapp.py exporting OTLP JSON lines to
a scratch file, sends the requests of MESSAGES (and MORE, for the flavors in VENVS) with a fresh traceparent each, and writes
`{made_with, env, packages, traces: {orders, billing, hello}, exports: [TracesData...]}`.
tests/test_trace_frameworks.py reads these files. The LlamaIndex packages are not in the `test`
extra (about 190 MB: numpy, SQLAlchemy, networkx, nltk), so its spans are known from this
recording: install the packages named in PACKAGES to record again. CrewAI and Google ADK run on
their own virtual environments (`make frameworks`, tests/framework_venvs.py: VENVS below).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from framework_venvs import environment, venv_dir  # noqa: E402

OUT = HERE / "fixtures" / "handoffspans"
CAPTURE = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
MESSAGES = {"orders": "where is ORD-12?", "billing": "please send invoice INV-7", "hello": "hello there"}
# the frameworks whose live rows run few cases: every case of the end-to-end matrix, recorded
MORE = {"no-tool": "a question about my invoice", "misroute": "I was charged twice for ORD-12, invoice INV-3",
        "wrong-arg": "where is ORD-7?"}
PACKAGES = {
    "llamaindex": ("llama-index-core", "openinference-instrumentation-llama-index", "openai"),
    "autogen-oi": ("autogen-agentchat", "autogen-ext", "openinference-instrumentation-autogen-agentchat",
                   "openinference-instrumentation-openai", "openai"),
    "autogen-genai": ("autogen-agentchat", "autogen-ext", "opentelemetry-instrumentation-openai-v2", "openai"),
    "autogen-own": ("autogen-agentchat", "autogen-ext", "openai"),
    "smolagents": ("smolagents", "openinference-instrumentation-smolagents", "openai"),
    "crewai": ("crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai", "openai"),
    "adk-own": ("google-adk", "litellm", "openai", "opentelemetry-sdk"),
    "adk-oi": ("google-adk", "openinference-instrumentation-google-adk", "litellm", "openai", "opentelemetry-sdk"),
}
VENVS = {"crewai": "crewai", "adk-own": "adk", "adk-oi": "adk"}  # flavor -> .venv/frameworks-<name>


def python_of(flavor: str) -> str:
    return str(venv_dir(VENVS[flavor]) / "bin" / "python") if flavor in VENVS else sys.executable


def versions(python: str, packages: tuple[str, ...]) -> dict[str, str]:
    code = "import json, sys; from importlib.metadata import version; print(json.dumps({p: version(p) for p in sys.argv[1:]}))"
    return json.loads(subprocess.run([python, "-c", code, *packages], capture_output=True, text=True, check=True).stdout)


def record(flavor: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        span_file = Path(tmp) / "spans.jsonl"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
        env.update(OTEL_BSP_SCHEDULE_DELAY="50", PYTHONWARNINGS="ignore", **CAPTURE)
        if flavor in VENVS:
            env.update(environment(Path(tmp) / "home"))
        proc = subprocess.Popen([python_of(flavor), str(HERE / "handoffapp.py"), "--flavor", flavor,
                                 "--export", f"file:{span_file}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=env)
        port = json.loads(proc.stdout.readline())["port"]
        traces = {}
        for key, message in ({**MESSAGES, **MORE} if flavor in VENVS else MESSAGES).items():
            tid = secrets.token_hex(16)
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/chat", data=json.dumps({"message": message}).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "traceparent": f"00-{tid}-{secrets.token_hex(8)}-01"})
            print(flavor, key, urllib.request.urlopen(req, timeout=60).read().decode()[:120])
            traces[key] = tid
        proc.stdin.close()
        proc.wait(timeout=60)
        exports = [json.loads(line) for line in span_file.read_text().splitlines() if line.strip()]
    return {"made_with": f"tests/record_handoffspans.py: handoffapp.py --flavor {flavor}", "env": CAPTURE,
            "packages": versions(python_of(flavor), PACKAGES[flavor]), "traces": traces, "exports": exports}


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for flavor in argv or list(PACKAGES):
        doc = record(flavor)
        (OUT / f"{flavor}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(flavor, sum(len(ss["spans"]) for e in doc["exports"] for rs in e["resourceSpans"] for ss in rs["scopeSpans"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
