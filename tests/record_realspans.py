"""Record the spans real instrumentation libraries write, as test fixtures (not a test).

    .venv/bin/python tests/record_realspans.py            # rewrites tests/fixtures/realspans/*.json

For each recording below it starts tests/realagent.py with that flavor and environment (the
OTel SDK's BatchSpanProcessor, exporting OTLP JSON lines to a scratch file), sends three
requests with a fresh traceparent each ("where is ORD-12?" -> lookup_order, "hello" -> no
tool, "please refund ORD-7" -> issue_refund), and writes
`{made_with, env, packages, traces: {lookup, hello, refund}, exports: [TracesData...]}`.
The unit tests in tests/test_trace_conventions.py read these files; the packages that wrote
them are pinned in pyproject.toml's `test` extra.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import urllib.request
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "fixtures" / "realspans"
CAPTURE = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
RECORDINGS = {
    "genai-util": ("genai-util", CAPTURE),
    "genai-util-nocontent": ("genai-util", {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}),
    "genai": ("genai", CAPTURE),
    "genai-nocontent": ("genai", {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}),
    "openinference": ("openinference", {}),
    "openinference-genai-semconv": ("openinference", {"OPENINFERENCE_ENABLE_GENAI_SEMCONV": "true"}),
    "openllmetry": ("openllmetry", {}),
    "agents": ("agents", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}),
}
MESSAGES = {"lookup": "where is ORD-12?", "hello": "hello", "refund": "please refund ORD-7"}
PACKAGES = ("openai", "opentelemetry-sdk", "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai",
            "openinference-instrumentation-openai", "opentelemetry-instrumentation-openai", "openai-agents",
            "opentelemetry-instrumentation-openai-agents-v2")


def record(name: str, flavor: str, env_extra: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        span_file = Path(tmp) / "spans.jsonl"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
        env.update(OTEL_BSP_SCHEDULE_DELAY="50", OPENAI_AGENTS_DISABLE_TRACING="0", **env_extra)
        proc = subprocess.Popen([sys.executable, str(HERE / "realagent.py"), "--flavor", flavor,
                                 "--export", f"file:{span_file}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=env)
        port = json.loads(proc.stdout.readline())["port"]
        traces = {}
        for key, message in MESSAGES.items():
            tid = secrets.token_hex(16)
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/chat", data=json.dumps({"message": message}).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "traceparent": f"00-{tid}-{secrets.token_hex(8)}-01"})
            urllib.request.urlopen(req, timeout=30).read()
            traces[key] = tid
        proc.stdin.close()
        proc.wait(timeout=30)
        exports = [json.loads(line) for line in span_file.read_text().splitlines() if line.strip()]
    return {"made_with": f"tests/record_realspans.py: realagent.py --flavor {flavor}", "env": env_extra,
            "packages": {p: metadata.version(p) for p in PACKAGES}, "traces": traces, "exports": exports}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (flavor, env_extra) in RECORDINGS.items():
        doc = record(name, flavor, env_extra)
        (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(name, sum(len(ss["spans"]) for e in doc["exports"] for rs in e["resourceSpans"] for ss in rs["scopeSpans"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
