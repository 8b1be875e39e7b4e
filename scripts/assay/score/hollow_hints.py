"""Where the gate tells a user to look when a layer was asserted and never scored (a hollow layer,
score.hollow): the reason's cause when it names one, else the adapter key that feeds the layer, in
the keys the run's invocation mode has. Said at read time, never recorded. Pure."""

from __future__ import annotations

from typing import Any, Mapping

from .hollow import ADAPTER_KEY_OF_LAYER

# The `http` layer of an app the runner starts as a command (invocation.mode cli or agent): it has
# no base_url or endpoint, and a program it cannot find fails every case the same way. Said by the
# gate at read time (never recorded: results.json keeps ADAPTER_KEY_OF_LAYER's text, which --verify
# recounts); for an http app the recorded key stands.
COMMAND_KEY_OF_HTTP_LAYER = ("invocation.command (its program and arguments: a relative path resolves against "
                             "invocation.cwd, which is a fresh empty directory per attempt under cwd: scratch; "
                             "give the program's absolute path, or set cwd to the directory that holds it)")
COMMAND_MODES = ("cli", "agent")
# An agent's adapter has none of those keys: it names the CLI (program, or a whole command line) and
# what the CLI is given (mcp_config), and the agent runs in a copy of the fixture, not in cwd.
AGENT_KEY_OF_HTTP_LAYER = ("invocation.agent (program, or command: the agent CLI it starts; mcp_config: each "
                           "server's command, started by the agent in the fixture's copy; timeout_s)")


def where_to_look(layer: str, adapter_key: Any = None) -> str:
    """"check <this>" for a layer: the adapter's key that feeds it (the judge's files for `judged`)."""
    key = adapter_key or ADAPTER_KEY_OF_LAYER.get(layer, f"the adapter keys that feed {layer}")
    return str(key) if str(key).startswith("the ") else f"the adapter's {key}"


# Reasons whose cause is the app's instrumentation, not the adapter key that feeds the layer (the
# trace arrived, but without what the layer reads): (words in the reason, where to look instead).
_INSTRUMENTATION = "the app's instrumentation"
CAUSE_OF_REASON: tuple[tuple[str, str], ...] = (
    ("did not capture this call's arguments", f"{_INSTRUMENTATION}: its content capture (the setting the reason names)"),
    ("was captured (", f"{_INSTRUMENTATION}: its content capture (the setting the reason names)"),
    ("without captured output messages", f"{_INSTRUMENTATION}: its message content capture, or trace tool execution (tool spans)"),
    ("spans carry another convention's markers", "the adapter's traces.convention"),
    ("are tool calls convention", "the adapter's traces.convention, or the app's tool instrumentation"),
    ("no span maps to an LLM or tool call", f"{_INSTRUMENTATION} (are its LLM / agent / tool spans written?) "
     "and the adapter's traces.convention"),
    # the agent invoker's reasons (invoke.agent): each names the agent key that caused it
    ("did not connect: the agent had none of its tools", "the adapter's invocation.agent.mcp_config (run each "
     "server's command by hand in a copy of the fixture, with the agent's PATH and env_allowlist)"),
    ("plugin was not loaded: the agent had none of its skills", "the adapter's invocation.agent.plugin_dirs (the plugin "
     "the reason names: `claude plugin validate <dir>` says what its manifest gets wrong)"),
    ("Invalid MCP configuration", "the adapter's invocation.agent.mcp_config (the file the agent refused: the "
     "reason quotes why; its servers go under \"mcpServers\")"),
    ("a tool the agent's session did not have", "the case's expect.tools / expect.args tool name (the reason "
     "gives the closest tool the agent's session had; the transcript is the trace, traces is not read)"),
    ("the agent's model call failed: Not logged in", "the adapter's invocation.agent.env (the model's key, e.g. "
     "ANTHROPIC_API_KEY: \"${ANTHROPIC_API_KEY}\", exported before the run; the agent starts with a fresh HOME, "
     "so no login of yours is read)"),
    ("the agent did not finish within", "the adapter's invocation.agent.timeout_s (or max_turns): the agent ran "
     "until it was killed"),
)


def look_for_reason(reason: Any) -> str | None:
    """Where to look when a reason names a cause outside the adapter key (CAUSE_OF_REASON), else None."""
    text = str(reason or "")
    return next((look for words, look in CAUSE_OF_REASON if words in text), None)


def hollow_layer_line(layer: str, info: Mapping[str, Any], invocation_mode: Any = None) -> str:
    """The gate's one-line reason for a hollow layer: the hint follows the reason's cause when it
    names one (look_for_reason), else the adapter key that feeds the layer (for the `http` layer of
    an app started as a command, COMMAND_KEY_OF_HTTP_LAYER, of an agent AGENT_KEY_OF_HTTP_LAYER: it has
    no base_url or endpoint)."""
    n = info.get("cases")
    key = (AGENT_KEY_OF_HTTP_LAYER if layer == "http" and invocation_mode == "agent"
           else COMMAND_KEY_OF_HTTP_LAYER if layer == "http" and invocation_mode in COMMAND_MODES
           else info.get("adapter_key"))
    look = look_for_reason(info.get("reason")) or where_to_look(layer, key)
    return (f"layer {layer} was asserted by {n} case(s) and scored in none (a check that never ran): "
            f"most common reason: {info.get('reason') or 'none recorded'}; check {look}")
