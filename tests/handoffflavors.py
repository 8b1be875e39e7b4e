"""More frameworks for tests/handoffapp.py: AutoGen AgentChat, LlamaIndex AgentWorkflow, smolagents.

Each builder returns `handle(message) -> answer` for the same triage / billing / orders app,
built with the framework's documented multi-agent pattern, every model call going to the
scripted Chat Completions server (tests/handoffmodel.py) at `base_url`.

- `autogen-oi`      AutoGen AgentChat `Swarm([triage, billing, orders])`, the triage agent's
                    `handoffs=[...]` (tools `transfer_to_<agent>`), traced by
                    openinference-instrumentation-autogen-agentchat together with
                    openinference-instrumentation-openai (two LLM spans for each model call)
- `autogen-genai`   the same team traced by AutoGen's own GenAI spans (`invoke_agent`,
                    `execute_tool`) and opentelemetry-instrumentation-openai-v2's chat spans
- `autogen-own`     AutoGen's own spans only: no LLM span at all
- `llamaindex`      LlamaIndex `AgentWorkflow(agents=[triage, billing, orders])` of `FunctionAgent`s
                    (`can_handoff_to`: the `handoff` tool) + openinference-instrumentation-llama-index.
                    Its model is `ChatCompletionsLLM` below: llama-index-llms-openai requires
                    openai<3, which cannot be installed beside the test extra's openai pin
- `smolagents`      smolagents `ToolCallingAgent(managed_agents=[billing, orders])` +
                    openinference-instrumentation-smolagents; `OpenAIServerModel(api_base=...)`
"""

from __future__ import annotations

import json
from typing import Any

from handoffmodel import get_invoice, lookup_order

TRIAGE_PROMPT = "Route billing questions to billing and order questions to orders; greet otherwise."
_AUTOGEN_MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
                       "structured_output": False}


def autogen_swarm(base_url: str, tracing: str):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMessageTermination
    from autogen_agentchat.teams import Swarm
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    if tracing == "oi":
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor
        from openinference.instrumentation.openai import OpenAIInstrumentor
        AutogenAgentChatInstrumentor().instrument()
        OpenAIInstrumentor().instrument()
    elif tracing == "genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as OpenAIv2Instrumentor
        OpenAIv2Instrumentor().instrument()

    def client():
        return OpenAIChatCompletionClient(model="fake-model", base_url=base_url, api_key="sk-fake",
                                          model_info=_AUTOGEN_MODEL_INFO, max_retries=0)

    async def run(message: str) -> str:
        triage = AssistantAgent("triage_agent", model_client=client(), system_message=TRIAGE_PROMPT,
                                handoffs=["billing_agent", "orders_agent"])
        billing = AssistantAgent("billing_agent", model_client=client(), tools=[get_invoice],
                                 system_message="You answer invoice questions.", reflect_on_tool_use=True)
        orders = AssistantAgent("orders_agent", model_client=client(), tools=[lookup_order],
                                system_message="You answer order questions.", reflect_on_tool_use=True)
        done = MaxMessageTermination(10)  # an agent's text answer ends the run (the task is the user's text)
        for agent in ("triage_agent", "billing_agent", "orders_agent"):
            done = done | TextMessageTermination(agent)
        team = Swarm([triage, billing, orders], termination_condition=done)
        result = await team.run(task=message)
        texts = [m.content for m in result.messages if type(m).__name__ == "TextMessage"]
        return str(texts[-1] if texts else "")
    return run


