"""Bring your own tools: an order-service agent on the same loop, built only from the library's
public parts (the gateway article's order case). Two reads, `get_order` and `track_shipment`,
and one write, `refund_order`, that runs only after the user confirms and carries an
idempotency key its store enforces. Everything the loop needs to know of a tool is in its
declaration below; the loop, guards, memory and executor are the Xi'an task's, unchanged.

    python examples/orders.py          # offline: its own scripted model, through the loopback endpoint
"""
import json
import os
import sqlite3
import sys
import tempfile

import handloop
from handloop import Agent, Source, Tool, ToolError

GOAL = "我的订单 A1001 里的耳机坏了，帮我查一下物流，然后申请全额退款。退款前先让我确认。"
INSTRUCTIONS = """你是售后助手，只能通过工具查询订单、物流和申请退款。规则：
1. 先调用 set_plan 制定计划；查询可以和 set_plan 放在同一轮。
2. order_id 和运单号只能取自本次运行工具的结果，不要编造。
3. 查清订单和物流后，先不要退款：用中文向用户说明退款方案（订单号、商品、金额），然后停止调用工具，等用户回复「确认」。
4. 用户确认后按方案原样调用 refund_order；工具返回 error 时按提示修正，不要原样重复。"""
PLAN_EXAMPLE = ('{"steps": [{"title": "查订单", "tool": "get_order"}, {"title": "查物流", "tool": "track_shipment", '
                '"after": [1]}, {"title": "退款", "tool": "refund_order", "after": [1, 2]}]}')
ORDERS = {"A1001": {"order_id": "A1001", "item": "降噪耳机", "amount": 899, "status": "delivered", "tracking": "SF7788"},
          "A1002": {"order_id": "A1002", "item": "机械键盘", "amount": 459, "status": "shipped", "tracking": "YT5566"}}
SHIPMENTS = {"SF7788": {"tracking": "SF7788", "carrier": "顺丰", "state": "已签收", "signed": "2026-11-28"},
             "YT5566": {"tracking": "YT5566", "carrier": "圆通", "state": "运输中", "signed": None}}


class Refunds:
    """The order system's refunds: SQLite, one row per idempotency key, whoever asks."""

    def __init__(self, path):
        self.path = path

    def _db(self):
        db = sqlite3.connect(self.path, timeout=5)
        db.execute("CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, order_id TEXT, amount INTEGER)")
        return db

    def refund(self, key, order_id, amount):
        with self._db() as db:
            inserted = db.execute("INSERT OR IGNORE INTO refunds VALUES (?, ?, ?)", (key, order_id, amount)).rowcount
        return {"refund_id": "RF-" + key[:10].upper(), "order_id": order_id, "amount": amount, "replayed": not inserted}

    def find(self, key):
        with self._db() as db:
            row = db.execute("SELECT order_id, amount FROM refunds WHERE key = ?", (key,)).fetchone()
        return row and {"refund_id": "RF-" + key[:10].upper(), "order_id": row[0], "amount": row[1]}

    def count(self):
        with self._db() as db:
            return db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]


def get_order(order_id):
    if order_id not in ORDERS:
        raise ToolError(f"没有订单 {order_id}")
    return dict(ORDERS[order_id])


def track_shipment(tracking):
    if tracking not in SHIPMENTS:
        raise ToolError(f"没有运单 {tracking}")
    return dict(SHIPMENTS[tracking])


def _schema(**props):
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


