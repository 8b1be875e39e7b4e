"""A triage agent handing off to a billing and an orders agent, built with a real agent framework.

    python tests/handoffapp.py --flavor agents-v2 [--export otlp-http|file:PATH]

Each flavor follows its framework's own documented multi-agent pattern; the model client of
every agent points at tests/fakemodel.py serving the handoff script (tests/handoffmodel.py).
The HTTP app, the traceparent handling and the exporters are tests/realagent.py's.

- `agents-v2`    openai-agents `Agent(handoffs=[billing, orders])` + opentelemetry-instrumentation-
                 openai-agents-v2 (gen_ai spans; agent_handoff spans name the target)
- `agents-oi`    the same agents + openinference-instrumentation-openai-agents (handoffs are TOOL
                 spans without tool.name under an "Agent workflow" root)
- `langgraph`    langgraph-supervisor `create_supervisor([billing, orders])` over
                 `create_react_agent` workers + openinference-instrumentation-langchain
- `pydantic-ai`  pydantic-ai agents with its built-in OTel instrumentation; the triage agent hands
                 off through output functions (`ToolOutput(transfer_to_billing)`) that run the
                 next agent inside its own run
- `pydantic-ai-programmatic`  the same agents, pydantic-ai's "programmatic agent hand-off": the
                 triage agent's output says where to go and the app's code runs that agent next
- `autogen-oi`, `autogen-genai`, `autogen-own`, `llamaindex`, `smolagents`: tests/handoffflavors.py

Agent names: `Triage agent` / `Billing agent` / `Orders agent` (openai-agents, as its docs
write them), `supervisor` / `billing` / `orders` (langgraph-supervisor), `triage` / `billing` /
`orders` (pydantic-ai).
"""


import argparse
import asyncio
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakemodel import FakeModel  # noqa: E402
from handoffmodel import get_invoice, handoff_reply, lookup_order  # noqa: E402
from realagent import serve, setup_tracing  # noqa: E402

TRIAGE_PROMPT = "Route billing questions to billing and order questions to orders; greet otherwise."


def _serial(loop_fn):
    """One event loop and one request at a time (the frameworks' async runs share the loop)."""
    loop, lock = asyncio.new_event_loop(), threading.Lock()

    def handle(message: str) -> str:
        with lock:
            return loop.run_until_complete(loop_fn(message))
    return handle


def openai_agents(base_url: str, instrumentation: str):
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    if instrumentation == "v2":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    else:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument()
    set_tracing_disabled(False)
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-fake", max_retries=0))
    billing = Agent(name="Billing agent", instructions="You answer invoice questions.", model=model,
                    tools=[function_tool(get_invoice)])
    orders = Agent(name="Orders agent", instructions="You answer order questions.", model=model,
                   tools=[function_tool(lookup_order)])
    triage = Agent(name="Triage agent", instructions=TRIAGE_PROMPT, model=model, handoffs=[billing, orders])

    async def run(message: str) -> str:
        return str((await Runner.run(triage, message)).final_output)
    return _serial(run)


def langgraph_supervisor(base_url: str):
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor
    from openinference.instrumentation.langchain import LangChainInstrumentor
    LangChainInstrumentor().instrument()
    model = ChatOpenAI(model="fake-model", base_url=base_url, api_key="sk-fake", max_retries=0,
                       disable_streaming=True)
    billing = create_react_agent(model=model, tools=[get_invoice], name="billing",
                                 prompt="You answer invoice questions.")
    orders = create_react_agent(model=model, tools=[lookup_order], name="orders",
                                prompt="You answer order questions.")
    app = create_supervisor([billing, orders], model=model, prompt=TRIAGE_PROMPT).compile()
    lock = threading.Lock()

    def handle(message: str) -> str:
        with lock:
            result = app.invoke({"messages": [{"role": "user", "content": message}]})
        return str(result["messages"][-1].content)
    return handle


