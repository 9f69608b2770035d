"""What is sent: the request of a turn, a projection of the record (compaction).

Invariants: works on copies, never on `messages`; every message and every tool_call_id stays,
in order, save the approval of a write the model never saw proposed (below). A request is laid out as messages[0] (system prompt and memory block, rewritten only
when an epoch starts), then the messages before the epoch's start, compacted, then every
message since as recorded (long tool results cut head-and-tail). So between epochs each
request is the previous one plus the new messages, byte for byte: the prefix providers cache.
messages[0] holds no memory block until something is settled (nothing to say costs nothing).
One projection of messages no request carried yet (`projected`): a proposal's tool message (a
write blocked for the user's confirmation) answered at once by the user's reply is sent in its
short form (it did not run, it went to the user: the arguments are in the model's own call above
it, the preview was the user's, the reply is right below); when that reply confirmed it and the
loop made the write, the proposal is sent as the write's result and the reply, the loop's call
and its tool messages are not sent (the model sees its call answered, as approval flows show it;
the approval is the record's). Every later request sends the same bytes.
An epoch starts only when a request would exceed the compaction budget. A compacted data
result stays a JSON object with its short fields (ids, names, prices, dates, conditions) and a
note of what was dropped; write receipts and the latest result of each state tool (the plan)
are never compacted; only when the compacted history still exceeds its room do the oldest
results shrink further, to stubs of their top-level facts.
"""
import json

from . import config
from .values import ZH, chars, cut  # noqa: F401  (chars: re-exported for the benchmarks)

LOOP = "loop"       # the name of the messages the loop itself sends (memory.LOOP_NAME)
SHORT = 80          # a string longer than this is prose: dropped from a compacted result
LIST_MAX = 20       # items of a list a compacted result keeps
STUB_SHORT = 40     # a stub keeps top-level strings up to this length


class Window:
    """The layout of the current epoch: where it starts, and the room its compacted part had."""

    def __init__(self, start=1, room=None, turn=0):
        self.start, self.room, self.turn, self._old = start, room, turn, None

    def to_dict(self):
        return {"start": self.start, "room": self.room, "turn": self.turn}

    @classmethod
    def from_dict(cls, data, messages):
        """The recorded epoch, or the whole history as one epoch when the record has none."""
        start = data.get("start") if isinstance(data, dict) else None
        room = data.get("room") if isinstance(data, dict) else None
        if not isinstance(start, int) or isinstance(start, bool) or not 1 <= start <= len(messages):
            return cls()
        return cls(start, room if isinstance(room, int) and not isinstance(room, bool) else None,
                   data.get("turn") if isinstance(data.get("turn"), int) else 0)

    def request(self, messages, tool_of, say=ZH):
        """The messages to send now (a new list; the record is not touched). `tool_of(name)`: the
        declaration of a tool (calls.Tool) or None; `say`: the agent's catalogue (cut notes)."""
        shown = projected(messages, self.start, say)
        if self._old is None:           # computed once per epoch: the same bytes every turn
            old = [shown.get(i, m) for i, m in enumerate(messages[1:self.start], 1)]
            self._old = compact([m for m in old if m is not None], tool_of, self.room, say)
        recent_ = [shown.get(i, recent(m, say)) for i, m in enumerate(messages[self.start:], self.start)]
        return [messages[0], *map(bare, self._old), *(bare(m) for m in recent_ if m is not None)]


def bare(message):
    """A message as the API takes it: without the decision a confirmation records on the user's message (runs.py),
    which is the record's, not the model's."""
    return message if "decision" not in message else {k: v for k, v in message.items() if k != "decision"}