def chat_completions_llm(base_url: str):
    """A LlamaIndex FunctionCallingLLM over the openai SDK's Chat Completions (what
    llama-index-llms-openai's `OpenAI` does, in the few methods an AgentWorkflow uses)."""
    import openai
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_chat_callback
    from llama_index.core.llms.function_calling import FunctionCallingLLM
    from llama_index.core.llms.llm import ToolSelection

    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)

    def wire(m: ChatMessage) -> dict:
        out: dict[str, Any] = {"role": m.role.value, "content": m.content or ""}
        if m.additional_kwargs.get("tool_calls"):
            out["tool_calls"] = m.additional_kwargs["tool_calls"]
        if m.additional_kwargs.get("tool_call_id"):
            out["tool_call_id"] = m.additional_kwargs["tool_call_id"]
        return out

    class ChatCompletionsLLM(FunctionCallingLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="fake-model", is_chat_model=True, is_function_calling_model=True)

        def _prepare_chat_with_tools(self, tools, user_msg=None, chat_history=None, verbose=False,
                                     allow_parallel_tool_calls=False, tool_required=False, **kwargs):
            messages = list(chat_history or []) + ([ChatMessage(role="user", content=user_msg)]
                                                   if isinstance(user_msg, str) else [user_msg] if user_msg else [])
            return {"messages": messages, "tools": [t.metadata.to_openai_tool() for t in tools], **kwargs}

        @llm_chat_callback()  # as every LlamaIndex LLM: the chat events the instrumentation reads
        async def achat(self, messages, **kwargs) -> ChatResponse:
            resp = await sdk.chat.completions.create(model="fake-model", messages=[wire(m) for m in messages],
                                                     **({"tools": kwargs["tools"]} if kwargs.get("tools") else {}))
            msg = resp.choices[0].message
            calls = [tc.model_dump() for tc in msg.tool_calls or []]
            return ChatResponse(message=ChatMessage(role="assistant", content=msg.content or "",
                                                    additional_kwargs={"tool_calls": calls} if calls else {}),
                                raw=resp)

        async def astream_chat(self, messages, **kwargs):
            response = await self.achat(messages, **kwargs)

            async def gen():
                yield response.model_copy(update={"delta": response.message.content})
            return gen()

        def get_tool_calls_from_response(self, response, error_on_no_tool_call=True, **kwargs):
            return [ToolSelection(tool_id=c["id"], tool_name=c["function"]["name"],
                                  tool_kwargs=json.loads(c["function"]["arguments"] or "{}"))
                    for c in response.message.additional_kwargs.get("tool_calls") or []]

        def _unused(self, *a, **k):
            raise NotImplementedError("the AgentWorkflow only chats asynchronously")
        chat = stream_chat = complete = stream_complete = _unused

        async def acomplete(self, *a, **k):
            raise NotImplementedError

        async def astream_complete(self, *a, **k):
            raise NotImplementedError

    return ChatCompletionsLLM()


def llamaindex_workflow(base_url: str):
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    LlamaIndexInstrumentor().instrument()
    llm = chat_completions_llm(base_url)

    async def run(message: str) -> str:
        billing = FunctionAgent(name="billing_agent", description="Answers invoice questions.", llm=llm,
                                system_prompt="You answer invoice questions.", tools=[get_invoice], can_handoff_to=[], streaming=False)
        orders = FunctionAgent(name="orders_agent", description="Answers order questions.", llm=llm,
                               system_prompt="You answer order questions.", tools=[lookup_order], can_handoff_to=[], streaming=False)
        triage = FunctionAgent(name="triage_agent", description="Routes requests.", llm=llm, system_prompt=TRIAGE_PROMPT,
                               tools=[], can_handoff_to=["billing_agent", "orders_agent"], streaming=False)
        workflow = AgentWorkflow(agents=[triage, billing, orders], root_agent="triage_agent")
        return str(await workflow.run(user_msg=message))
    return run


