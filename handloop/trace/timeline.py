"""A run's timeline, rebuilt from its audit snapshot: its stretches of work (the first, then one per user
reply), their turns (one per trace record: model seconds, tokens and their split into input and output when
the record has it, the assistant message) and each turn's calls
(status, the guard that blocked, seconds, concurrency, result), laid out in work time.

Invariants: reads a snapshot dict, never a file, and imports no project module (the view and the exporter
share it; the command line gives it what audit.load checked, but any dict gives a timeline: a damaged part of a
record, a value of the wrong type, NaN included, reads as absent, never an exception). Times are the run's work time in
seconds from its first turn (a suspension takes none): a turn's model time first, then its calls, the
concurrent reads side by side and the others one after another; a call's `lane` is where it is drawn, so
that calls that overlap get lanes of their own. Building costs time linear in the record (up to a log factor):
each trace record is found for its message through an index, never by scanning what is left.
"""
import dataclasses
import heapq
import json
import math

EMPTY_NOTE = ("empty_reply", "length")   # how the loop's record of a reply it could not use (empty, cut off) starts its note


@dataclasses.dataclass
class Call:
    id: str
    name: str
    arguments: str = ""
    status: str = "ok"            # ok, error, blocked, timeout ... as the trace records it
    guard: str | None = None      # the guard that blocked it
    error: str | None = None      # the error its tool message carries
    result: str = ""              # its tool message, as sent to the model
    proposal: bool = False        # a blocked write shown to the user as a proposal
    concurrent: bool = False
    start: float = 0.0
    seconds: float = 0.0
    lane: int = 0

    @property
    def end(self):
        return self.start + self.seconds


@dataclasses.dataclass
class Turn:
    number: int
    start: float = 0.0
    model_seconds: float = 0.0
    tokens: int = 0
    estimated: bool = False
    tokens_in: int | None = None  # the request's share of `tokens`, as recorded (None: an older record, or unknown)
    tokens_out: int | None = None
    tokens_cached: int | None = None  # of tokens_in, what the server's prompt cache served (None: it did not say)
    used_tokens: int = 0
    chars_sent: int = 0
    chars_full: int = 0
    text: str = ""                # the assistant's words
    message: dict | None = None   # the assistant message (None: an empty reply)
    calls: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    nudges: list = dataclasses.field(default_factory=list)   # what the loop told the model after it

    @property
    def split(self):
        """(input, output) tokens as the server reported them; None when it did not (or the record predates it)."""
        if self.estimated or self.tokens_in is None or self.tokens_out is None:
            return None
        return self.tokens_in, self.tokens_out

    @property
    def finish(self):
        """The finish reason the record implies."""
        if self.message is None:
            return "empty"
        return "tool_calls" if self.message.get("tool_calls") else "stop"

    @property
    def end(self):
        return max([self.start + self.model_seconds, *(c.end for c in self.calls)])


@dataclasses.dataclass
class Stretch:
    number: int
    opened: str                   # "start", "confirm" (a confirm reply), "reply"
    user: str                     # the goal, or the user's reply that opened it
    turns: list = dataclasses.field(default_factory=list)
    outcome: str = ""             # how it ended: "suspended" (the run waited for the user) or the run's status
    reason: str = ""

    @property
    def start(self):
        return self.turns[0].start if self.turns else 0.0

    @property
    def end(self):
        return self.turns[-1].end if self.turns else self.start


@dataclasses.dataclass
class Timeline:
    run_id: str
    agent: str
    language: str
    model: str
    mode: str
    status: str
    reason: str
    detail: str
    created: str
    updated: str
    stretches: list
    tools: list                   # the names of the tools the model was shown
    proposals: list = dataclasses.field(default_factory=list)   # memory.proposals: each held call and its state

    @property
    def turns(self):
        return [t for s in self.stretches for t in s.turns]

    @property
    def tokens(self):
        return sum(t.tokens for t in self.turns)


def build(snap):
    """The timeline of an audit snapshot (a dict as audit.load returns it)."""
    agent = snap.get("agent") if isinstance(snap.get("agent"), dict) else {}
    confirm = [" ".join(str(c).split()).casefold() for c in _items(agent.get("confirm"))]
    messages = [m for m in _items(snap.get("messages")) if isinstance(m, dict)]
    records = [t for t in _items(snap.get("trace")) if isinstance(t, dict)]
    goal = next((_text(m) for m in messages if m.get("role") == "user"), "")
    stretches = _stretches(messages, records, confirm, goal)
    _lay_out([t for s in stretches for t in s.turns])
    for s in stretches[:-1]:
        s.outcome, s.reason = "suspended", ""
    if stretches:
        stretches[-1].outcome, stretches[-1].reason = str(snap.get("status", "")), str(snap.get("reason", ""))
    names = [t["function"].get("name") for t in _items(snap.get("tools")) if isinstance(t, dict) and
             isinstance(t.get("function"), dict)]
    memory = snap.get("memory") if isinstance(snap.get("memory"), dict) else {}
    proposals = [p for p in _items(memory.get("proposals")) if isinstance(p, dict) and isinstance(p.get("calls"), list)]
    return Timeline(str(snap.get("run_id", "")), str(agent.get("name", "")), str(agent.get("language") or "zh"),
                    str(snap.get("model", "")), str(snap.get("mode", "")), str(snap.get("status", "")),
                    str(snap.get("reason", "")), str(snap.get("detail", "")), str(snap.get("created", "")),
                    str(snap.get("updated", "")), stretches, [n for n in names if isinstance(n, str) and n], proposals)


