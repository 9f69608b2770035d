"""What an agent declared, as the offline judge reads it: the declaration a file is judged by (the one its audit
file records, else the one given with --agent FILE, else the Xi'an agent's, XIAN) and Declaration, the rules' view
of it: its tools and their kinds, requires, sources (a tool's results, or the user's own messages), whether they
reach outside, effect arguments, the names of the rules their calls keep, confirm replies, planning, language and own checks. Also what a tool's own name is (tool_name) and the words of the choice values the judge can read in a text
(CHOICES: the Xi'an room types).

- The agent judged is a declaration: the plain dict agents.Agent.declared() gives, which an audit file records as
  "agent"; a file that records none (an older audit file, another system's transcript) is judged by the one
  given, else XIAN. Its writes are the tools of kind "write"; its business calls those of kind read or write.

Invariants: imports no project module but the judge's catalogue judge/texts.py (the language a declaration
declares) and the leaf texts/stated.py (how a declaration's effects read, shared with the guards); reads, never
writes; a malformed part of a declaration reads as absent, never as a permission; reads no conversation
(judge/transcripts.py does) and judges nothing (checks.py does).
"""
import re

from ..texts import stated
from .texts import language_of

BOOK_WORDS = re.compile(r"预订|预定|订|下单|\bbook|reserv", re.I)
ROOMS = (("Standard", re.compile(r"standard|标准间|标准房|标间", re.I)),
         ("Deluxe", re.compile(r"deluxe|豪华间|豪华房", re.I)), ("Suite", re.compile(r"suite|套房|套间", re.I)))


XIAN = {   # the Xi'an agent (tools.xian_agent(), both tool modes: its MCP get_weather's coordinates, tools.WEATHER_SERVER)
    "name": "xian-hotel", "confirm": ["确认"], "language": "zh", "planning": True,
    "checks": ["room_type_follows_weather"],
    "tools": {
        "get_weather": {"kind": "read", "sources": [{"args": ["latitude", "longitude"], "tool": "search_location",
                                                     "fields": ["latitude", "longitude"], "path": "", "near": True}]},
        "search_hotels": {"kind": "read"},
        "search_location": {"kind": "read"},
        "book_hotel": {"kind": "write", "requires": ["get_weather", "search_hotels"], "rules": ["room_type_follows_weather"],
                       "effect": [["hotel_id", "id"], ["room_type", "choice"], ["check_in", "date"], ["nights", "count"]],
                       "sources": [{"args": ["hotel_id"], "tool": "search_hotels", "fields": ["hotel_id"],
                                    "path": "hotels[]", "near": False}]}}}
CHOICES = {"room_type": ROOMS}     # the words of the choice values the judge can read in a text


def declaration_of(meta, given=None):
    """The declaration a file is judged by: the one its audit file records ("agent": the tools the run
    really had, MCP tools included), else `given`, else XIAN."""
    recorded = meta.get("agent")
    return recorded if readable(recorded) else given if readable(given) else XIAN


def readable(declared):
    return isinstance(declared, dict) and isinstance(declared.get("tools"), dict)


