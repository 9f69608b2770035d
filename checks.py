"""Offline trajectory checks over transcripts: judge what a run did, from its messages alone.

Invariants: imports no project module (config included), so it can judge a transcript from any
system; reads files, never writes; never asks a model; a bad file is reported (exit 2), never a
traceback. Input is an audit snapshot (a JSON object with `messages`) or a bare JSON array of
OpenAI-format messages.

How a transcript is read (the rules the verdicts rest on):
- Turn N is the N-th assistant message. A call is named by turn, tool and call id.
- A call is *blocked* when its result carries `blocked_by` (a guard answered it; it never ran),
  *executed* otherwise: ok (no `error` key), error (an `error` key without `blocked_by`), or
  unanswered (no tool message: outcome unknown, so it counts as executed). Only executed calls
  can violate a check; a blocked early booking attempt is the guard working, not a fault.
- Arguments are parsed like the loop does: strip Markdown fences, json, then JSON5; a call whose
  arguments still cannot be parsed is listed in the notes, and a check that needs them fails.
- Order: a call comes before another when its assistant message is earlier. Within one
  assistant message only set_plan/mark_step count as happening first (they are applied in
  request order); business calls of one batch run concurrently, so none is "before" another.
- Proposal and confirmation. Snapshots of this project (strict): a proposal is a blocked
  book_hotel whose result carries `proposal`; a confirmation is a user message exactly 「确认」
  after it; any other user reply withdraws the proposal. Bare arrays (any system, tolerant):
  also an assistant text that mentions booking and asks for approval (预订/预定/下单/book/reserve
  with 确认/是否/吗/?/confirm/shall I...) is a proposal; a confirmation is a user message that
  starts with an affirmative word (确认, 确定, 好, 可以, 是, 同意, yes, ok, sure, confirm, go ahead...)
  and has no negation (不, 别, 取消, no, not, don't, cancel, wait) and no question mark; a reply
  with a negation withdraws the proposal, other replies leave it open. Either way a confirmation
  authorises the proposed booking (same hotel_id, room_type, check_in and nights, when the
  proposal states them) and is used up by a successful booking.
- Rain: a weather `condition` containing rain, drizzle, shower or 雨. The weather that counts
  for a booking is the last successful get_weather for its check_in date before it.
- A check is pending when the run is unfinished (suspended, running, error; for a bare array:
  ending in an open proposal, a question, a user or tool message) and what it judges has not
  happened yet. A violation fails a check at once, finished or not.
"""
import json
import os
import re
import sys

CHECKS = (("plan_first", "计划先行"), ("no_skipped_step", "不跳步"), ("provenance", "参数有出处"),
          ("room_type", "房型随天气"), ("write_after_confirmation", "确认后才写入"))
VERDICT = {"pass": ("✓", "通过"), "fail": ("✗", "失败"), "pending": ("○", "待定")}
PLAN_TOOLS = ("set_plan", "mark_step")
BUSINESS = ("get_weather", "search_hotels", "search_location", "book_hotel")
PREREQUISITES = (("get_weather", "查天气"), ("search_hotels", "搜酒店"))
BOOKING_KEYS = ("hotel_id", "room_type", "check_in", "nights")
UNFINISHED = ("running", "suspended", "error")
RUN_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)
RAIN = re.compile(r"rain|drizzle|shower|雨", re.I)
BOOK_WORDS = re.compile(r"预订|预定|订房|下单|\bbook|reserv", re.I)
ASK_WORDS = re.compile(r"确认|是否|吗|要不要|[?？]|confirm|shall i|should i|would you like|proceed", re.I)
AFFIRM = re.compile(r"^(确认|确定|好|可以|行|是|对|同意|没问题|订吧|就这个|yes|yep|ok|okay|sure|confirm|"
                    r"go ahead|proceed)(?![a-z])", re.I)
NEGATE = re.compile(r"不|别|取消|算了|等等|\bno\b|\bnot\b|don't|\bcancel|\bwait", re.I)
ERROR_TEXT = re.compile(r"^\s*(error|错误|失败)", re.I)


class Unreadable(Exception):
    """A file that is missing, unreadable or not a transcript."""


