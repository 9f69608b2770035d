"""An MCP tool's result read as the server sent it, and cut to what may reach the model: structured content (a JSON
object cut to the declaration's fields at any depth, `trim`, what the cut took said in its `notice`), or its content
blocks (a text result: text blocks as text, every other kind — image, audio, an
embedded resource, a resource link — described in one line), and the server's text of an `isError` result.

Invariants: imports only config.py, calls.py (ToolError), mcp/servers.py (the field paths) and the text catalogue; never raises on a result of any shape (an unknown block
is described by its type); a text result is bounded (config.MCP_TEXT_CHARS of text, config.MCP_BLOCKS blocks, every
string of a block's record at most config.MCP_STRING_CHARS, the base64 data of an image or audio never kept, only
its size); a text result is never records a `Source` reads (docs/mcp.md, "Text results": not at all).
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from .. import config
from .. import texts
from ..calls import ToolError
from .servers import field_path, field_tree

__all__ = ["TextResult", "structured", "text_result", "error_text", "Cut", "trim", "text_cut", "NOTICE_PATHS"]


@dataclasses.dataclass(frozen=True)
class TextResult:
    """A result with no structured content: `text`, what the model reads (the text blocks in order, joined by a
    blank line, each other block its one line), `blocks`, the record of each block (text cut, data replaced by its
    size), and `cut`: the characters of text dropped to fit config.MCP_TEXT_CHARS (0: none) and the blocks left out
    past config.MCP_BLOCKS."""
    text: str
    blocks: tuple = ()
    cut_chars: int = 0
    more_blocks: int = 0


def _content(result: dict) -> list:
    content = result.get("content")
    return content if isinstance(content, list) else []


def structured(result: dict) -> dict | None:
    """A result's JSON object: its `structuredContent`, else the first text block that is a JSON object (as servers
    that predate structured content send one); None when there is none (a text result)."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    for item in _content(result):
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            try:
                value = json.loads(item["text"])
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                return value
    return None


def error_text(result: dict, limit: int = 500) -> str:
    """The server's words in an `isError` result: its text blocks, joined, at most `limit` characters."""
    said = [item["text"] for item in _content(result) if isinstance(item, dict) and isinstance(item.get("text"), str)]
    return " ".join(said)[:limit]


def text_result(result: dict, say=texts.ZH_TEXTS) -> TextResult:
    """A result with no structured content, read block by block within the limits."""
    content = _content(result)
    lines, blocks = [], []
    for item in content[:config.MCP_BLOCKS]:
        line, record = _block(item if isinstance(item, dict) else {}, say)
        lines.append(line)
        blocks.append(record)
    text = "\n\n".join(lines)
    cut = max(0, len(text) - config.MCP_TEXT_CHARS)
    return TextResult(text[:config.MCP_TEXT_CHARS], tuple(blocks), cut, max(0, len(content) - config.MCP_BLOCKS))


def _short(value: Any) -> str:
    return " ".join(value.split())[:config.MCP_STRING_CHARS] if isinstance(value, str) else ""


def _block(item: dict, say) -> tuple[str, dict]:
    """One content block: (what the model reads of it, what the record keeps of it)."""
    kind = _short(item.get("type")) or "?"
    if kind == "text" and isinstance(item.get("text"), str):
        text = item["text"][:config.MCP_TEXT_CHARS]
        return text, {"type": "text", "text": text, "chars": len(item["text"])}
    record: dict[str, Any] = {"type": kind}
    if kind in ("image", "audio"):
        record.update(mimeType=_short(item.get("mimeType")), bytes=_size(item.get("data")))
        return say("mcp.block_media", kind=kind, mime=record["mimeType"] or "?", size=record["bytes"]), record
    if kind == "resource":
        inner: dict = item["resource"] if isinstance(item.get("resource"), dict) else {}
        body = inner.get("text") if isinstance(inner.get("text"), str) else None
        record.update(uri=_short(inner.get("uri")), mimeType=_short(inner.get("mimeType")),
                      **({"chars": len(body)} if body is not None else {"bytes": _size(inner.get("blob"))}))
        return say("mcp.block_resource", uri=record["uri"] or "?", mime=record["mimeType"] or "?"), record
    if kind == "resource_link":
        record.update(uri=_short(item.get("uri")), name=_short(item.get("name")), mimeType=_short(item.get("mimeType")))
        return say("mcp.block_link", name=record["name"] or "?", uri=record["uri"] or "?"), record
    return say("mcp.block_other", kind=kind), record