def _stretches(messages, records, confirm, goal):
    """Walk the messages after the goal, taking one trace record per turn in order."""
    stretches, pending = [Stretch(1, "start", goal)], _Pending(records)
    seen_goal = False
    results = {_id(m.get("tool_call_id")): m for m in messages if m.get("role") == "tool"}
    for m in messages:
        role = m.get("role")
        if role == "user" and not seen_goal:
            seen_goal = True
            continue
        if not seen_goal or role in ("system", "tool"):
            continue
        pending.empty_turns(stretches[-1])
        if role == "assistant":
            stretches[-1].turns.append(_turn(m, pending.record_for(m), results))
        elif m.get("name") == "loop":
            if stretches[-1].turns:
                stretches[-1].turns[-1].nudges.append(_text(m))
        elif role == "user":
            said = _text(m)
            decided = m.get("decision") if isinstance(m.get("decision"), dict) else {}
            how = "confirm" if decided.get("approve") or " ".join(said.split()).casefold() in confirm else "reply"
            stretches.append(Stretch(len(stretches) + 1, how, said))
    while pending:
        pending.empty_turns(stretches[-1])
        if pending:
            stretches[-1].turns.append(_turn(None, pending.take(), results))
    return stretches


class _Pending:
    """The trace records not yet taken, in order (`head`: the first of them), with an index from the call ids
    a record names to where such records are, so finding a message's record never scans the rest."""

    def __init__(self, records):
        self.records, self.head = records, 0
        self.at: dict[tuple, list[int]] = {}
        self.seen: dict[tuple, int] = {}
        for index, record in enumerate(records):
            self.at.setdefault(_ids(record.get("tools")), []).append(index)

    def __bool__(self):
        return self.head < len(self.records)

    def take(self):
        self.head += 1
        return self.records[self.head - 1]

    def empty_turns(self, stretch):
        """The records of empty replies waiting at the head: turns without a message."""
        while self and _empty(self.records[self.head]):
            stretch.turns.append(_turn(None, self.take(), {}))

    def record_for(self, message):
        """The trace record of an assistant message: the next one naming its calls' ids (none, when it has no
        calls); the records before it are passed over. {} when there is none (nothing is passed over)."""
        key = _ids(message.get("tool_calls"))
        places, cursor = self.at.get(key, ()), self.seen.get(key, 0)
        while cursor < len(places) and places[cursor] < self.head:
            cursor += 1
        self.seen[key] = cursor
        if cursor == len(places):
            return {}
        self.head = places[cursor] + 1
        return self.records[places[cursor]]


def _empty(record):
    return not record.get("tools") and any(str(n).startswith(EMPTY_NOTE) for n in _items(record.get("notes")))


def _ids(items):
    """The ids a record's tools or a message's calls name, in order, as one hashable key (an id that is no text
    reads as no id: _id)."""
    return tuple(_id(item.get("id")) for item in _items(items) if isinstance(item, dict))


def _turn(message, record, results):
    """One turn: its record's numbers, its message's words and calls, each call's tool message."""
    turn = Turn(_int(record.get("turn")), model_seconds=_num(record.get("model_seconds")),
                tokens=_int(record.get("tokens")), estimated=bool(record.get("tokens_estimated")),
                tokens_in=_count(record.get("tokens_in")), tokens_out=_count(record.get("tokens_out")),
                tokens_cached=_count(record.get("tokens_cached")),
                used_tokens=_int(record.get("used_tokens")), chars_sent=_int(record.get("chars_sent")),
                chars_full=_int(record.get("chars_full")), message=message,
                text=_text(message) if message else "", notes=[str(n) for n in _items(record.get("notes"))])
    traced = {_id(t.get("id")): t for t in _items(record.get("tools")) if isinstance(t, dict)}
    for raw in _items((message or {}).get("tool_calls")):
        if isinstance(raw, dict):
            turn.calls.append(_call(raw, traced.get(_id(raw.get("id")), {}), results.get(_id(raw.get("id")))))
    return turn


def _call(raw, traced, answer):
    function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    call = Call(str(raw.get("id", "")), str(function.get("name", "")), str(function.get("arguments", "")),
                status=str(traced.get("status", "ok")), guard=traced.get("guard"),
                concurrent=bool(traced.get("concurrent")), seconds=_num(traced.get("seconds")))
    content = _text(answer) if answer else ""
    call.result = content
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed:
        call.error = str(parsed["error"])
        call.proposal = "proposal" in parsed
        if call.status == "ok":
            call.status = "error"
    return call


def _lay_out(turns):
    """Start times in work time: each turn after the one before; in a turn, the calls after the model."""
    clock = 0.0
    for turn in turns:
        turn.start = clock
        after = clock + turn.model_seconds
        serial = after
        for call in turn.calls:
            if call.concurrent:
                call.start = after
            else:
                call.start, serial = serial, serial + call.seconds
        _lanes(turn.calls)
        clock = turn.end


def _lanes(calls):
    """Lanes for the calls of a turn: a call takes the first lane free at its start (a call that took no
    time still holds its lane for an instant, so two of them never share one). The lanes in use wait in a
    heap by when they end, the free ones in a heap by number."""
    busy: list[tuple[float, int]] = []
    free: list[int] = []
    lanes = 0
    for call in sorted(calls, key=lambda c: c.start):
        while busy and busy[0][0] <= call.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, lanes = lanes, lanes + 1
        heapq.heappush(busy, (call.start + max(call.seconds, 1e-6), lane))
        call.lane = lane


def _text(message):
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def _num(value):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else 0.0


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _int(value):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return int(value) if ok else 0


def _items(value):
    """A list as recorded; anything else: none."""
    return value if isinstance(value, list) else []


def _id(value):
    """A call id as recorded (text); anything else: no id (None)."""
    return value if isinstance(value, str) else None