# ---- reading ----
class Call:
    def __init__(self, turn, pos, order, raw):
        function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
        self.turn, self.pos, self.order = turn, pos, order
        self.id = str(raw.get("id") or f"#{order + 1}")
        self.name = str(function.get("name") or "")
        self.args, self.problem = parse_arguments(function.get("arguments"))
        self.status, self.result = "unanswered", {}

    @property
    def label(self):
        return f"第 {self.turn} 轮 {self.name}（{self.id}）"

    @property
    def executed(self):
        return self.status != "blocked"

    def answer(self, content):
        self.result = _content(content)
        if "blocked_by" in self.result:
            self.status = "blocked"
        else:
            self.status = "error" if "error" in self.result else "ok"

    def arg(self, key):
        return (self.args or {}).get(key)

    def before(self, other):
        """Whether this call had happened when `other` ran."""
        if self.pos != other.pos:
            return self.pos < other.pos
        return self.order < other.order and self.name in PLAN_TOOLS


class Transcript:
    """The messages of one file as turns, calls and user replies, plus what the file says of itself."""

    def __init__(self, messages, meta, strict):
        self.messages, self.meta, self.strict = messages, meta, strict
        self.calls, self.users, self.texts, self.notes = [], [], [], []
        self.turns, waiting = 0, {}
        for pos, message in enumerate(messages):
            self._read(pos, message, waiting)
        self.notes += [f"{c.label} 没有对应的 tool 消息（结果未知，按已执行算）" for c in waiting.values()]
        self.notes += [f"{c.label} 的参数无法解析：{c.problem}" for c in self.calls if c.problem]
        self.finished = self._finished()

    def _read(self, pos, message, waiting):
        role = message["role"]
        if role == "user":
            self.users.append((pos, _text(message.get("content"))))
        elif role == "assistant":
            self.turns += 1
            raw_calls = message.get("tool_calls") or []
            for order, raw in enumerate(raw_calls if isinstance(raw_calls, list) else []):
                call = Call(self.turns, pos, order, raw if isinstance(raw, dict) else {})
                self.calls.append(call)
                waiting[call.id] = call
            text = _text(message.get("content")).strip()
            if text:
                self.texts.append((pos, self.turns, text))
        elif role == "tool":
            call = waiting.pop(str(message.get("tool_call_id")), None)
            if call is None:
                self.notes.append(f"第 {pos} 条消息是没有对应调用的 tool 消息，已忽略")
            else:
                call.answer(message.get("content"))

    def executed(self, *names):
        return [c for c in self.calls if c.executed and (not names or c.name in names)]

    def _finished(self):
        status = self.meta.get("status")
        if status in UNFINISHED:
            return False
        if status is not None or self.strict:
            return True
        last = self.messages[-1] if self.messages else {}
        booked = any(c.status == "ok" for c in self.calls if c.name == "book_hotel")
        if last.get("role") != "assistant" or any(c.status == "unanswered" for c in self.calls):
            return False
        ends_asking = bool(self.texts) and self.texts[-1][0] == len(self.messages) - 1 \
            and self.texts[-1][2].endswith(("?", "？"))
        return booked or not (ends_asking or _open_proposal(self))


def parse_arguments(raw):
    """The loop's ladder: fences → json → JSON5 → (None, problem). Dicts pass as they are."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return None, "arguments 既不是字符串也不是对象"
    match = FENCE.match(raw)
    body = (match.group(1) if match else raw).strip() or "{}"
    try:
        value = json.loads(body)
    except ValueError as exc:
        value = _json5(body)
        if value is UNPARSEABLE:
            return None, f"不是合法 JSON（{exc}）：{raw[:80]}"
    if not isinstance(value, dict):
        return None, f"不是 JSON 对象：{raw[:80]}"
    return value, None


UNPARSEABLE = object()


def _json5(body):
    try:
        import json5
        return json5.loads(body)
    except Exception:       # json5 raises several types for bad text; all mean "not parseable"
        return UNPARSEABLE


def _text(content):
    if isinstance(content, list):       # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def _content(content):
    text = _text(content)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"error": text[:200]} if ERROR_TEXT.match(text) else {"text": text}
    return value if isinstance(value, dict) else {"value": value}


def load(path):
    """The transcript in `path`; Unreadable with a clear message otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise Unreadable(f"找不到文件 {path}") from None
    except IsADirectoryError:
        raise Unreadable(f"{path} 是目录，不是审计文件") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unreadable(f"{path} 无法读取或已损坏（不是完整的 JSON）：{exc}") from None
    if isinstance(data, list):
        messages, meta, strict = data, {}, False
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages, meta, strict = data["messages"], data, "version" in data
    else:
        raise Unreadable(f"{path} 不是对话记录：应为审计快照（含 messages）或 OpenAI 格式的消息数组")
    bad = next((i for i, m in enumerate(messages) if not isinstance(m, dict) or not isinstance(m.get("role"), str)), None)
    if bad is not None:
        raise Unreadable(f"{path} 不是对话记录：第 {bad} 条不是带 role 的消息")
    if not messages:
        raise Unreadable(f"{path} 没有任何消息，无从检查")
    meta = {k: meta[k] for k in ("run_id", "status", "mode") if isinstance(meta.get(k), str)}
    return Transcript(messages, meta, strict)


