"""A small tool-calling agent app, instrumented by a real OTel library: the trace tests' subject.

    python tests/realagent.py --flavor genai-util [--export otlp-http|file:PATH] [--no-propagate]

Starts a fake OpenAI model (tests/fakemodel.py) and an HTTP app on loopback ports, prints one
line `{"port": N}` and serves `POST /api/chat {"message": ...}` -> `{"message": answer}` until
stdin closes. The request's `traceparent` is honoured, so the runner's traceparent-echo
correlation joins the spans. Spans go through the OTel SDK's BatchSpanProcessor to the OTLP/HTTP
exporter (configured by the standard OTEL_EXPORTER_OTLP_* variables) or, with `--export
file:PATH`, to an OTLP JSON file (one export per line, protobuf JSON: base64 ids).

Flavors (which library writes which spans; the agent loop is the same openai SDK code):
- `genai`        opentelemetry-instrumentation-openai-v2 alone: chat spans only
- `genai-util`   the same + opentelemetry-util-genai invoke_agent / execute_tool spans
- `openinference` openinference-instrumentation-openai + OITracer AGENT / TOOL spans
- `openllmetry`  opentelemetry-instrumentation-openai (Traceloop) + agent/tool spans carrying the
                 attributes traceloop-sdk's @agent / @tool decorators write (traceloop-sdk itself
                 cannot be installed next to the other packages: see references/instrument-your-app.md)
- `agents`       openai-agents + opentelemetry-instrumentation-openai-agents-v2
Content capture follows each library's own environment variable (set by the caller).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakemodel import FakeModel  # noqa: E402

AGENT_NAME = "support"
ORDERS = {"ORD-12": "shipped", "ORD-7": "delivered", "ORD-99": "lost"}
TOOLS = [
    {"type": "function", "function": {
        "name": "lookup_order", "description": "Look up an order's status.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
    {"type": "function", "function": {
        "name": "issue_refund", "description": "Refund an order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
]


def lookup_order(order_id: str) -> dict:
    return {"order_id": order_id, "status": ORDERS.get(order_id, "unknown")}


def issue_refund(order_id: str) -> dict:
    return {"order_id": order_id, "status": "refunded"}


IMPLS = {"lookup_order": lookup_order, "issue_refund": issue_refund}


class _FileExporter:
    """OTLP JSON lines (protobuf JSON, as the Collector's file exporter writes but base64 ids)."""

    def __init__(self, path: str) -> None:
        self.path, self.lock = path, threading.Lock()

    def export(self, spans):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult
        line = json.dumps(MessageToDict(encode_spans(spans)))
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def setup_tracing(export: str):
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    provider = TracerProvider(resource=Resource.create({"service.name": "realagent"}))
    if export.startswith("file:"):
        exporter = _FileExporter(export[5:])
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


def chat_loop(client, message: str, run_tool) -> str:
    """The plain openai SDK tool loop: ask, run requested tools, ask again."""
    messages = [{"role": "system", "content": "You are the support agent."}, {"role": "user", "content": message}]
    for _ in range(4):
        resp = client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
        msg = resp.choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [tc.model_dump() for tc in msg.tool_calls]})
        for tc in msg.tool_calls:
            result = run_tool(tc.function.name, json.loads(tc.function.arguments or "{}"), tc.id)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": json.dumps(result)})
    return "gave up"