def projected(messages, start=1, say=ZH):
    """What is sent of the proposals the model never saw, by index into `messages` (None: not sent); every other
    message is sent as recorded. A proposal is a tool message of a write blocked for the user's confirmation; the
    model never saw it when its round is followed at once by the user's own reply (the run suspended on it).
    - Confirmed, and the loop then made those writes itself (an assistant message named "loop" right after the
      reply, one call per proposal of the round, in order): each proposal is sent as the result of the write
      made for it, and the reply, the loop's call and its tool messages are not sent. The model sees its call
      answered by what it did, as approval flows show it: the approval is the record's (a confirm reply is one
      of the agent's fixed replies, it says nothing else). Only within one epoch: a group the epoch's start
      cuts is sent as below.
    - Otherwise each proposal is sent in its short form (`proposed`)."""
    shown: dict[int, dict | None] = {}
    for first, after in _answered_rounds(messages):
        asks = [k for k in range(first, after) if _proposal(messages[k].get("content"))]
        if not asks:
            continue
        merged = _made(messages, after, asks, start)
        for k in asks:
            shown[k] = recent(dict(messages[k], content=merged[k]), say) if merged else proposed(messages[k], say)
        if merged:
            shown.update((k, None) for k in merged["hidden"])
    return shown


def _answered_rounds(messages):
    """(first, after) of each run of tool messages followed at once by a user's own reply (at `after`)."""
    i = 1
    while i < len(messages):
        j = i
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
        after = messages[j] if j < len(messages) else None
        if j > i and after is not None and after.get("role") == "user" and after.get("name") != LOOP:
            yield i, j
        i = j + 1 if j == i else j


def _made(messages, reply, asks, start):
    """{proposal index: the content of the tool message of the write the loop made for it, "hidden": the indices
    not sent}, when the loop made exactly those writes right after the user's reply at `reply`; else None."""
    at = reply + 1
    made = messages[at] if at < len(messages) else {}
    calls = made.get("tool_calls") if made.get("role") == "assistant" and made.get("name") == LOOP else None
    if not isinstance(calls, list) or len(calls) != len(asks) or asks[0] < start <= at:
        return None
    results, end = {}, at + 1
    while end < len(messages) and messages[end].get("role") == "tool":
        results[messages[end].get("tool_call_id")] = messages[end].get("content")
        end += 1
    ids = [c.get("id") if isinstance(c, dict) else None for c in calls]
    names = [(c.get("function") or {}).get("name") if isinstance(c, dict) else None for c in calls]
    wanted = [_object(messages[k].get("content"))["proposal"].get("tool") for k in asks]
    if any(i not in results for i in ids) or names != wanted or end - at - 1 != len(ids):
        return None
    return {**{k: results[i] for k, i in zip(asks, ids)}, "hidden": range(reply, end)}


def proposed(message, say=ZH):
    """A proposal's tool message as sent once the user has answered it: what the model needs of it (the write
    did not run, it went to the user; the arguments are in the model's own call above it, the user's answer right
    below), not the preview the user was shown."""
    return dict(message, content=json.dumps({"error": say("guard.proposed"), "blocked_by": "unconfirmed_write"},
                                            ensure_ascii=False, separators=(",", ":")))


def _proposal(content):
    """Whether a tool message's content is a proposal: a write blocked for the user's confirmation (parsed only when
    it names that guard: every request scans the run's tool messages)."""
    value = _object(content) if isinstance(content, str) and "unconfirmed_write" in content else None
    return value is not None and value.get("blocked_by") == "unconfirmed_write" and isinstance(value.get("proposal"), dict)


def boundary(messages, rounds=config.RECENT_ROUNDS):
    """Where a new epoch would start: at the last `rounds` tool rounds; None when nothing is older."""
    starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]
    return starts[-rounds] if len(starts) > rounds else None


def recent(message, say=ZH):
    """A message since the epoch's start as sent: a long tool result cut head-and-tail."""
    content = message.get("content")
    if message.get("role") == "tool" and isinstance(content, str) and len(content) > config.RECENT_RESULT_MAX_CHARS:
        return dict(message, content=cut(content, config.RECENT_RESULT_MAX_CHARS, say))
    return message


