"""The scenarios: what each agent is asked, what the scripted model answers, what must be indexed.

A scenario is a list of steps (a prompt, optionally resuming the last session, plus the model's
scripted turns for it), an optional set-up (register the MCP stub) and the tool calls the
assertions expect: the writer's tool name, the outcome, the MCP provider/action, the files the
typed arguments name. Every prompt and final answer carries a unique word so an assertion can
find its entry and prove it appears exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tests.conformance.agents import MCP_SERVER, Driver, Home
from tests.conformance.fake_model import Call, Turn

__all__ = [
    "MCP_ERR",
    "MCP_OK",
    "OMP_MCP_ERR",
    "OMP_MCP_OK",
    "MCP_SERVER",
    "SCENARIOS",
    "Expected",
    "Scenario",
    "Step",
]


@dataclass(frozen=True)
class Expected:
    """One tool call the session must show, as sessiondex should index it."""

    tool: str
    outcome: str  # "succeeded" | "failed"
    provider: str | None = None  # for MCP: the server
    action: str | None = None  # for MCP: the server's tool
    files: tuple[str, ...] = ()
    sidechain: bool = False


@dataclass(frozen=True)
class Step:
    prompt: str
    turns: tuple[Turn, ...]
    resume: bool = False
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    agent: str
    name: str
    steps: Callable[[Home], list[Step]]
    expected: Callable[[Home], list[Expected]]
    setup: Callable[[Driver, Home], None] | None = None
    finals: tuple[str, ...] = ()  # words of the final answers
    # words only the subagent's transcript holds (its answer also returns to the parent as the
    # Agent call's result, so it is not one of them)
    sidechain_words: tuple[str, ...] = field(default=())
    sdk: bool = False  # written by a Node script with Pi's SessionManager, not by the CLI
    entries: int = 0  # entries the main session must index (active branch)
    sidechain_entries: int = 0  # entries the subagent's session must index

    @property
    def key(self) -> str:
        return f"{self.agent}/{self.name}"


def _mcp_direct(driver: Driver, home: Home) -> None:
    options = ("--exposure", "direct") if driver.agent == "pi" else ()
    driver.mcp_add(home, MCP_SERVER, driver.stub_command(), *options)


def _mcp_codemode(driver: Driver, home: Home) -> None:
    driver.mcp_add(home, MCP_SERVER, driver.stub_command())


FAIL_CMD = "echo SHELLOUTQ7; exit 3"
MCP_OK = f"mcp__{MCP_SERVER}__lookup"
MCP_ERR = f"mcp__{MCP_SERVER}__explode"
OMP_MCP_OK = f"mcp__{MCP_SERVER}_lookup"
OMP_MCP_ERR = f"mcp__{MCP_SERVER}_explode"


def _notes(home: Home) -> str:
    return str(home.work / "notes.txt")


# ------------------------------------------------------------------------------------- shell


def _shell_steps(agent: str) -> Callable[[Home], list[Step]]:
    def steps(home: Home) -> list[Step]:
        prompt = "Read the notes and run the failing command PROMPTSHELLQ7"
        final = Turn.say("The command failed with exit 3 FINALSHELLQ7")
        turns: tuple[Turn, ...]
        if agent in ("pi", "omp"):
            turns = (Turn.tool("read", path=_notes(home)), Turn.tool("bash", command=FAIL_CMD))
        elif agent == "claude":
            turns = (
                Turn.tool("Read", file_path=_notes(home)),
                Turn.tool("Bash", command=FAIL_CMD, description="Run the failing command"),
            )
            return [Step(prompt, (*turns, final), options=("--allowedTools", "Bash,Read"))]
        elif agent in ("gemini", "qwen"):
            turns = (Turn.tool("read_file", file_path=_notes(home)),
                     Turn.tool("run_shell_command", command=FAIL_CMD))  # fmt: skip
        elif agent == "copilot":
            turns = (
                Turn.tool("view", path=_notes(home)),
                Turn.tool("bash", command=FAIL_CMD, description="Run the failing command"),
            )
        else:
            turns = (Turn.tool("exec_command", cmd=FAIL_CMD),)
        return [Step(prompt, (*turns, final))]

    return steps


def _shell_expected(agent: str) -> Callable[[Home], list[Expected]]:
    def expected(home: Home) -> list[Expected]:
        if agent in ("pi", "omp"):
            return [Expected("read", "succeeded", files=(_notes(home),)),
                    Expected("bash", "failed")]  # fmt: skip
        if agent == "claude":
            return [Expected("Read", "succeeded", files=(_notes(home),)),
                    Expected("Bash", "failed")]  # fmt: skip
        if agent in ("gemini", "qwen"):
            return [Expected("read_file", "succeeded", files=(_notes(home),)),
                    Expected("run_shell_command", "failed")]  # fmt: skip
        if agent == "copilot":
            # the bash call itself succeeds (success: true); its exit code 3 is the failure
            return [Expected("view", "succeeded", files=(_notes(home),)),
                    Expected("bash", "failed")]  # fmt: skip
        return [Expected("exec_command", "failed")]

    return expected


# ------------------------------------------------------------------------------------ resume


def _resume_steps(agent: str) -> Callable[[Home], list[Step]]:
    shell = {"pi": ("bash", "command"), "claude": ("Bash", "command"),
             "codex": ("exec_command", "cmd"), "omp": ("bash", "command"),
             "gemini": ("run_shell_command", "command"),
             "qwen": ("run_shell_command", "command"),
             "copilot": ("bash", "command")}[agent]  # fmt: skip
    options = ("--allowedTools", "Bash") if agent == "claude" else ()

    def steps(home: Home) -> list[Step]:
        args = {shell[1]: "echo RESUMEOUTQ7"}
        if agent in ("claude", "copilot"):
            args["description"] = "Echo a word"
        return [
            Step("First prompt of the session PROMPTFIRSTQ7",
                 (Turn.say("First answer FINALFIRSTQ7"),), options=options),
            Step("Second prompt, same session PROMPTSECONDQ7",
                 (Turn.tool(shell[0], **args), Turn.say("Second answer FINALSECONDQ7")),
                 resume=True, options=options),
        ]  # fmt: skip

    return steps


def _resume_expected(agent: str) -> Callable[[Home], list[Expected]]:
    name = {"pi": "bash", "claude": "Bash", "codex": "exec_command", "omp": "bash",
            "gemini": "run_shell_command", "qwen": "run_shell_command",
            "copilot": "bash"}[agent]  # fmt: skip
    return lambda home: [Expected(name, "succeeded")]


# --------------------------------------------------------------------------------------- mcp


def _mcp_names(agent: str) -> tuple[str, str]:
    """The names the agent gives the stub's tools: ``mcp__needle__<tool>``, except omp's own
    ``mcp__needle_<tool>`` (one "_": ``createMCPToolName``)."""
    if agent == "omp":
        return OMP_MCP_OK, OMP_MCP_ERR
    return MCP_OK, MCP_ERR


def _mcp_steps(agent: str) -> Callable[[Home], list[Step]]:
    ok, err = _mcp_names(agent)
    if agent == "copilot":
        # the model sees Copilot's "<server>-<tool>"; its events name server and tool apart
        ok, err = f"{MCP_SERVER}-lookup", f"{MCP_SERVER}-explode"

    def steps(home: Home) -> list[Step]:
        calls = [Turn.tool(ok, word="haystack"), Turn.tool(err, why="on purpose")]
        options: tuple[str, ...] = ()
        if agent == "claude":
            # MCP tools are deferred: Claude Code's model selects them with ToolSearch first.
            calls.insert(0, Turn.tool("ToolSearch", query=f"select:{MCP_OK},{MCP_ERR}"))
            options = ("--allowedTools", f"ToolSearch,{MCP_OK},{MCP_ERR}")
        elif agent == "codex":
            options = ("-c", f'mcp_servers.{MCP_SERVER}.default_tools_approval_mode="approve"')
        final = Turn.say("Lookup worked, explode failed FINALMCPQ7")
        return [Step("Look up haystack, then explode PROMPTMCPQ7", (*calls, final),
                     options=options)]  # fmt: skip

    return steps


def _mcp_expected(agent: str) -> Callable[[Home], list[Expected]]:
    ok, err = _mcp_names(agent)

    def expected(home: Home) -> list[Expected]:
        found = [
            Expected(ok, "succeeded", provider=MCP_SERVER, action="lookup"),
            Expected(err, "failed", provider=MCP_SERVER, action="explode"),
        ]
        if agent == "claude":
            found.insert(0, Expected("ToolSearch", "succeeded"))
        return found

    return expected


def _unapproved_steps(home: Home) -> list[Step]:
    # Without default_tools_approval_mode Codex refuses the call ("requires approval, but
    # approval policy is never"): a failed MCP call the server never saw.
    turns = (Turn.tool(MCP_OK, word="refused"), Turn.say("It was refused FINALREFUSEDQ7"))
    return [Step("Look up a word without approval PROMPTREFUSEDQ7", turns)]


def _unapproved_expected(home: Home) -> list[Expected]:
    return [Expected(MCP_OK, "failed", provider=MCP_SERVER, action="lookup")]


# ---------------------------------------------------------------------------------- subagent


def _subagent_steps(home: Home) -> list[Step]:
    agent_call = Turn.tool(
        "Agent", description="Echo a word", prompt="Echo the word SUBPROMPTQ7 with Bash",
        subagent_type="general-purpose", run_in_background=False,
    )  # fmt: skip
    sub_bash = Turn.tool("Bash", command="echo SUBOUTQ7", description="Echo a word")
    turns = (
        agent_call,  # the parent asks for an agent
        sub_bash,  # the subagent's first request
        Turn.say("Echoed it SUBFINALQ7"),  # the subagent's answer
        Turn.say("The agent is done FINALSUBAGENTQ7"),  # the parent's final answer
    )
    return [Step("Ask an agent to echo a word PROMPTSUBAGENTQ7", turns,
                 options=("--allowedTools", "Agent,Bash"))]  # fmt: skip


def _subagent_expected(home: Home) -> list[Expected]:
    return [Expected("Agent", "succeeded"), Expected("Bash", "succeeded", sidechain=True)]


def _copilot_subagent_steps(home: Home) -> list[Step]:
    task = {"description": "Echo a word", "prompt": "Echo the word SUBPROMPTQ7 with bash",
            "agent_type": "general-purpose", "name": "echoer"}  # fmt: skip
    turns = (
        Turn(calls=(Call("task", task),)),  # the parent asks for a sub-agent
        Turn.tool("bash", command="echo SUBOUTQ7", description="Echo a word"),  # the sub-agent
        Turn.say("Echoed it SUBFINALQ7"),  # the sub-agent's answer
        Turn.say("The agent is done FINALSUBAGENTQ7"),  # the parent's final answer
    )
    return [Step("Ask an agent to echo a word PROMPTSUBAGENTQ7", turns)]


def _copilot_subagent_expected(home: Home) -> list[Expected]:
    return [Expected("task", "succeeded"), Expected("bash", "succeeded", sidechain=True)]


# ---------------------------------------------------------------------------------- codemode

CODEMODE_SCRIPT = (
    "const r = await tools.bash({ command: 'echo CODEMODEOUTQ7' });\n"
    "const m = await tools.mcp__needle__lookup({ word: 'codemode' });\n"
    "try { await tools.mcp__needle__explode({ why: 'codemode' }); } catch (e) { text('caught'); }\n"
    "text(r.output);\n"
    "return 'done';\n"
)


def _codemode_steps(home: Home) -> list[Step]:
    turns = (Turn.tool("codemode", code=CODEMODE_SCRIPT), Turn.say("Script ran FINALCODEMODEQ7"))
    return [Step("Run a codemode script PROMPTCODEMODEQ7", turns,
                 options=("--tools", "read,bash,edit,write,codemode"))]  # fmt: skip


def _codemode_expected(home: Home) -> list[Expected]:
    return [
        Expected("codemode", "succeeded"),
        Expected("bash", "succeeded"),
        Expected(MCP_OK, "succeeded", provider=MCP_SERVER, action="lookup"),
        Expected(MCP_ERR, "failed", provider=MCP_SERVER, action="explode"),
    ]


# ---------------------------------------------------------------------------------- no match

NO_MATCH_CMD = "grep -n NOSUCHWORDQ7 notes.txt"


def _no_match_steps(home: Home) -> list[Step]:
    turns = (Turn.tool("run_shell_command", command=NO_MATCH_CMD),
             Turn.say("Nothing matched FINALNOMATCHQ7"))  # fmt: skip
    return [Step("Search the notes for a word PROMPTNOMATCHQ7", turns)]


def _no_match_expected(home: Home) -> list[Expected]:
    # grep exits 1: no line matched, which is an answer, not a failure (stages.shell_exit)
    return [Expected("run_shell_command", "succeeded")]


def _copilot_no_match_steps(home: Home) -> list[Step]:
    turns = (Turn.tool("bash", command=NO_MATCH_CMD, description="Search the notes"),
             Turn.say("Nothing matched FINALNOMATCHQ7"))  # fmt: skip
    return [Step("Search the notes for a word PROMPTNOMATCHQ7", turns)]


def _copilot_no_match_expected(home: Home) -> list[Expected]:
    # Copilot writes the exit code 1 (shellExecution.exitCode): grep found nothing
    return [Expected("bash", "succeeded")]


# --------------------------------------------------------------------------------- the table


def _all() -> dict[str, Scenario]:
    # Entry counts: each prompt, each tool call, each tool result and each final answer is one
    # entry; nothing else (system prompts, attachments, bookkeeping lines) is.
    found: list[Scenario] = []
    for agent in ("pi", "claude", "codex", "omp", "copilot"):
        shell_entries = 4 if agent == "codex" else 6  # Codex has no read tool: no read call
        mcp_entries = 8 if agent == "claude" else 6  # Claude selects the tools with ToolSearch
        found += [
            Scenario(agent, "shell", _shell_steps(agent), _shell_expected(agent),
                     finals=("FINALSHELLQ7",), entries=shell_entries),
            Scenario(agent, "resume", _resume_steps(agent), _resume_expected(agent),
                     finals=("FINALFIRSTQ7", "FINALSECONDQ7"), entries=6),
            Scenario(agent, "mcp", _mcp_steps(agent), _mcp_expected(agent), setup=_mcp_direct,
                     finals=("FINALMCPQ7",), entries=mcp_entries),
        ]  # fmt: skip
    for agent in ("gemini", "qwen"):
        found += [
            Scenario(agent, "shell", _shell_steps(agent), _shell_expected(agent),
                     finals=("FINALSHELLQ7",), entries=6),
            Scenario(agent, "resume", _resume_steps(agent), _resume_expected(agent),
                     finals=("FINALFIRSTQ7", "FINALSECONDQ7"), entries=6),
            Scenario(agent, "no-match", _no_match_steps, _no_match_expected,
                     finals=("FINALNOMATCHQ7",), entries=4),
        ]  # fmt: skip
    found += [
        Scenario("claude", "subagent", _subagent_steps, _subagent_expected,
                 finals=("FINALSUBAGENTQ7",), sidechain_words=("SUBOUTQ7",),
                 entries=4, sidechain_entries=4),
        # Copilot's sub-agent writes into its parent's file: sidechain entries of one session
        Scenario("copilot", "subagent", _copilot_subagent_steps, _copilot_subagent_expected,
                 finals=("FINALSUBAGENTQ7",), entries=4, sidechain_entries=4),
        Scenario("copilot", "no-match", _copilot_no_match_steps, _copilot_no_match_expected,
                 finals=("FINALNOMATCHQ7",), entries=4),
        Scenario("codex", "mcp-unapproved", _unapproved_steps, _unapproved_expected,
                 setup=_mcp_direct, finals=("FINALREFUSEDQ7",), entries=4),
        # user, the codemode call, its result, one child per nested call (3), the answer
        Scenario("pi", "codemode", _codemode_steps, _codemode_expected, setup=_mcp_codemode,
                 finals=("FINALCODEMODEQ7",), entries=7),
        # active path: root prompt + answer, active prompt + answer (the abandoned two are not)
        Scenario("pi", "branch", lambda home: [], lambda home: [], finals=("FINALACTIVEQ7",),
                 sdk=True, entries=4),
    ]  # fmt: skip
    return {s.key: s for s in found}


SCENARIOS = _all()