def build_handler(flavor: str, base_url: str):
    """flavor -> handle(message) -> answer, with that flavor's instrumentation installed."""
    import openai
    client = openai.OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)

    def plain_tool(name, args, call_id):
        return IMPLS[name](**args)

    if flavor in ("genai", "genai-util"):
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        OpenAIInstrumentor().instrument()
        if flavor == "genai":
            return lambda message: chat_loop(client, message, plain_tool)
        from opentelemetry.util.genai.handler import get_telemetry_handler
        handler = get_telemetry_handler()

        def util_tool(name, args, call_id):
            with handler.tool(name, tool_call_id=call_id) as inv:
                inv.arguments = args
                result = IMPLS[name](**args)
                inv.tool_result = result
                return result

        def handle(message):
            with handler.invoke_local_agent(agent_name=AGENT_NAME, request_model="fake-model"):
                return chat_loop(client, message, util_tool)
        return handle

    if flavor == "openinference":
        from openinference.instrumentation import OITracer, TraceConfig
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry import trace
        OpenAIInstrumentor().instrument()
        tracer = OITracer(trace.get_tracer(__name__), config=TraceConfig())
        oi_tools = {name: tracer.tool(name=name)(fn) for name, fn in IMPLS.items()}

        def handle(message):
            with tracer.start_as_current_span(AGENT_NAME, openinference_span_kind="agent") as span:
                span.set_input(message)
                answer = chat_loop(client, message, lambda name, args, cid: oi_tools[name](**args))
                span.set_output(answer)
                return answer
        return handle

    if flavor == "openllmetry":
        from opentelemetry import context as context_api
        from opentelemetry import trace
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument()
        tracer = trace.get_tracer("traceloop.tracer")

        def entity(kind: str, name: str, fn, kwargs: dict):
            # The span traceloop-sdk 0.62.4's decorators/base.py writes for @agent / @tool.
            with tracer.start_as_current_span(f"{name}.{kind}") as span:
                span.set_attribute("traceloop.span.kind", kind)
                span.set_attribute("traceloop.entity.name", name)
                if kind == "tool":
                    span.set_attribute("gen_ai.tool.name", name)
                span.set_attribute("traceloop.entity.input", json.dumps({"args": [], "kwargs": kwargs}))
                out = fn(**kwargs)
                span.set_attribute("traceloop.entity.output", json.dumps(out))
                return out

        def handle(message):
            token = context_api.attach(context_api.set_value("agent_name", AGENT_NAME))
            try:
                return entity("agent", AGENT_NAME, lambda message: chat_loop(
                    client, message, lambda name, args, cid: entity("tool", name, IMPLS[name], args)),
                    {"message": message})
            finally:
                context_api.detach(token)
        return handle

    if flavor == "agents":
        import asyncio

        from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        OpenAIAgentsInstrumentor().instrument()
        set_tracing_disabled(False)
        aclient = openai.AsyncOpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)

        @function_tool
        def lookup_order_tool(order_id: str) -> str:
            """Look up an order's status."""
            return json.dumps(lookup_order(order_id))
        lookup_order_tool.name = "lookup_order"

        @function_tool
        def issue_refund_tool(order_id: str) -> str:
            """Refund an order."""
            return json.dumps(issue_refund(order_id))
        issue_refund_tool.name = "issue_refund"

        agent = Agent(name=AGENT_NAME, instructions="You are the support agent.",
                      model=OpenAIChatCompletionsModel(model="fake-model", openai_client=aclient),
                      tools=[lookup_order_tool, issue_refund_tool])
        loop = asyncio.new_event_loop()
        lock = threading.Lock()

        def handle(message):
            with lock:
                result = loop.run_until_complete(Runner.run(agent, message))
            return str(result.final_output)
        return handle

    raise SystemExit(f"unknown flavor {flavor!r}")


def serve(handle, provider, model, propagate: bool = True) -> int:
    """Serve `POST /api/chat` with `handle(message) -> answer` until stdin closes (see the docstring)."""
    from opentelemetry import context as context_api
    from opentelemetry.propagate import extract

    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _send(self, status: int, doc: dict) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            self._send(200, {"ok": True})

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            token = context_api.attach(extract({k.lower(): v for k, v in self.headers.items()}) if propagate
                                       else context_api.Context())
            try:
                answer = handle(str(body.get("message") or ""))
            except Exception as exc:  # the app's own error: a 500 the runner records
                self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
                return
            finally:
                context_api.detach(token)
            self._send(200, {"message": answer})

    server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    sys.stdin.read()  # run until the parent closes stdin
    server.shutdown()
    provider.shutdown()
    model.close()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flavor", required=True)
    ap.add_argument("--export", default="otlp-http")
    ap.add_argument("--no-propagate", action="store_true",
                    help="ignore the request's traceparent (an app that does not continue it)")
    args = ap.parse_args()
    provider = setup_tracing(args.export)
    model = FakeModel()
    return serve(build_handler(args.flavor, model.base_url), provider, model, propagate=not args.no_propagate)


if __name__ == "__main__":
    raise SystemExit(main())
