"""A small agent of several writes, as a user writes one (tests/confirmation/): shows, a booking moved, items
returned, an order refunded, a certificate sent. Every write is stored in SQLite (tool, arguments, idempotency key)
under the audit folder, so a test reads what really ran. SHOP_LANG picks English or Chinese."""
import json
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

LANG = os.environ.get("SHOP_LANG", "en")
SHOWS = [{"show_id": "S-1", "title": "Hamlet", "seats_left": 3}]
ITEMS = [{"item_id": "I-1", "name": "lamp"}, {"item_id": "I-2", "name": "mug"}]


def _store(tool, args, key):
    with sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR", "audit"), "shop.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS writes (key TEXT PRIMARY KEY, tool TEXT, args TEXT)")
        db.execute("INSERT OR IGNORE INTO writes VALUES (?, ?, ?)", (key, tool, json.dumps(args, sort_keys=True)))
    return {"done": tool, **args}


def list_shows():
    return {"shows": SHOWS}


def my_order():
    return {"order_id": "A-1", "booking_day": "2026-12-01", "items": ITEMS, "user_id": "u-7", "price": 348}


def check_shipping(order_id):
    return {"order_id": order_id, "status": "in transit"}


def book_seats(show_id, seats, idempotency_key):
    return _store("book_seats", {"show_id": show_id, "seats": seats}, idempotency_key)


def move_booking(day, idempotency_key):
    return _store("move_booking", {"day": day}, idempotency_key)


def return_items(item_ids, idempotency_key):
    return _store("return_items", {"item_ids": item_ids}, idempotency_key)


def refund(order_id, idempotency_key):
    if order_id == "A-9":
        raise ToolError("order A-9 cannot be refunded")
    return _store("refund", {"order_id": order_id}, idempotency_key)


def send_certificate(user_id, amount, idempotency_key):
    return _store("send_certificate", {"user_id": user_id, "amount": amount}, idempotency_key)


def _schema(**props):
    return {"type": "object", "required": list(props), "properties": props, "additionalProperties": False}


S, I = {"type": "string"}, {"type": "integer"}
WRITE = {"kind": "write", "takes": ("idempotency_key",)}

AGENT = Agent(
    name="shop", language=LANG, planning=False, confirm=("yes",) if LANG == "en" else ("确认",),
    instructions="You help with the user's shows and orders. Look things up first; every write is confirmed.",
    goal="Help me with my order A-1." if LANG == "en" else "帮我处理订单 A-1。",
    tools=[
        Tool("list_shows", "The shows with their seats left.", _schema(), list_shows),
        Tool("my_order", "The user's order A-1.", _schema(), my_order),
        Tool("check_shipping", "Where an order is.", _schema(order_id=S), check_shipping),
        Tool("book_seats", "Book seats for a show.", _schema(show_id=S, seats=I), book_seats, **WRITE,
             effect=(("show_id", "id"), ("seats", "count")),
             sources=(Source(("show_id",), "list_shows", ("show_id",), "shows[]"),)),
        Tool("move_booking", "Move the booking to another day.", _schema(day=S), move_booking, **WRITE,
             effect=(("day", "date"),)),
        Tool("return_items", "Return items of the order.", _schema(item_ids={"type": "array", "items": S}),
             return_items, **WRITE, effect=(("item_ids", "id"),),
             sources=(Source(("item_ids[]",), "my_order", ("item_id",), "items[]"),)),
        Tool("refund", "Refund an order.", _schema(order_id=S), refund, **WRITE, effect=(("order_id", "id"),)),
        Tool("send_certificate", "Send the user a travel certificate of an amount.", _schema(user_id=S, amount=I),
             send_certificate, **WRITE, effect=(("user_id", "id"), ("amount", "count"))),
    ])
