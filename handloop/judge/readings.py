"""How the offline judge reads a value on its own, outside the conversation it is in: a call's arguments (fences,
JSON, JSON5), a tool's result (JSON, a Python literal, an MCP CallToolResult unwrapped) and whether it says it
failed (a status word that is the tool's own effect, "cancelled" for a cancel, is no failure), the records in a result, a token or a date in a text, and how a user's message answers a proposal
(classify_reply: confirm, decline, change, question or unclear).

Invariants: imports no project module but judge/formats.py (a message's text), the judge's catalogue judge/texts.py and
judge/declaration.py (the choice words it can read); pure functions of their arguments: reads no file, keeps no state,
judges nothing (checks.py does) and knows no turn or call (judge/transcripts.py does).
"""
import ast
import json
import re

from .texts import Said
from .declaration import CHOICES
from .formats import content_text

FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)
ERROR_STATUS = ("error", "failed", "failure", "fail", "blocked", "rejected", "denied", "cancelled", "canceled")
ERROR_TEXT = re.compile(r"\berror|\bfail(ed|ure)?\b|\bblocked\b|\bdenied\b|\brejected\b|\bexception\b|\bforbidden\b|"
                        r"\bunauthori[sz]ed\b|\bnot (allowed|approved|permitted|authori[sz]ed|confirmed)\b|traceback|"
                        r"\bnot found\b|\bdoes(n't| not) exist|\bno such\b|"
                        r"错误|失败|拦截|拒绝|未确认|未经确认|未授权|不允许|禁止|异常|出错|不存在|找不到", re.I)
DECLINE = re.compile(r"不(订|要|用|了|必|需要|确认|同意|行|可以|好|想|对)|先不|暂不|别|取消|算了|拒绝|再想想|考虑一下|等等|"
                     r"等一下|\bno\b|\bnope\b|\bnot\b|n't\b|\bcancel|never ?mind|hold off|\bstop\b|\bwait\b", re.I)
CHANGE = re.compile(r"换|改|\binstead\b|\bchange|\bswitch|\brather\b|\bdifferent\b|\banother\b", re.I)
QUESTION = re.compile(r"[?？]|吗|呢\s*$")
AFFIRM = re.compile(r"^(确认|确定|好|可以|行|是|对|同意|没问题|就这|订吧|订(?!单)|下单|嗯|yes|yep|yeah|ok|okay|sure|confirm|"
                    r"go ahead|proceed|please do|do it|book it|sounds good|perfect|great|lgtm|approved?)(?![a-z])", re.I)
APPROVAL_WORDS = re.compile(r"确认|确定|同意|订|可以|好|yes|ok|sure|confirm|go ahead|book|proceed", re.I)
FILLER = re.compile(r"^(?:(?:那就|那么|那|嗯|哦|噢|请|麻烦|帮我|就|please|i|we)[\s，,。.!！~]*)*", re.I)
MAX_CONFIRMATION = 40      # characters: a longer reply is not read as a plain approval
MAX_LITERAL = 2_000_000    # characters: Python-repr results beyond this are left as text
UNPARSEABLE = object()     # what _json5 and _literal return for text they cannot read