def compact(messages, tool_of, room=None, say=ZH):
    """`messages` (a slice of the record) compacted: data results to their short fields (and the
    fields their tool declares `keep`), old prose cut; then, oldest first, results to stubs until
    the whole fits `room` characters."""
    names = {c.get("id"): (c.get("function") or {}).get("name") for m in messages if m.get("role") == "assistant"
             for c in m.get("tool_calls") or ()}
    tools = {i: tool_of(n) for i, n in names.items() if n}
    keep = _kept(messages, tools)
    out = [_compacted(m, keep, tools.get(m.get("tool_call_id")), say) for m in messages]
    if room is None:
        return out
    total = chars(out)
    for i, message in enumerate(out):
        if total <= room:
            break
        if message.get("role") == "tool" and message.get("tool_call_id") not in keep:
            stub = _stub(messages[i].get("content") or "", say)
            if len(stub) < len(message["content"]):
                total -= len(message["content"]) - len(stub)
                out[i] = dict(message, content=stub)
    return out


def _kept(messages, tools):
    """Tool messages never compacted: successful write receipts, the latest result of each state tool."""
    keep, latest = set(), {}
    for m in messages:
        tool = tools.get(m.get("tool_call_id"))
        if m.get("role") != "tool" or tool is None or _failed(m.get("content")):
            continue
        if tool.kind == "write":
            keep.add(m.get("tool_call_id"))
        elif tool.kind == "state":
            latest[tool.name] = m.get("tool_call_id")
    return keep | set(latest.values())


def _failed(content):
    value = _object(content) if isinstance(content, str) else None
    return value is None or "error" in value


def _compacted(message, keep, tool, say):
    role, content = message.get("role"), message.get("content")
    if not isinstance(content, str):
        return message
    if role == "tool" and message.get("tool_call_id") not in keep:
        short = _shrunk(content, tool.keep if tool else (), say)
    elif role == "assistant":
        short = cut(content, config.OLD_PROSE_CHARS, say)
    else:
        return message
    return message if short is content else dict(message, content=short)


def _shrunk(content, whole=(), say=ZH):
    """A data result without its prose: a JSON object of its short fields (and the `whole` ones)
    plus a note of what went."""
    value = _object(content)
    if value is None:
        return cut(content, config.OLD_PROSE_CHARS, say)
    dropped: dict[str, int] = {}      # path -> characters dropped there
    kept = _short_fields({k: v for k, v in value.items() if k not in whole}, "", dropped, 0)
    kept.update({k: value[k] for k in whole if k in value})
    if not dropped:
        return content
    parts = sorted(dropped.items(), key=lambda kv: -kv[1])
    kept["_compacted"] = say("compact.parts", size=len(content), more=say("compact.more") if len(parts) > 4 else "",
                             parts=say.join(say("compact.part", part=p, size=n) for p, n in parts[:4]))
    text = json.dumps(kept, ensure_ascii=False)
    return text if len(text) < len(content) else content


def _short_fields(value, path, dropped, depth):
    if isinstance(value, dict) and depth < 6:
        out = {}
        for key, item in value.items():
            kept = _short_fields(item, f"{path}.{key}" if path else str(key), dropped, depth + 1)
            if kept is not _DROP:
                out[key] = kept
        return out
    if isinstance(value, list) and depth < 6:
        if len(value) > LIST_MAX:
            _note(dropped, f"{path}[{LIST_MAX}:]", value[LIST_MAX:])
        items = [_short_fields(item, f"{path}[]", dropped, depth + 1) for item in value[:LIST_MAX]]
        return [item for item in items if item is not _DROP]
    if isinstance(value, (dict, list)) or isinstance(value, str) and len(value) > SHORT:
        _note(dropped, path, value)
        return _DROP
    return value


_DROP = object()


def _note(dropped, path, value):
    size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
    dropped[path] = dropped.get(path, 0) + size


def _stub(content, say=ZH):
    """The last resort for an old result: its top-level facts only."""
    value = _object(content)
    if value is None:
        return cut(content, 100, say)
    kept = {k: v for k, v in value.items() if isinstance(v, (int, float, bool)) or v is None
            or isinstance(v, str) and len(v) <= STUB_SHORT}
    kept["_compacted"] = say("compact.whole", size=len(content))
    return json.dumps(kept, ensure_ascii=False)


def _object(content):
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