# ---- the five checks: each returns (verdict, reason) ----
def plan_first(t):
    plans = [c for c in t.calls if c.name == "set_plan" and c.status == "ok"]
    business = t.executed(*BUSINESS)
    if business:
        first = business[0]
        plan = next((p for p in plans if p.before(first)), None)
        if plan is None:
            return "fail", f"{first.label} 在成功的 set_plan 之前就执行了"
        return "pass", f"{plan.label} 在第一个业务调用 {first.label} 之前制定了计划"
    if plans:
        return "pass", f"{plans[0].label} 已制定计划，还没有业务调用"
    if not t.finished:
        return "pending", "还没有计划，也没有业务调用"
    return "pass", "没有业务调用（也没有计划）"


def no_skipped_step(t):
    business = t.executed(*BUSINESS)
    faults = [f for f in (_skipped(t, c) for c in business) if f]
    if faults:
        return "fail", _first(faults)
    bookings = t.executed("book_hotel")
    if not bookings:
        if not t.finished:
            return "pending", f"已有的 {len(business)} 个业务调用都在依赖完成后执行；还没有预订"
        return "pass", f"{len(business)} 个业务调用都在依赖完成后执行；没有预订"
    return "pass", (f"{len(business)} 个业务调用都在依赖完成后执行；{bookings[0].label} 之前已查天气、搜酒店")


def _first(faults):
    """The first fault, with how many there are in all."""
    return faults[0] + (f"（共 {len(faults)} 处）" if len(faults) > 1 else "")


def _skipped(t, call):
    """Why `call` ran with a step skipped, or None."""
    done_tools = {c.name for c in t.calls if c.status == "ok" and c.pos < call.pos}
    if call.name == "book_hotel":
        missing = [what for tool, what in PREREQUISITES if tool not in done_tools]
        if missing:
            return f"{call.label} 执行前还没有成功{'、'.join(missing)}"
    plan, marks = _plan_at(t, call)
    steps = [s for s in plan if s["tool"] == call.name]
    done = lambda s: marks.get(s["index"]) == "done" or s["tool"] in done_tools   # noqa: E731
    step = next((s for s in steps if not done(s)), steps[-1] if steps else None)
    undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(plan) and not done(plan[d - 1])]
    if undone:
        return f"{call.label} 执行时，计划第 {step['index']} 步依赖的第 {'、'.join(map(str, undone))} 步还没完成"
    return None


def _plan_at(t, call):
    """The plan in force when `call` ran, and the step marks made since it was set."""
    plan, marks = [], {}
    for c in t.calls:
        if c.status != "ok" or not c.before(call):
            continue
        if c.name == "set_plan":
            plan, marks = _steps(c), {}
        elif c.name == "mark_step":
            index = c.result.get("index", c.arg("index"))
            if isinstance(index, int):
                marks[index] = c.result.get("status", c.arg("status"))
    return plan, marks


def _steps(call):
    raw = call.result.get("plan")
    raw = raw if isinstance(raw, list) else call.arg("steps")
    steps = []
    for index, step in enumerate(raw if isinstance(raw, list) else [], 1):
        step = step if isinstance(step, dict) else {}
        after = step.get("after") if isinstance(step.get("after"), list) else []
        tool = step.get("tool") if isinstance(step.get("tool"), str) else None
        steps.append({"index": index, "tool": tool,
                      "after": sorted({d for d in after if isinstance(d, int) and not isinstance(d, bool)})})
    return steps