def _size(data: Any) -> int:
    """The bytes a base64 text holds (0 when it is none)."""
    return len(data) * 3 // 4 if isinstance(data, str) else 0


class Cut(dict):
    """An MCP result as trim() cut it: the object kept, and `notice`, what the cut took (None when it took nothing):
    {"dropped": [paths of the fields not declared, sorted, at most NOTICE_PATHS], "more": how many other paths,
    "cut": [{"path", "items", "of"} of a list cut to config.MCP_LIST_ITEMS, {"path", "chars"} of strings shortened]}.
    The executor hands the notice to the call's Outcome (the record's trace says it once per tool and path)."""

    notice: dict | None = None
    blocks: tuple = ()          # a text result's content blocks, as text_result records them (the trace keeps them)


def text_cut(name, reading, say=texts.ZH_TEXTS, rule=None):
    """An MCP text result (TextResult) as the model reads it: {"text": its blocks, each kind in its
    own way}, cut by length (config.MCP_TEXT_CHARS), never by the declared fields, which are those of a structured
    result (so a text result is never records a Source reads: no declared field is there). A ToolError when the
    tool declares required fields: a text result has none."""
    if rule and rule["required"]:
        raise ToolError(say("mcp.missing_fields", tool=name, fields=", ".join(rule["required"])))
    notice = _Notice()
    if reading.cut_chars:
        notice.shortened("text", chars=config.MCP_TEXT_CHARS)
    if reading.more_blocks:
        notice.shortened("content[]", items=config.MCP_BLOCKS, of=config.MCP_BLOCKS + reading.more_blocks)
    out = Cut({"text": reading.text})
    out.notice, out.blocks = notice.said(), reading.blocks
    return out


NOTICE_PATHS = 50           # dropped paths a notice names (the rest counted)
_SEEN_PATHS = 1000          # dropped paths told apart while cutting one result (a hostile one may have millions)
_UNDECLARED_DEPTH = 4       # how far below an undeclared field its own paths are looked for, to name them
_UNDECLARED_ITEMS = 20      # and how many items of each of its lists


def trim(name, payload, say=texts.ZH_TEXTS, rule=None):
    """An MCP result cut to the tool's declared fields (`rule`: its server's declaration of it, see
    servers.field_path), always: at any depth only what a declared path names passes, whatever the server sent
    beside it (so a result none of whose fields is declared becomes {}). A path's value is a JSON scalar (`tags[]`:
    a list of them; strings shortened to config.MCP_STRING_CHARS); a path stepping through an object keeps the
    object's declared fields, through `name[]` those of each record of the list (at most config.MCP_LIST_ITEMS
    items of any list). A value of another shape than declared (records or a list where a value was declared, a
    NaN) is dropped like an undeclared field. Returns a Cut whose notice names every path dropped and every cut made; a
    ToolError when a required path is missing (any record on its way lacking it)."""
    tree, _ = field_tree(rule["fields"])
    notice = _Notice()
    kept = _kept(payload, tree, "", notice)
    missing = [path for path in rule["required"] if _absent(kept, field_path(path) or ())]
    if missing:
        raise ToolError(say("mcp.missing_fields", tool=name, fields=", ".join(missing)))
    out = Cut(kept)
    out.notice = notice.said()
    return out


