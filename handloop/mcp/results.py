"""An MCP tool's result read as the server sent it: structured content (a JSON object the declaration's fields cut,
toolset.trim), or its content blocks (a text result: text blocks as text, every other kind — image, audio, an
embedded resource, a resource link — described in one line), and the server's text of an `isError` result.

Invariants: imports only config.py and the text catalogue; never raises on a result of any shape (an unknown block
is described by its type); a text result is bounded (config.MCP_TEXT_CHARS of text, config.MCP_BLOCKS blocks, every
string of a block's record at most config.MCP_STRING_CHARS, the base64 data of an image or audio never kept, only
its size); a text result is never records a `Source` reads (docs/mcp.md, "Text results": not at all).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from .. import config
from .. import texts

__all__ = ["TextResult", "structured", "text_result", "error_text"]


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