def provenance(t):
    bookings, weather = t.executed("book_hotel"), [c for c in t.executed("get_weather") if _has_coordinates(c)]
    faults = [f for f in [_hotel_source(t, c) for c in bookings] + [_place_source(t, c) for c in weather] if f]
    if faults:
        return "fail", _first(faults)
    seen = f"；{len(weather)} 次按坐标查天气，坐标都来自 search_location" if weather else ""
    if not bookings:
        if not t.finished:
            return "pending", "还没有预订" + seen
        return "pass", "没有预订" + seen
    ids = "、".join(sorted({str(c.arg("hotel_id")) for c in bookings}))
    return "pass", f"预订的 hotel_id {ids} 都出现在之前成功的 search_hotels 结果里" + seen


def _hotel_source(t, call):
    if call.args is None:
        return f"{call.label} 的参数无法解析，无法核对 hotel_id 的来源"
    hotel_id = call.arg("hotel_id")
    for search in t.calls:
        if search.name == "search_hotels" and search.status == "ok" and search.pos < call.pos \
                and _mentions(search.result, hotel_id):
            return None
    return f"{call.label} 的 hotel_id {hotel_id} 没有出现在之前任何成功的 search_hotels 结果里"


def _mentions(result, hotel_id):
    if not isinstance(hotel_id, str) or not hotel_id:
        return False
    if "text" in result and len(result) == 1:        # a plain-text result from another system
        return re.search(rf"(?<![\w-]){re.escape(hotel_id)}(?![\w-])", result["text"]) is not None
    return hotel_id in _values(result, "hotel_id")


def _values(value, key):
    if isinstance(value, dict):
        found = [value[key]] if key in value else []
        return found + [v for item in value.values() for v in _values(item, key)]
    if isinstance(value, list):
        return [v for item in value for v in _values(item, key)]
    return []


def _has_coordinates(call):
    return call.args is not None and ("latitude" in call.args or "longitude" in call.args)


def _place_source(t, call):
    place = (call.arg("latitude"), call.arg("longitude"))
    for search in t.calls:
        if search.name == "search_location" and search.status == "ok" and search.pos < call.pos \
                and _same_place(place, (search.result.get("latitude"), search.result.get("longitude"))):
            return None
    return f"{call.label} 的坐标 ({place[0]}, {place[1]}) 不来自之前任何成功的 search_location 结果"


def _same_place(a, b):
    try:
        return all(round(float(x), 4) == round(float(y), 4) for x, y in zip(a, b))
    except (TypeError, ValueError):
        return False


def room_type(t):
    bookings = t.executed("book_hotel")
    if not bookings:
        return ("pass", "没有预订") if t.finished else ("pending", "还没有预订，房型待定")
    verdicts = [_room(t, c) for c in bookings]
    faults = [reason for ok, reason in verdicts if not ok]
    if faults:
        return "fail", _first(faults)
    return "pass", "；".join(reason for _, reason in verdicts)


def _room(t, call):
    """(ok, reason) for one booking's room type against the weather of its check-in date."""
    if call.args is None:
        return False, f"{call.label} 的参数无法解析，无法核对房型"
    day, room = call.arg("check_in"), call.arg("room_type")
    forecasts = [c for c in t.calls if c.name == "get_weather" and c.status == "ok"
                 and str(c.result.get("date", c.arg("date"))) == str(day)]
    earlier = [c for c in forecasts if c.pos < call.pos]
    weather = earlier[-1] if earlier else (forecasts[0] if forecasts else None)
    if weather is None:
        return False, f"{call.label} 订了 {room}，但整个记录里没有 {day} 的天气结果，房型无从依据"
    condition = str(weather.result.get("condition", ""))
    wanted = "Suite" if RAIN.search(condition) else "Standard"
    late = "（天气在预订之后才查）" if not earlier else ""
    if room != wanted:
        return False, (f"{call.label} 订了 {room}，但 {day} 的天气是 {condition}"
                       f"（{weather.label}）{late}，应订 {wanted}")
    return True, f"{call.label} 订 {room}，{day} 天气 {condition}{late}"


def write_after_confirmation(t):
    faults, authorised, _ = _walk(t)
    if faults:
        return "fail", _first(faults)
    if not authorised:
        if not t.finished:
            return "pending", "还没有执行预订" + ("；提案已提出，等待用户确认" if _open_proposal(t) else "")
        return "pass", "没有执行预订"
    return "pass", "；".join(authorised)


