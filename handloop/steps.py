"""The next step a run's task needs, followed down its prerequisites.

A tool the task wants next (a plan step ready to run, or a write the run wants) that cannot run yet gives way to
what it needs first (declared `requires`, or the tool a Source of one of its arguments reads: for MCP tools as for
local ones), and that one to its own prerequisites, all the way down (`first`).

Invariants: a pure function of what it is given (`Graph`), no I/O and no import of a project module above the
leaves, so memory.py (which owns the run's state) may call it; the walk goes at most DEPTH levels below a wanted
tool and never through a tool already on its path (a circle of requirements ends there, it is not followed round);
it returns only a tool the model may be made to call (`runnable`), never one that already succeeded (a need met by
any one alternative is met) and never one whose call would repeat a call that already answered (a tool without
parameters that answered since the user last spoke: same tool, same arguments). When several prerequisites could
run, the one the user's own words point at goes first (`pointed`: a file name, a URL, an e-mail address or an id
the user wrote, for a tool with a parameter of that kind); otherwise the declared order holds. Whether a step is
pushed at all, and how often, stays memory's (`pushed`): this module only says which one comes next.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping

__all__ = ["DEPTH", "Graph", "first", "parameters", "pointed"]

DEPTH = 4          # prerequisite levels followed below a wanted tool

# what the user may write that points at a tool taking it: a kind of value, the words a parameter of that kind is
# named with, and how such a value looks in the user's text
KINDS = (
    ("url", re.compile(r"url|link|website|page|uri", re.I), re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.I)),
    ("email", re.compile(r"e?-?mail", re.I), re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")),
    ("file", re.compile(r"file|path|document|attachment|filename", re.I),
     re.compile(r"(?<![\w/:.@-])[\w-]+(?:[./][\w-]+)*\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,5}\b(?![.@/])")),
    ("id", re.compile(r"(^|_)id$|_id_|identifier|number|iban|code", re.I),
     re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|(?<![-\d])\d{5,}(?![-\d])|"
                r"\b[A-Z]{2}\d{2}[A-Z0-9]{8,30}\b")),
)


@dataclasses.dataclass(frozen=True)
class Graph:
    """What the walk reads of a run.

    Attributes:
        needs: tool -> the prerequisites that must have succeeded before it runs, in declared order; an entry that
            is a tuple is a source's alternatives (any one of them).
        done: the tools that succeeded in the run.
        runnable: the tools the model may be made to call (reads and writes the run declares).
        answered: the tools without parameters a call of which answered since the user last spoke (forcing one
            again could only repeat that call).
        said: the user's own messages (what `pointed` reads).
        params: tool -> the names of its parameters (those `pointed` matches against the user's words).
    """

    needs: Mapping[str, tuple]
    done: frozenset
    runnable: frozenset
    answered: frozenset = frozenset()
    said: tuple = ()
    params: Mapping[str, tuple] = dataclasses.field(default_factory=dict)

    def met(self, need: Any) -> bool:
        """Whether a prerequisite succeeded (one of them, for a source's alternatives)."""
        return any(t in self.done for t in need) if isinstance(need, tuple) else need in self.done


def first(wanted: Iterable[str], graph: Graph, depth: int = DEPTH) -> str | None:
    """The first tool to call for the first of `wanted` that leads to one: that tool itself once everything it
    needs succeeded, else the first of its prerequisites (followed down, the user's words first among several)
    that can be called; None when nothing is ready."""
    for tool in wanted:
        found = _walk(tool, graph, depth, ())
        if found is not None:
            return found
    return None


def _walk(tool: str, graph: Graph, depth: int, path: tuple) -> str | None:
    if tool in path or tool not in graph.runnable or tool in graph.answered:
        return None
    unmet = [need for need in graph.needs.get(tool, ()) if not graph.met(need)]
    if not unmet:
        return tool
    if depth <= 0:
        return None
    options = list(dict.fromkeys(t for need in unmet for t in (need if isinstance(need, tuple) else (need,))))
    ranked = sorted(options, key=lambda t: -pointed(graph.said, graph.params.get(t, ())))   # stable: declared order
    for option in ranked:
        if option in graph.done:
            continue
        found = _walk(option, graph, depth - 1, (*path, tool))
        if found is not None:
            return found
    return None


def pointed(said: Iterable[str], names: Iterable[str]) -> int:
    """How many kinds of value (a URL, an e-mail address, a file name, an id) both the user's own words hold and a
    parameter of the tool is named for: how strongly what the user wrote points at that tool. Steers the order of
    prerequisites only; it never decides whether anything runs."""
    text = "\n".join(s for s in said if isinstance(s, str))
    names = tuple(names)
    return sum(1 for _, named, looks in KINDS if any(named.search(n) for n in names) and looks.search(text))


def parameters(schema: Any) -> tuple:
    """The names of the parameters a tool's JSON Schema declares (its top-level properties)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return tuple(props) if isinstance(props, dict) else ()