def declarations(refunds):
    """The tools of this agent: what the loop's layers read, and nothing else."""
    def refund_order(order_id, amount, idempotency_key):
        if amount > ORDERS[order_id]["amount"]:
            raise ToolError(f"退款金额不能超过订单金额 ¥{ORDERS[order_id]['amount']}")
        return refunds.refund(idempotency_key, order_id, amount)
    text, money = {"type": "string", "minLength": 1, "maxLength": 32}, {"type": "integer", "minimum": 1}
    return [
        Tool("get_order", "查订单：商品、金额、状态、运单号 tracking。", _schema(order_id=text), get_order,
             gist=lambda r: f"{r.get('item')} ¥{r.get('amount')} {r.get('status')}",
             absorb=lambda facts, args, r: facts.update(orders={**facts.get("orders", {}), r["order_id"]: r}),
             render=lambda facts: [f"订单 {o['order_id']}：{o['item']} ¥{o['amount']}，{o['status']}"
                                   for o in facts.get("orders", {}).values()]),
        Tool("track_shipment", "按运单号查物流状态。", _schema(tracking=text), track_shipment,
             sources=(Source(("tracking",), "get_order", ("tracking",)),), gist=lambda r: r.get("state")),
        Tool("refund_order", "申请退款（写操作，需要用户确认）。order_id 必须来自 get_order。",
             _schema(order_id=text, amount=money), refund_order, kind="write", takes=("idempotency_key",),
             requires=("get_order", "track_shipment"), sources=(Source(("order_id",), "get_order", ("order_id",)),),
             effect=(("order_id", "id"), ("amount", "count")), reconcile=refunds.find,
             gist=lambda r: f"已退款 {r.get('refund_id')} ¥{r.get('amount')}"),
    ]


# ---- its offline model: stateless, reads the conversation like a model would ----
def respond(request):
    messages, done = request.get("messages") or [], {}
    calls = {}
    for m in messages:
        calls.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            done[calls.get(m["tool_call_id"])] = json.loads(m["content"])
    users = [m["content"] for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    if "refund_order" in done:
        return {"content": f"退款已提交：{done['refund_order']['refund_id']}，¥{done['refund_order']['amount']}。"}
    if "set_plan" not in done:
        return _calls(("set_plan", {"steps": [{"title": "查订单", "tool": "get_order"},
                                              {"title": "查物流", "tool": "track_shipment", "after": [1]},
                                              {"title": "退款", "tool": "refund_order", "after": [1, 2]}]}),
                      ("get_order", {"order_id": "A1001"}))
    order = done.get("get_order")
    if "track_shipment" not in done:
        return _calls(("track_shipment", {"tracking": order["tracking"]}))
    if isinstance(request.get("tool_choice"), dict) or users[-1] == "确认" and len(users) > 1:   # asked for the call
        return _calls(("refund_order", {"order_id": order["order_id"], "amount": order["amount"]}))
    if len(users) > 1:
        return {"content": "好的，不退款了。"}
    return {"content": f"订单 {order['order_id']}（{order['item']}）{done['track_shipment']['state']}。"
                       f"建议全额退款 ¥{order['amount']}，回复「确认」后我就提交。"}


def _calls(*items):
    return {"content": None, "tool_calls": [{"id": f"call_{name}_{i}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(args, ensure_ascii=False)}} for i, (name, args) in enumerate(items)]}


def offline_model():
    """(ask, close): this agent's offline model behind the loopback endpoint, through the openai client."""
    ask = handloop.offline_model(respond, name="orders-offline")
    return ask, ask.close


def agent(refunds):
    """This agent: its prompt, goal, confirm reply, planning and its tools over `refunds`."""
    return Agent("orders", INSTRUCTIONS, declarations(refunds), goal=GOAL, confirm=("确认",), language="zh",
                 planning=True, plan_example=PLAN_EXAMPLE, offline=respond)


def main(audit_dir=None):
    """The run offline: it stops at the proposal; the user's 「确认」 (handloop.confirm, as another process
    would) lets it refund, once."""
    audit_dir = audit_dir or tempfile.mkdtemp(prefix="orders-")
    refunds = Refunds(os.path.join(audit_dir, "refunds.db"))
    me = agent(refunds)
    ask, close = offline_model()
    try:
        r, tools = handloop.start(me, "orders-demo", audit_dir=audit_dir, model=ask.name)   # the agent's goal
        handloop.run(r, ask, tools)
        tools.close()
        print(f"{r.status}/{r.reason}：{r.answer}")
        r, tools = handloop.confirm(me, "orders-demo", audit_dir=audit_dir)
        handloop.run(r, ask, tools)
        tools.close()
        print(f"{r.status}/{r.reason}：{r.answer}\n退款 {refunds.count()} 笔；审计文件 {r.path}")
    finally:
        close()
    return 0 if r.status == "done" and refunds.count() == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
