"""Constants, prompts and the environment: the one place a setting is read.

Invariants: imports no project module; holds no logic beyond reading the environment
(`settings()` reads it at call time, never at import, so tests and many runs stay isolated).
"""
import os
import re
import signal

AUDIT_VERSION = 1
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CONFIRM_TEXT = "确认"                  # the one user message that confirms (only --confirm sends it)

DEFAULT_GOAL = ("帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。"
                "预订前必须先等我确认。")
DEFAULT_MODEL = "gpt-4o-mini"
OFFLINE_MODEL = "offline"

MAX_TURNS = 12                  # model calls over the whole life of a run, resumes included
TOKEN_BUDGET = 200_000          # tokens over the whole life of a run
MODEL_TIMEOUT = 60.0            # seconds per model request
MODEL_RETRIES = 3               # extra attempts on timeouts, 429 and 5xx
RETRY_BASE = 1.0                # first backoff in seconds, doubled per attempt
RETRY_CAP = 30.0                # longest wait between attempts, Retry-After included
TOOL_TIMEOUT = 10.0             # seconds per tool call
SPIN_REPEATS = 2                # an identical call may run this many times; the next is a spin
SPIN_LIMIT = 3                  # spins blocked in one run before the run stops
MAX_CALLS_PER_TURN = 16         # calls beyond this in one reply are blocked, not run

TOOL_RESULT_MAX_CHARS = 16_000  # a tool message longer than this is cut head-and-tail
RECENT_ROUNDS = 2               # tool rounds that compaction leaves whole
RECENT_RESULT_MAX_CHARS = 4_000 # recent tool results sent to the model are cut to this
OLD_RESULT_CHARS = 160          # old tool results become a summary of about this size
CHARS_PER_TOKEN = 3             # rough estimate when a server reports no usage

READ_TOOLS = frozenset({"get_weather", "search_hotels", "search_location"})
STATE_TOOLS = frozenset({"set_plan", "mark_step"})
WRITE_TOOLS = frozenset({"book_hotel"})
BUSINESS_TOOLS = READ_TOOLS | WRITE_TOOLS
# a write may run only after these tools have succeeded in the run
WRITE_PREREQUISITES = {"book_hotel": ("get_weather", "search_hotels")}

# MCP mode: the allow-list, the one place it lives. Only these server tools reach the model (they
# replace local tools of the same name), each only if its input schema takes these arguments; a
# result keeps only its `fields` (JSON scalars), whatever else the server sends, and is a tool
# error when a `required` field is missing.
MCP_TOOLS = {
    "search_location": {"arguments": ("city",), "fields": ("name", "latitude", "longitude", "timezone", "country"),
                        "required": ("latitude", "longitude")},
    "get_weather": {"arguments": ("latitude", "longitude", "date"), "fields": ("date", "condition", "high", "low"),
                    "required": ("date", "condition")},
}
MCP_TIMEOUT = 8.0               # seconds per MCP request; under TOOL_TIMEOUT, so the MCP error is what the model sees
MCP_RESTARTS = 3                # server restarts allowed in one process before calls fail fast

SYSTEM_PROMPT = """你是订酒店助手，只能通过工具获取信息和下单。规则：
1. 先调用 set_plan 制定计划（每一步写明要用的工具 tool，以及依赖的步骤 after），再调用业务工具。
2. 天气查询和酒店搜索互不依赖，请在同一轮里一起调用；预订依赖这两步。
3. hotel_id 只能取自本次运行 search_hotels 的结果，不要编造。
4. 预订前必须得到用户确认：参数齐全时直接调用 book_hotel，系统会拦截它并把它作为提案交给用户确认；
   之后用中文向用户说明提案（酒店、房型、日期、总价）并停止调用工具。用户回复「确认」后再调用 book_hotel。
5. 工具返回 error 时，按错误提示修正参数或调整计划，不要原样重复。
6. 完成后用中文给出最终答复：天气、酒店、房型、总价。"""

MEMORY_HEADER = "【运行记忆】（系统根据工具结果维护，以此为准）"
FINAL_PROMPT = "已经达到最大轮数。请不要再调用工具，直接基于已有信息用中文回复用户。"


def settings(env=None):
    """The environment's settings for a run, read now."""
    env = os.environ if env is None else env
    return {
        "api_key": env.get("OPENAI_API_KEY") or None,
        "base_url": env.get("OPENAI_BASE_URL") or None,
        "model": env.get("AGENT_MODEL") or DEFAULT_MODEL,
        "audit_dir": env.get("AGENT_AUDIT_DIR") or "audit",
        "mcp_server": env.get("AGENT_MCP_SERVER") or None,
        # the MCP server's own settings (read by `python mcp_tools.py`)
        "mcp_weather": env.get("AGENT_MCP_WEATHER") or "offline",
        "mcp_geocoding_url": env.get("AGENT_MCP_GEOCODING_URL") or "https://geocoding-api.open-meteo.com/v1/search",
        "mcp_forecast_url": env.get("AGENT_MCP_FORECAST_URL") or "https://api.open-meteo.com/v1/forecast",
        "mcp_page_size": int(env.get("AGENT_MCP_PAGE_SIZE") or 50),
        "budget": int(env.get("AGENT_TOKEN_BUDGET") or TOKEN_BUDGET),
        "model_timeout": float(env.get("AGENT_MODEL_TIMEOUT") or MODEL_TIMEOUT),
        "model_retries": int(env.get("AGENT_MODEL_RETRIES") or MODEL_RETRIES),
    }


_fault_hits = {}
_FAULT = os.environ.get("AGENT_FAULT")   # read once, at start-up: the check below is on the hot path


def fault(point):
    """Fault injection for crash tests: with AGENT_FAULT=POINT (or POINT:N for its Nth hit in this
    process) the process dies here at once, as under kill -9. Points: before_ask, after_reply,
    after_tool, after_commit, mid_audit."""
    if _FAULT is None or _FAULT.split(":")[0] != point:
        return
    _fault_hits[point] = _fault_hits.get(point, 0) + 1
    if _FAULT == point or _FAULT == f"{point}:{_fault_hits[point]}":
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