class _Notice:
    """What a cut took, gathered while it cuts (bounded, whatever the result)."""

    def __init__(self):
        self.dropped, self.more, self.cut = set(), 0, {}

    def drop(self, path):
        if path in self.dropped:
            return
        if len(self.dropped) < _SEEN_PATHS:
            self.dropped.add(path)
        else:
            self.more += 1

    def shortened(self, path, **what):
        self.cut.setdefault(path, dict(path=path, **what))

    def said(self):
        if not self.dropped and not self.cut:
            return None
        paths = sorted(self.dropped)
        return {"dropped": paths[:NOTICE_PATHS], "more": self.more + max(0, len(paths) - NOTICE_PATHS),
                "cut": list(self.cut.values())}


def _kept(record, tree, at, notice):
    """The declared fields of one object (`tree`: servers.field_tree's), the others dropped (and said)."""
    out = {}
    for key, value in record.items():
        where = f"{at}.{key}" if at else str(key)
        field = tree.get(key)
        if field is None:
            _undeclared(value, where, notice)
            continue
        into, fields = field
        if fields is None:
            value = _values(value, where, notice) if into else _value(value, where, notice)
        elif into:
            value = _records(value, where, fields, notice)
        elif isinstance(value, dict):
            value = _kept(value, fields, where, notice)
        else:
            _undeclared(value, where, notice)
            value = None
        if value is not None:
            out[key] = value
    return out


def _records(value, where, fields, notice):
    """The declared fields of each record of a list (`where`: its name, said with "[]"); None when it is no list."""
    if not isinstance(value, list):
        _undeclared(value, where, notice)
        return None
    out = []
    for item in _listed(value, where, notice):
        if isinstance(item, dict):
            out.append(_kept(item, fields, where + "[]", notice))
        else:
            _undeclared(item, where + "[]", notice)
    return out


def _values(value, where, notice):
    """A declared list of values ("tags[]"): its JSON scalars; None (dropped, and said) when it is no list."""
    if not isinstance(value, list):
        _undeclared(value, where, notice)
        return None
    kept = [_value(v, where + "[]", notice) for v in _listed(value, where, notice)]
    return [v for v in kept if v is not None]


def _value(value, where, notice):
    """A declared value: a JSON scalar; None (dropped, and said) for any other shape."""
    got = _scalar(value, where, notice)
    if got is None and value is not None:
        _undeclared(value, where, notice)
    return got


def _listed(value, where, notice):
    """The items of a list kept: the first config.MCP_LIST_ITEMS (the cut said)."""
    if len(value) > config.MCP_LIST_ITEMS:
        notice.shortened(where + "[]", items=config.MCP_LIST_ITEMS, of=len(value))
    return value[:config.MCP_LIST_ITEMS]


def _undeclared(value, where, notice, depth=0):
    """Said as dropped: the paths a value not declared holds (its fields' paths, as a declaration would name
    them), looked for only so deep and so wide."""
    if isinstance(value, dict) and value and depth < _UNDECLARED_DEPTH:
        for key, item in list(value.items())[:_UNDECLARED_ITEMS]:
            _undeclared(item, f"{where}.{key}", notice, depth + 1)
    elif isinstance(value, list) and value and depth < _UNDECLARED_DEPTH and any(isinstance(v, (dict, list)) for v in value):
        for item in value[:_UNDECLARED_ITEMS]:
            if isinstance(item, (dict, list)):
                _undeclared(item, where + "[]", notice, depth + 1)
    else:
        notice.drop(where)


def _absent(value, steps):
    """Whether a required path is missing: some object on its way lacks the next step."""
    found = [value]
    for name, _ in steps:
        if any(not isinstance(v, dict) or name not in v for v in found):
            return True
        found = [item for v in found for item in (v[name] if isinstance(v[name], list) else [v[name]])]
    return False


def _scalar(value, where="", notice=None):
    """A JSON scalar fit to pass on (finite number, bool, string of at most config.MCP_STRING_CHARS, the cut
    said to `notice`), or None."""
    if isinstance(value, str):
        if len(value) > config.MCP_STRING_CHARS and notice is not None:
            notice.shortened(where, chars=config.MCP_STRING_CHARS)
        return value[:config.MCP_STRING_CHARS]
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None
