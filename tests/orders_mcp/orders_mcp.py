"""A shop's order server, written with the official MCP SDK (test-only; the project never imports `mcp`), whose
writes keep their own store: `get_order(order_id)` gives {"order": {"order_id", "status", "items": [{"item_id",
"name", "price"}, ...], "internal": {...}}}; `cancel_order(order_id, reason, idempotency_key)` and
`exchange_items(order_id, item_ids, new_item_ids, idempotency_key)` write into orders.db (ORDERS_DB), whose UNIQUE
key refuses a write made twice (the same key gives back the first receipt). `python orders_mcp.py` serves stdio."""
import os
import sqlite3

from mcp.server.mcpserver import MCPServer

app = MCPServer("orders")
ORDERS = {"W-1001": [("I-11", "mug", 12.5), ("I-12", "lamp", 40.0)], "W-1002": [("I-21", "desk", 199.0)]}


def _store():
    db = sqlite3.connect(os.environ.get("ORDERS_DB") or "orders.db", timeout=5)
    db.execute("CREATE TABLE IF NOT EXISTS writes (key TEXT PRIMARY KEY, tool TEXT, order_id TEXT, detail TEXT)")
    return db


def _write(key, tool, order_id, detail):
    with _store() as db:
        db.execute("INSERT OR IGNORE INTO writes VALUES (?, ?, ?, ?)", (key, tool, order_id, detail))
        return db.execute("SELECT detail FROM writes WHERE key = ?", (key,)).fetchone()[0]


@app.tool()
def get_order(order_id: str) -> dict:
    """An order by its id, with its items."""
    if order_id not in ORDERS:
        raise ValueError(f"no order {order_id}")
    with _store() as db:
        done = db.execute("SELECT tool FROM writes WHERE order_id = ?", (order_id,)).fetchall()
    status = "cancelled" if ("cancel_order",) in done else "delivered"
    return {"order": {"order_id": order_id, "status": status, "internal": {"warehouse": "B-7"},
                      "items": [{"item_id": i, "name": n, "price": p} for i, n, p in ORDERS[order_id]]}}


@app.tool()
def cancel_order(order_id: str, reason: str, idempotency_key: str) -> dict:
    """Cancel an order (a write)."""
    if order_id not in ORDERS:
        raise ValueError(f"no order {order_id}")
    return {"order_id": order_id, "status": "cancelled", "reason": _write(idempotency_key, "cancel_order", order_id, reason)}


@app.tool()
def exchange_items(order_id: str, item_ids: list[str], new_item_ids: list[str], idempotency_key: str) -> dict:
    """Exchange items of an order for others (a write)."""
    if order_id not in ORDERS or not set(item_ids) <= {i for i, _, _ in ORDERS[order_id]}:
        raise ValueError("those items are not in that order")
    detail = _write(idempotency_key, "exchange_items", order_id, ",".join(item_ids) + "->" + ",".join(new_item_ids))
    return {"order_id": order_id, "status": "exchange requested", "detail": detail}


if __name__ == "__main__":
    app.run()