def smolagents_managed(base_url: str):
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool
    SmolagentsInstrumentor().instrument()
    model = OpenAIServerModel(model_id="fake-model", api_base=base_url, api_key="sk-fake")

    @tool
    def get_invoice_tool(invoice_id: str) -> str:
        """Fetch an invoice's total.

        Args:
            invoice_id: the invoice id, INV-<n>
        """
        return get_invoice(invoice_id)

    @tool
    def lookup_order_tool(order_id: str) -> str:
        """Look up an order's status.

        Args:
            order_id: the order id, ORD-<n>
        """
        return lookup_order(order_id)
    get_invoice_tool.name, lookup_order_tool.name = "get_invoice", "lookup_order"

    def run_sync(message: str) -> str:
        billing = ToolCallingAgent(tools=[get_invoice_tool], model=model, name="billing_agent",
                                   description="Answers invoice questions.", max_steps=3)
        orders = ToolCallingAgent(tools=[lookup_order_tool], model=model, name="orders_agent",
                                  description="Answers order questions.", max_steps=3)
        triage = ToolCallingAgent(tools=[], model=model, managed_agents=[billing, orders], name="triage_agent",
                                  max_steps=4)
        return str(triage.run(message))

    async def run(message: str) -> str:
        return run_sync(message)
    return run


def crewai_hierarchical(base_url: str):
    """CrewAI's hierarchical process: a crew of a billing and an orders agent whose manager (CrewAI's
    own "Crew Manager", `manager_llm=...`) delegates the one task with its `Delegate work to coworker`
    tool; traced by openinference-instrumentation-crewai and openinference-instrumentation-openai
    (CrewAI's native OpenAI client, the `openai` SDK)."""
    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor
    CrewAIInstrumentor().instrument()
    OpenAIInstrumentor().instrument()
    llm = LLM(model="openai/fake-model", base_url=base_url, api_key="sk-fake", max_retries=0)

    @tool("get_invoice")
    def get_invoice_tool(invoice_id: str) -> str:
        """Fetch an invoice's total."""
        return get_invoice(invoice_id)

    @tool("lookup_order")
    def lookup_order_tool(order_id: str) -> str:
        """Look up an order's status."""
        return lookup_order(order_id)

    async def run(message: str) -> str:
        billing = Agent(role="Billing agent", goal="Answer invoice questions.", backstory="You answer invoice questions.",
                        tools=[get_invoice_tool], llm=llm, allow_delegation=False, max_iter=3)
        orders = Agent(role="Orders agent", goal="Answer order questions.", backstory="You answer order questions.",
                       tools=[lookup_order_tool], llm=llm, allow_delegation=False, max_iter=3)
        task = Task(description="Answer the customer's message: {message}", expected_output="The reply to the customer.")
        crew = Crew(agents=[billing, orders], tasks=[task], process=Process.hierarchical, manager_llm=llm)
        return str(await crew.kickoff_async(inputs={"message": message}))
    return run


def adk_sub_agents(base_url: str, tracing: str):
    """Google ADK: a triage `LlmAgent(sub_agents=[billing, orders])` that transfers with ADK's own
    `transfer_to_agent` tool; every agent's model is `LiteLlm("openai/...", api_base=...)`. `own`:
    ADK's built-in OpenTelemetry spans (`invoke_agent`, `call_llm`, `execute_tool`); `oi`:
    openinference-instrumentation-google-adk."""
    import os
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: LiteLLM's bundled cost map
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    if tracing == "oi":
        from openinference.instrumentation.google_adk import GoogleADKInstrumentor
        GoogleADKInstrumentor().instrument()
    model = LiteLlm(model="openai/fake-model", api_base=base_url, api_key="sk-fake")
    billing = LlmAgent(name="billing_agent", model=model, description="Answers invoice questions.",
                       instruction="You answer invoice questions.", tools=[get_invoice])
    orders = LlmAgent(name="orders_agent", model=model, description="Answers order questions.",
                      instruction="You answer order questions.", tools=[lookup_order])
    triage = LlmAgent(name="triage_agent", model=model, instruction=TRIAGE_PROMPT, sub_agents=[billing, orders])
    runner = InMemoryRunner(agent=triage, app_name="handoff")

    async def run(message: str) -> str:
        session = await runner.session_service.create_session(app_name="handoff", user_id="user")
        answer = ""
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=types.Content(
                role="user", parts=[types.Part(text=message)])):
            if event.is_final_response() and event.content and event.content.parts:
                answer = "".join(p.text or "" for p in event.content.parts) or answer
        return answer
    return run