class Declaration:
    """A declaration (plain dict) as the rules read it: a malformed part reads as absent, never as a
    permission. Tool names are read as tool_name() reads a call's."""

    def __init__(self, raw):
        raw = raw if readable(raw) else XIAN
        self.raw, self.name = raw, raw.get("name") if isinstance(raw.get("name"), str) else ""
        self.tools = {tool_name(n): spec for n, spec in raw["tools"].items() if isinstance(n, str) and
                      isinstance(spec, dict) and tool_name(n)}
        self.planning = raw.get("planning") is not False
        self.language = language_of(raw)        # what the report says is said in it ("zh" unless it declares "en")
        self.confirm = [c for c in _list(raw.get("confirm")) if isinstance(c, str) and c.strip()]
        self.checks = [c for c in _list(raw.get("checks")) if isinstance(c, str)]
        self.writes = tuple(n for n, spec in self.tools.items() if spec.get("kind") == "write")
        self.business = tuple(n for n, spec in self.tools.items() if spec.get("kind") in ("read", "write"))
        verbs = sorted({re.escape(n.split("_")[0]) for n in self.writes if n.split("_")[0]})
        self.words = re.compile("|".join([BOOK_WORDS.pattern] + [rf"\b{v}" for v in verbs]), re.I)

    def requires(self, name):
        return [tool_name(r) for r in _list(self.tools.get(name, {}).get("requires")) if isinstance(r, str)]

    def rules(self, name=None):
        """The names of the rules the calls of a tool keep (calls.Rule; the run records them), or, without a name,
        of every tool's, each once."""
        names = [name] if name is not None else list(self.tools)
        return list(dict.fromkeys(r for n in names for r in _list(self.tools.get(n, {}).get("rules"))
                                  if isinstance(r, str) and r))

    def ruled(self, rule):
        """The tools whose calls keep the rule named `rule`."""
        return [n for n in self.tools if rule in self.rules(n)]

    def effect(self, name):
        """[(argument, how)] of a write: the keys a proposal must match."""
        return [tuple(e) for e in _list(self.tools.get(name, {}).get("effect"))
                if isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e)]

    def sources(self, name):
        """[{"args", "tool", "fields", "path", "near", "user"}, with "any": its alternatives] of a tool: where its
        arguments must come from (texts/stated.py reads them: argument paths, a record's key "*", alternatives). A
        source whose recorded alternatives do not read keeps itself (its first one): never a wider permission.
        `user`: the source is the user's own messages (tool "user", stated.USER, in a declaration with no tool of
        that name; an older record of an agent with a tool "user" meant that tool)."""
        found = []
        users = stated.USER not in self.tools
        for s in stated.sources(self.tool(name)):
            source = _source(s, users)
            options = [_source(o, users) for o in stated.options(s) if o is not s]
            if options:
                source["any"] = options
            found.append(source)
        return found

    def outside(self, name):
        """Whether a tool was declared to reach outside the user's trust boundary (outside=True)."""
        return self.tools.get(name, {}).get("outside") is True

    def ids(self, name):
        """The id arguments of a write with the (tool, field, path) its sources take them from (each alternative's;
        "item_ids[]" for the elements of a list argument)."""
        return [(arg, (o["tool"], o["fields"][o["args"].index(a)], o["path"])) for arg, how in self.effect(name)
                if how == "id" for s in self.sources(name) for o in stated.options(s) for a in (arg, arg + "[]")
                if a in o["args"]]

    def choices(self, name):
        """The choice arguments of a write whose values the judge can read in a text: those whose values the
        declaration records (the schema's enum, with aliases), and the ones it knows the words of (CHOICES)."""
        return [arg for arg, how in self.effect(name) if how == "choice" and (self.choice_values(name, arg) or
                                                                              arg in CHOICES)]

    def choice_values(self, name, arg):
        """{value: (other names)} the declaration records for a choice argument (texts/stated.py reads it)."""
        return stated.choice_values(self.tool(name), arg)

    def tool(self, name):
        """A tool's declaration as recorded (a plain dict; {} when absent): what texts/stated.py reads."""
        spec = self.tools.get(name)
        return spec if isinstance(spec, dict) else {}

    def confirms(self, text):
        given = " ".join(str(text).split()).casefold()
        return any(given == " ".join(c.split()).casefold() for c in self.confirm)


def _source(s, users=True):
    """One recorded source, as the rules read it (`users`: the name "user" is the user's own messages)."""
    tool = tool_name(s["tool"])
    return {"args": [str(a) for a in s["args"]], "tool": tool, "fields": [str(f) for f in s["fields"]],
            "path": s.get("path") if isinstance(s.get("path"), str) else "", "near": s.get("near") is True,
            "user": users and tool == stated.USER}


def _list(value):
    return value if isinstance(value, list) else list(value) if isinstance(value, tuple) else []


def tool_name(name):
    """A tool's own name: MCP and framework prefixes dropped (mcp__hotel__book_hotel, functions.book_hotel)."""
    return re.split(r"__|[./:]", name.strip())[-1] if name.strip() else ""
