"""A shop's order desk whose writes its own MCP server runs (orders_mcp.py, the official SDK): `cancel_order` and
`exchange_items` are declared writes on the server (kind, effect, sources, and `key`, the server's argument that
receives the idempotency key), so each is proposed, confirmed and made once, as a local write would be.

    python agent.py --agent tests/orders_mcp/orders.py      # looks the order up, proposes the cancel, waits
    python agent.py --confirm                               # cancels once

ORDERS_LANG "zh" makes it a Chinese agent. The offline model is a script of the conversation (ORDERS_SCRIPT):
"cancel" (default) cancels W-1001; "two" exchanges both items of W-1001 (a list effect), then cancels W-1002, a
second write of the same run; "invent" cancels W-9999, which no read gave. The store is ORDERS_DB.
"""
import json
import os
import sys

from handloop import Agent, MCPServer, Source

HERE = os.path.dirname(os.path.abspath(__file__))
ZH = os.environ.get("ORDERS_LANG") == "zh"
SCRIPT = os.environ.get("ORDERS_SCRIPT", "cancel")
ORDER = Source.of("get_order", "order_id", path="order")
KEY = os.environ.get("ORDERS_KEY", "idempotency_key")         # the server's argument for the idempotency key
SERVER = MCPServer("orders", command=[sys.executable, os.path.join(HERE, "orders_mcp.py")], tools={
    "get_order": ("order.order_id", "order.status", "order.items[].item_id", "order.items[].name"),
    "cancel_order": {"fields": ("order_id", "status"), "kind": "write", "effect": {"order_id": "id"},
                     "key": KEY, "sources": [ORDER]},
    "exchange_items": {"fields": ("order_id", "status"), "kind": "write", "key": KEY,
                       "effect": {"order_id": "id", "item_ids": "id"},
                       "sources": [ORDER, Source.of("get_order", {"item_ids[]": "item_id"}, path="order.items[]")]}})


def respond(request):
    """The offline model: each step follows from the conversation alone."""
    results, names = {}, {}
    for m in request["messages"]:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool":
            results.setdefault(names[m["tool_call_id"]], []).append(json.loads(m["content"]))
    if "get_order" not in results:
        return _calls(*[("get_order", {"order_id": o}) for o in (("W-1001", "W-1002") if SCRIPT == "two" else ("W-1001",))])
    made = [r for name in ("exchange_items", "cancel_order") for r in results.get(name, []) if "status" in r]
    if SCRIPT == "two" and not results.get("exchange_items"):
        return _calls(("exchange_items", {"order_id": "W-1001", "item_ids": ["I-11", "I-12"], "new_item_ids": ["I-13"]}))
    if SCRIPT == "two" and not results.get("cancel_order"):
        return _calls(("cancel_order", {"order_id": "W-1002", "reason": "not needed"}))
    if made or results.get("cancel_order"):
        return {"content": ("已完成：" if ZH else "Done: ") + json.dumps(made or results["cancel_order"][-1])}
    return _calls(("cancel_order", {"order_id": "W-9999" if SCRIPT == "invent" else "W-1001", "reason": "not needed"}))


def _calls(*calls):
    return {"content": None, "tool_calls": [{"id": f"call_{i}_{name}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls)]}


AGENT = Agent("orders", "你是商店的订单客服：先查订单，用户确认后才取消或换货。" if ZH else
              "You are a shop's order desk. Look the order up, then cancel or exchange only once the user confirms.",
              [], goal="取消订单 W-1001。" if ZH else "Cancel my order W-1001.", language="zh" if ZH else "en",
              planning=False, mcp=[SERVER], offline=respond, confirm=("确认",) if ZH else ("yes",))