def parse_arguments(raw):
    """Fences → json → JSON5 → (None, problem: a Said). Dicts pass as they are."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return None, Said("args.not_text")
    match = FENCE.match(raw)
    body = (match.group(1) if match else raw).strip() or "{}"
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        value = _json5(body)
        if value is UNPARSEABLE:
            return None, Said("args.not_json", error=exc, text=raw[:80])
    if not isinstance(value, dict):
        return None, Said("args.not_object", text=raw[:80])
    return value, None


def _json5(body):
    try:
        import json5
        return json5.loads(body)
    except Exception:       # json5 raises several types for bad text; all mean "not parseable"
        return UNPARSEABLE


def _literal(body):
    """A Python literal (a tool's dict result written as str(result)); UNPARSEABLE otherwise."""
    if len(body) > MAX_LITERAL or not body.startswith(("{", "[")):
        return UNPARSEABLE
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNPARSEABLE


def read_result(content, done=()):
    """(result as a dict, whether it says it is an error). Text that is JSON or a Python literal is parsed;
    an MCP CallToolResult is unwrapped to its structured content or text. `done`: the status words that say the
    tool did what its declaration says it does (`effect_words`), never a failure of that tool."""
    if isinstance(content, dict):
        value = content
    else:
        text = content_text(content) if isinstance(content, (str, list)) else "" if content is None else str(content)
        value = _parse_text(text)
    mcp_error = False
    parts = value.get("content")
    if isinstance(parts, list) and parts and all(isinstance(p, dict) and "type" in p for p in parts) and \
            set(value) <= {"content", "isError", "structuredContent", "_meta", "meta"}:
        mcp_error = value.get("isError") is True
        structured = value.get("structuredContent")
        value = structured if isinstance(structured, dict) else _parse_text(content_text(parts))
    return value, mcp_error or _says_error(value, done)


def _parse_text(text):
    body = text.strip()
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = _literal(body)
        if value is UNPARSEABLE:
            return {"text": text}
    return value if isinstance(value, dict) else {"value": value}


def plain_result(result):
    """The text of a result that is plain text (not JSON), else None."""
    text = result.get("text") if len(result) == 1 else None
    return text if isinstance(text, str) else None


def effect_words(name):
    """The status words that say a tool named `name` did its work, read from the verbs of its name: a declared
    `cancel_appointment` whose result says {"status": "cancelled"} (or "canceled") succeeded, as do
    `reject_claim` with "rejected", `deny_access` with "denied", `block_card` with "blocked"."""
    found = set()
    for verb in (w for w in str(name).lower().split("_") if len(w) > 2):
        found |= {verb + "ed", verb + "d", verb + verb[-1] + "ed"}
        if verb.endswith("y"):
            found.add(verb[:-1] + "ied")
    return frozenset(found & set(ERROR_STATUS))


def _says_error(value, done=()):
    if plain_result(value) is not None:
        return bool(ERROR_TEXT.search(plain_result(value)[:300]))
    if value.get("error") or value.get("errors") or value.get("blocked_by"):
        return True
    if value.get("isError") is True or value.get("is_error") is True:
        return True
    if value.get("ok") is False or value.get("success") is False:
        return True
    status = value.get("status")
    return isinstance(status, str) and status.strip().lower() in ERROR_STATUS and status.strip().lower() not in done


def dicts_in(value, depth=0):
    """The dicts in a result, outermost first (bounded depth)."""
    if depth > 50:
        return []
    if isinstance(value, dict):
        return [value] + [d for v in value.values() for d in dicts_in(v, depth + 1)]
    if isinstance(value, list):
        return [d for v in value for d in dicts_in(v, depth + 1)]
    return []


def has_token(word, text):
    return bool(word) and re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def choices_in(text, arg="room_type"):
    """The values of a choice argument a text names, read with the words the judge knows (CHOICES)."""
    return {value for value, pattern in CHOICES.get(arg, ()) if pattern.search(text)}


def iso_day(value):
    """A date as YYYY-MM-DD when it reads as one (2026-10-01, 2026/10/1, 2026年10月1日); else the text."""
    match = re.search(r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})", str(value))
    return f"{int(match[1]):04d}-{int(match[2]):02d}-{int(match[3]):02d}" if match else str(value)


def same_value(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return iso_day(str(a)).strip().lower() == iso_day(str(b)).strip().lower()
    return a == b


def classify_reply(text, hotels=(), rooms=(), confirms=None):
    """How a user message answers a proposal: confirm, decline, change, question or unclear.
    `hotels`/`rooms` are the ids and room types the proposal named; a reply naming other room types asks for a
    change. `confirms(text)`: whether it is one of the agent's declared confirm replies (a confirmation)."""
    text = text.strip()
    if confirms is not None and confirms(text):
        return "confirm"
    if DECLINE.search(text):
        return "decline"
    named_rooms = choices_in(text)
    if CHANGE.search(text) or (rooms and named_rooms - set(rooms)):
        return "change"
    if QUESTION.search(text):
        return "unclear" if APPROVAL_WORDS.search(text) else "question"
    plain = FILLER.sub("", text, count=1)
    if len(text) <= MAX_CONFIRMATION and (AFFIRM.match(plain) or AFFIRM.match(text)):
        return "confirm"
    return "unclear"