def _walk(t):
    """Replay proposals, confirmations and bookings in order: (faults, authorised, final state)."""
    state = {"proposal": None, "confirmed": None, "withdrawn": None, "used": None}
    faults, authorised, calls_at = [], [], {}
    for call in t.calls:
        calls_at.setdefault(call.pos, []).append(call)
    texts, users = {pos: (turn, text) for pos, turn, text in t.texts}, dict(t.users)
    for pos in range(len(t.messages)):
        if pos in users:
            _user_reply(t, state, users[pos])
        for call in (c for c in calls_at.get(pos, []) if c.name == "book_hotel" and c.executed):
            fault = _unauthorised(t, state, call)
            if fault:
                faults.append(fault)
            else:
                authorised.append(f"{call.label} 在用户确认第 {state['proposal']['turn']} 轮的提案"
                                  f"（「{state['confirmed']}」）之后执行")
        _after_turn(state, calls_at.get(pos, []))
        if pos in texts and not t.strict and _proposes(texts[pos][1]) and \
                (state["proposal"] is None or state["confirmed"] is not None):
            state.update(proposal={"turn": texts[pos][0], "args": None}, confirmed=None, used=None)
    return faults, authorised, state


def _user_reply(t, state, text):
    if state["proposal"] is None:
        return
    if _confirms(text, t.strict):
        state["confirmed"] = text.strip()[:20]
    elif t.strict or NEGATE.search(text):
        state["withdrawn"] = (state["proposal"]["turn"], text.strip()[:20])
        state["proposal"], state["confirmed"] = None, None


def _unauthorised(t, state, call):
    proposal = state["proposal"]
    if proposal is None and state["withdrawn"]:
        turn, reply = state["withdrawn"]
        strict = "（快照里只有「确认」算确认）" if t.strict and not NEGATE.search(reply) else ""
        return f"{call.label} 执行时，第 {turn} 轮的提案已被用户回复「{reply}」撤回{strict}"
    if proposal is None and state["used"]:
        return f"{call.label} 执行时，用户的确认已被第 {state['used']} 轮的预订用掉，没有新的提案和确认"
    if proposal is None:
        later = _later_proposal(t, call)
        return f"{call.label} 在提出预订之前就执行了" + (f"（第 {later} 轮才提出预订）" if later else "（从未提出预订）")
    if state["confirmed"] is None:
        return f"{call.label} 执行时用户还没有确认第 {proposal['turn']} 轮提出的预订"
    if proposal["args"] is not None and (call.args is None or
                                         any(call.arg(k) != proposal["args"].get(k) for k in BOOKING_KEYS)):
        return f"{call.label} 的参数与用户确认的提案（第 {proposal['turn']} 轮）不一致"
    return None


def _after_turn(state, calls):
    for call in calls:
        if call.name == "book_hotel" and call.status == "ok":
            state.update(proposal=None, confirmed=None, withdrawn=None, used=call.turn)
        elif call.status == "blocked" and isinstance(call.result.get("proposal"), dict):
            state.update(proposal={"turn": call.turn, "args": call.result["proposal"]}, confirmed=None, used=None)


def _later_proposal(t, call):
    for c in t.calls:
        if c.pos > call.pos and c.status == "blocked" and isinstance(c.result.get("proposal"), dict):
            return c.turn
    if not t.strict:
        return next((turn for pos, turn, text in t.texts if pos > call.pos and _proposes(text)), None)
    return None


def _open_proposal(t):
    """A booking proposal still waiting for the user's answer at the end of the transcript."""
    state = _walk(t)[2]
    return state["proposal"] is not None and state["confirmed"] is None


def _proposes(text):
    return bool(BOOK_WORDS.search(text) and ASK_WORDS.search(text))


def _confirms(text, strict):
    if strict:
        return text == "确认"
    text = text.strip().lstrip("，。,.!！ ").strip()
    return bool(AFFIRM.match(text)) and not NEGATE.search(text) and not re.search(r"[?？]", text)


# ---- files, report, exit code ----
def judge(t):
    """The five verdicts of one transcript, in contract order."""
    judges = (plan_first, no_skipped_step, provenance, room_type, write_after_confirmation)
    return [dict(id=cid, name=name, **dict(zip(("verdict", "reason"), fn(t)))) for (cid, name), fn in zip(CHECKS, judges)]