def pydantic_ai(base_url: str, programmatic: bool = False):
    from pydantic_ai import Agent, RunContext, ToolOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    Agent.instrument_all()
    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="sk-fake"))
    billing = Agent(model, name="billing", instructions="You answer invoice questions.", tools=[get_invoice])
    orders = Agent(model, name="orders", instructions="You answer order questions.", tools=[lookup_order])
    if programmatic:
        return pydantic_ai_programmatic(model, {"billing": billing, "orders": orders})

    async def transfer_to_billing(ctx: RunContext, request: str) -> str:
        """Hand the request to the billing agent."""
        return (await billing.run(request, usage=ctx.usage)).output

    async def transfer_to_orders(ctx: RunContext, request: str) -> str:
        """Hand the request to the orders agent."""
        return (await orders.run(request, usage=ctx.usage)).output

    triage = Agent(model, name="triage", instructions=TRIAGE_PROMPT, output_type=[
        ToolOutput(transfer_to_billing, name="transfer_to_billing"),
        ToolOutput(transfer_to_orders, name="transfer_to_orders"), str])

    async def run(message: str) -> str:
        return str((await triage.run(message)).output)
    return _serial(run)


class Handoff:
    """The triage agent's decision to pass the request on (pydantic-ai's programmatic hand-off)."""

    def __init__(self, to: str) -> None:
        self.to = to


def pydantic_ai_programmatic(model, workers: dict):
    """The app's code runs the triage agent, then the agent it chose, on the same request."""
    from pydantic_ai import Agent, ToolOutput

    def transfer_to_billing(request: str) -> Handoff:
        """Pass the request to the billing agent."""
        return Handoff("billing")

    def transfer_to_orders(request: str) -> Handoff:
        """Pass the request to the orders agent."""
        return Handoff("orders")

    triage = Agent(model, name="triage", instructions=TRIAGE_PROMPT, output_type=[
        ToolOutput(transfer_to_billing, name="transfer_to_billing"),
        ToolOutput(transfer_to_orders, name="transfer_to_orders"), str])

    from opentelemetry import trace
    tracer = trace.get_tracer("handoffapp")

    async def run(message: str) -> str:
        # the request's own span (what an HTTP server's instrumentation records) around both agent
        # runs: the trace is whole when it ends, not when the triage agent's run ends, however long
        # the app takes to start the next agent on a loaded machine
        with tracer.start_as_current_span("POST /api/chat"):
            out = (await triage.run(message)).output
            if isinstance(out, Handoff):
                return str((await workers[out.to].run(message)).output)
            return str(out)
    return _serial(run)


def build_handler(flavor: str, base_url: str):
    if flavor in ("agents-v2", "agents-oi"):
        return openai_agents(base_url, flavor.split("-")[1])
    if flavor == "langgraph":
        return langgraph_supervisor(base_url)
    if flavor in ("pydantic-ai", "pydantic-ai-programmatic"):
        return pydantic_ai(base_url, programmatic=flavor.endswith("programmatic"))
    import handoffflavors as more  # AutoGen, LlamaIndex, smolagents: their docstrings there
    if flavor.startswith("autogen-"):
        return _serial(more.autogen_swarm(base_url, flavor.split("-", 1)[1]))
    if flavor == "llamaindex":
        return _serial(more.llamaindex_workflow(base_url))
    if flavor == "smolagents":
        return _serial(more.smolagents_managed(base_url))
    if flavor == "crewai":
        return _serial(more.crewai_hierarchical(base_url))
    if flavor.startswith("adk-"):
        return _serial(more.adk_sub_agents(base_url, flavor.split("-", 1)[1]))
    raise SystemExit(f"unknown flavor {flavor!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flavor", required=True)
    ap.add_argument("--export", default="otlp-http")
    args = ap.parse_args()
    provider = setup_tracing(args.export)
    model = FakeModel(script=handoff_reply)
    return serve(build_handler(args.flavor, model.base_url), provider, model)


if __name__ == "__main__":
    raise SystemExit(main())