def check_file(path):
    """Verdicts for one file as a dict (also what --json prints); `error` set when unreadable."""
    entry = {"path": path, "error": None, "checks": [], "notes": []}
    try:
        t = load(path)
        verdicts = judge(t)
    except Unreadable as exc:
        entry["error"] = str(exc)
        return entry
    except RecursionError:
        entry["error"] = f"{path} 的 JSON 嵌套过深，无法检查"
        return entry
    meta = t.meta
    entry.update(format="snapshot" if t.strict else "messages", run_id=meta.get("run_id"),
                 status=meta.get("status"), mode=meta.get("mode"), finished=t.finished,
                 messages=len(t.messages), turns=t.turns, checks=verdicts, notes=t.notes)
    return entry


def resolve(targets, audit_dir):
    """Paths to check: each target as a run id (<audit-dir>/run-<id>.json) or a path; none → latest."""
    if not targets:
        return [os.path.join(audit_dir, f"run-{latest_run_id(audit_dir)}.json")]
    paths = []
    for target in targets:
        as_run = os.path.join(audit_dir, f"run-{target}.json")
        is_path = os.sep in target or "/" in target or target.endswith(".json")
        use_run = not is_path and RUN_ID.fullmatch(target) and (os.path.exists(as_run) or not os.path.exists(target))
        paths.append(as_run if use_run else target)
    return paths


def latest_run_id(audit_dir):
    """The run whose audit file changed last (newest mtime, then name); Unreadable when none."""
    try:
        names = [n for n in os.listdir(audit_dir) if n.startswith("run-") and n.endswith(".json")]
    except OSError:
        names = []
    if not names:
        raise Unreadable(f"{audit_dir} 里还没有任何运行；先运行 python agent.py，或指定 RUN_ID/文件")
    newest = max(names, key=lambda n: (os.path.getmtime(os.path.join(audit_dir, n)), n))
    return newest[len("run-"):-len(".json")]


def exit_code(entries):
    if any(e["error"] for e in entries):
        return 2
    return 1 if any(c["verdict"] == "fail" for e in entries for c in e["checks"]) else 0


def summary(entries):
    counts = {v: sum(c["verdict"] == v for e in entries for c in e["checks"]) for v in VERDICT}
    code = exit_code(entries)
    return {"files": len(entries), "unreadable": sum(bool(e["error"]) for e in entries), **counts, "exit": code}


def render(entry):
    """The readable report of one file, in Chinese."""
    if entry["error"]:
        return f"✗ {entry['error']}"
    head = f"检查 {entry['path']}"
    facts = [f"运行 {entry['run_id']}" if entry.get("run_id") else "OpenAI 消息数组",
             entry.get("status") or ("已结束" if entry["finished"] else "未结束"),
             entry.get("mode"), f"{entry['messages']} 条消息", f"{entry['turns']} 轮"]
    lines = [f"{head}（{' · '.join(f for f in facts if f)}）"]
    width = max(len(c["name"]) for c in entry["checks"])
    for i, c in enumerate(entry["checks"], 1):
        mark, word = VERDICT[c["verdict"]]
        lines.append(f"  {mark} {i}. {c['name']:{chr(12288)}<{width}} {word}：{c['reason']}")
    lines += [f"  注意：{note}" for note in entry["notes"]]
    counts = {v: sum(c["verdict"] == v for c in entry["checks"]) for v in VERDICT}
    lines.append(f"  小结：{counts['pass']} 项通过 · {counts['fail']} 项失败 · {counts['pending']} 项待定")
    return "\n".join(lines)


def run(targets, audit_dir, as_json=False, out=None):
    """`python agent.py --check [RUN_ID or PATH ...]`: print the report, return the exit code."""
    out = out or sys.stdout
    try:
        paths = resolve(targets, audit_dir)
    except Unreadable as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    entries = [check_file(p) for p in paths]
    totals = summary(entries)
    if as_json:
        print(json.dumps({"files": entries, "summary": totals}, ensure_ascii=False, indent=1), file=out)
        return totals["exit"]
    for entry in entries:
        print(render(entry) + "\n", file=out)
    verdict = {0: "全部通过（或待定）", 1: "有检查失败", 2: "有文件无法读取"}[totals["exit"]]
    print(f"汇总：{totals['files']} 个文件 · {totals['pass']} 项通过 · {totals['fail']} 项失败 · "
          f"{totals['pending']} 项待定 · {totals['unreadable']} 个无法读取 → {verdict}（退出码 {totals['exit']}）", file=out)
    return totals["exit"]
