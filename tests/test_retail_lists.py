"""The data shapes of real tasks, as τ²-bench's retail domain has them: a write whose arguments are lists of ids
(`exchange_items(order_id, item_ids, new_item_ids, payment_method_id)`), each element an effect shown and stated on
its own and sourced from a record of a read (`item_ids[]` from an order's `items[]`, `new_item_ids[]` from a
product's variants keyed by id, `variants.*`), a payment method that may be the order's original one OR one the user
holds (`Source.any`, the second keyed by id with the key as the field `*`), reads and writes that return a list and a
string, and a second write in the same run (two confirmations).

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless scripted
model (it reads only the conversation), an agent file as a user writes one, English and Chinese. Assertions read the
store, the audit file and `--check --strict` (and a forged audit file whose item id was never sourced fails it).
"""
import json

import pytest

from conftest import read_audit, store_rows

AGENT_FILE = '''
import json
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

ORDERS = {{
    "#W1": {{"order_id": "#W1", "status": "delivered", "payment_history": [{{"payment_method_id": "card_1", "amount": 80}}],
            "items": [{{"item_id": "1151293680", "name": "Water Bottle", "product_id": "P1"}},
                      {{"item_id": "4983901480", "name": "Desk Lamp", "product_id": "P2"}},
                      {{"item_id": "5555555555", "name": "Notebook", "product_id": "P3"}}]}},
    "#W2": {{"order_id": "#W2", "status": "delivered", "payment_history": [{{"payment_method_id": "paypal_3", "amount": 20}}],
            "items": [{{"item_id": "2222222222", "name": "Phone Case", "product_id": "P4"}}]}}}}
PRODUCTS = {{"P1": {{"1151293680": {{"item_id": "1151293680", "options": {{"capacity": "500ml"}}}},
                    "7706410293": {{"item_id": "7706410293", "options": {{"capacity": "1000ml"}}}}}},
            "P2": {{"4983901480": {{"item_id": "4983901480", "options": {{"color": "black"}}}},
                    "7747408585": {{"item_id": "7747408585", "options": {{"color": "white"}}}}}}}}
S = {{"type": "string"}}
IDS = {{"type": "array", "items": {{"type": "string"}}}}


def _store(kind, key, value):
    with sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR", "audit"), "shop.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS done (key TEXT PRIMARY KEY, kind TEXT, value TEXT)")
        db.execute("INSERT OR IGNORE INTO done VALUES (?, ?, ?)", (key, kind, json.dumps(value)))


def list_orders():
    return [{{"order_id": o["order_id"], "status": o["status"]}} for o in ORDERS.values()]      # a list, no object


def get_order(order_id):
    if order_id not in ORDERS:
        raise ToolError("no order " + order_id)
    return ORDERS[order_id]


def get_user():
    return {{"user_id": "yusuf", "payment_methods": {{"card_1": {{"source": "credit_card", "last_four": "1234"}},
                                                    "gift_7": {{"source": "gift_card", "balance": 60}}}}}}


def get_product(product_id):
    return {{"product_id": product_id, "variants": PRODUCTS.get(product_id, {{}})}}


def exchange_items(order_id, item_ids, new_item_ids, payment_method_id, idempotency_key):
    _store("exchange", idempotency_key, [order_id, item_ids, new_item_ids, payment_method_id])
    return {{"order_id": order_id, "status": "exchange requested", "exchanged": item_ids, "for": new_item_ids}}


def return_items(order_id, item_ids, payment_method_id, idempotency_key):
    _store("return", idempotency_key, [order_id, item_ids, payment_method_id])
    return "return requested for " + str(len(item_ids)) + " item(s) of " + order_id      # a string, no object


PAYMENT = Source.any(Source(("payment_method_id",), "get_order", ("payment_method_id",), "payment_history[]"),
                     Source(("payment_method_id",), "get_user", ("*",), "payment_methods.*"))
AGENT = Agent(
    name="shop", language={language!r}, planning=False, confirm={confirm!r},
    instructions="You help a customer exchange and return delivered items. Propose each change; act once confirmed.",
    goal={goal!r},
    tools=[Tool("list_orders", "The user's orders.", {{"type": "object", "properties": {{}}}}, list_orders),
           Tool("get_order", "One order.", {{"type": "object", "required": ["order_id"], "properties": {{"order_id": S}}}},
                get_order, sources=(Source(("order_id",), "list_orders", ("order_id",), "[]"),)),
           Tool("get_user", "The user and their payment methods.", {{"type": "object", "properties": {{}}}}, get_user),
           Tool("get_product", "A product and its variants.", {{"type": "object", "required": ["product_id"],
                "properties": {{"product_id": S}}}}, get_product),
           Tool("exchange_items", "Exchange delivered items for other variants (a write).",
                {{"type": "object", "required": ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
                 "properties": {{"order_id": S, "item_ids": IDS, "new_item_ids": IDS, "payment_method_id": S}}}},
                exchange_items, kind="write", takes=("idempotency_key",),
                effect=(("order_id", "id"), ("item_ids", "id"), ("new_item_ids", "id"), ("payment_method_id", "id")),
                sources=(Source(("order_id",), "get_order", ("order_id",)),
                         Source(("item_ids[]",), "get_order", ("item_id",), "items[]"),
                         Source(("new_item_ids[]",), "get_product", ("item_id",), "variants.*"), PAYMENT)),
           Tool("return_items", "Return delivered items (a write).",
                {{"type": "object", "required": ["order_id", "item_ids", "payment_method_id"],
                 "properties": {{"order_id": S, "item_ids": IDS, "payment_method_id": S}}}},
                return_items, kind="write", takes=("idempotency_key",),
                effect=(("order_id", "id"), ("item_ids", "id"), ("payment_method_id", "id")),
                sources=(Source(("order_id",), "get_order", ("order_id",)),
                         Source(("item_ids[]",), "get_order", ("item_id",), "items[]"), PAYMENT))])
'''
LANGUAGES = {"en": ("confirm",), "zh": ("确认",)}
GOALS = {"en": "Exchange my water bottle and desk lamp in #W1 for the bigger and the white one, then return the phone "
               "case of #W2.",
         "zh": "把 #W1 里的水瓶和台灯换成大号和白色的，然后退掉 #W2 的手机壳。"}
OLD, NEW = ["1151293680", "4983901480"], ["7706410293", "7747408585"]
OFFERS = {
    "en": ("I can exchange items {old} of order #W1 for {new}, with the difference settled on {pay}. Shall I go ahead?",
           "The exchange is requested. I can also return item 2222222222 of order #W2, refunded to {pay}. Shall I?"),
    "zh": ("可以把订单 #W1 的商品 {old} 换成 {new}，差价用 {pay} 结算。要我办理吗？",
           "换货已提交。我还可以退掉订单 #W2 的商品 2222222222，退款到 {pay}。要办理吗？")}


def _call(name, args, cid):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def shop_model(language, words, pay="card_1", refund="paypal_3", written=None, obeys=True):
    """A stateless model: it lists the orders, reads both orders, the user and the two products in one turn, then
    exchanges the two items (proposed in words first, or called at once: `words`), then returns the phone case the
    same way, then says it is done. Asked for a write's call (a forced tool_choice), it makes that call.
    `pay`/`refund`: the payment methods it uses; `written`: the exchange's arguments it sends instead of what it
    proposed; `obeys`: False, it ignores a forced tool_choice (a server that does not enforce it)."""
    offer_exchange, offer_return = OFFERS[language]

    def respond(request):
        forced = request.get("tool_choice") if obeys else None
        forced = forced["function"]["name"] if isinstance(forced, dict) else forced
        names, ok, blocked, texts, users = {}, set(), {}, [], 0
        for m in request.get("messages") or []:
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m["role"] == "tool":
                result = json.loads(m["content"])
                if "error" not in result:
                    ok.add(names[m["tool_call_id"]])
                else:
                    blocked[names[m["tool_call_id"]]] = result.get("blocked_by")
            elif m["role"] == "assistant" and m.get("content"):
                texts.append((m["content"], users))
            elif m["role"] == "user" and m.get("name") != "loop":
                users += 1
        if "list_orders" not in ok:
            return {"content": None, "tool_calls": [_call("list_orders", {}, "c_list")]}
        if "get_order" not in ok:
            return {"content": None, "tool_calls": [
                _call("get_order", {"order_id": "#W1"}, "c_o1"), _call("get_order", {"order_id": "#W2"}, "c_o2"),
                _call("get_user", {}, "c_user"), _call("get_product", {"product_id": "P1"}, "c_p1"),
                _call("get_product", {"product_id": "P2"}, "c_p2")]}
        steps = [("exchange_items", offer_exchange.format(old=" and ".join(OLD) if language == "en" else "、".join(OLD),
                                                          new=" and ".join(NEW) if language == "en" else "、".join(NEW),
                                                          pay=pay),
                  written or {"order_id": "#W1", "item_ids": OLD, "new_item_ids": NEW, "payment_method_id": pay}),
                 ("return_items", offer_return.format(pay=refund),
                  {"order_id": "#W2", "item_ids": ["2222222222"], "payment_method_id": refund})]
        for tool, offer, args in steps:
            if tool in ok:
                continue
            if blocked.get(tool) == "provenance":
                return {"content": "Which payment method should I use?" if language == "en" else "请问用哪种支付方式？"}
            if forced in (tool, "required"):         # asked for this write's call (or any call): it makes it
                return {"content": None, "tool_calls": [_call(tool, args, f"c_{tool}_{users}")]}
            asked = [seen for text, seen in texts if text == offer]
            if words and not (asked and users > asked[-1]):
                return {"content": offer}
            return {"content": None, "tool_calls": [_call(tool, args, f"c_{tool}_{users}")]}
        return {"content": "All done." if language == "en" else "都办好了。"}
    return respond


@pytest.fixture
def shop(agent_files):
    def make(language, words=True, **more):
        path, run = agent_files(shop_model(language, words, **more), "shop_agent.py", AGENT_FILE.format(
            language=language, confirm=LANGUAGES[language], goal=GOALS[language]))
        first = run("--agent", str(path), "--run-id", "r")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "Traceback" not in first.stderr
        run.first = first                  # what the first run printed
        return run
    return make


def stored(tmp_path):
    return [(kind, json.loads(value))
            for kind, value in store_rows(tmp_path, "shop.db", "SELECT kind, value FROM done ORDER BY rowid")]


def state(tmp_path):
    data = read_audit(tmp_path / "audit", "r")
    return data["status"], data["reason"], data


def confirmed(run):
    out = run("--confirm", "r")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
    return out


def verdicts(run, path="r"):
    out = run("--check", path, "--json")
    return {v["id"]: v["verdict"] for v in json.loads(out.stdout)["files"][0]["checks"]}, out


@pytest.mark.parametrize("language", sorted(LANGUAGES))
@pytest.mark.parametrize("words", [True, False], ids=["in-words", "blocked"])
def test_an_exchange_of_two_items_then_a_return_two_confirmations(shop, tmp_path, language, words):
    run = shop(language, words=words)
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation"), data["messages"][-1]
    shown = data["memory"]["proposal"]              # the held write's proposal: every item, each on its own
    assert shown["tool"] == "exchange_items" and (shown["args"]["item_ids"], shown["args"]["new_item_ids"]) == (OLD, NEW)
    assert all(f'item_ids[{i}]: "{item}"' in run.first.stdout for i, item in enumerate(OLD, 1)), run.first.stdout
    assert stored(tmp_path) == []
    out = confirmed(run)
    assert 'item_ids[1]: "2222222222"' in out.stdout, out.stdout        # the second proposal, its one item
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")      # the second write waits for its own yes
    assert stored(tmp_path) == [("exchange", ["#W1", OLD, NEW, "card_1"])]
    confirmed(run)
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("done", "final_answer")
    assert stored(tmp_path) == [("exchange", ["#W1", OLD, NEW, "card_1"]),
                                ("return", ["#W2", ["2222222222"], "paypal_3"])]
    assert [p["state"] for p in data["memory"]["proposals"]][-2:] == ["executed", "executed"]
    writes = data["memory"]["writes"]
    assert writes[1]["receipt"] == "return requested for 1 item(s) of #W2"    # kept as the tool returned it
    tool_message = next(m for m in data["messages"] if m["role"] == "tool" and m["tool_call_id"] == "c_list")
    assert json.loads(tool_message["content"]) == {"value": [{"order_id": "#W1", "status": "delivered"},
                                                             {"order_id": "#W2", "status": "delivered"}]}
    assert data["agent"]["tools"]["exchange_items"]["lists"] == ["item_ids", "new_item_ids"]
    assert "any" in data["agent"]["tools"]["exchange_items"]["sources"][3]
    strict = run("--check", "r", "--strict")
    assert strict.returncode == 0, strict.stdout + strict.stderr


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_model_that_ignores_the_forced_call_waits_for_the_user_and_a_yes_runs_nothing(shop, tmp_path, language):
    """A server that does not enforce tool_choice: each offer in words leaves the run waiting for a reply with
    nothing held (the second write's too, after the first one ran); the user's confirm word then is an ordinary
    reply, the model's call is held and shown, and only a confirmation of it runs it."""
    run = shop(language, words=True, obeys=False)
    for written in ([], [("exchange", ["#W1", OLD, NEW, "card_1"])]):
        status, reason, data = state(tmp_path)
        assert (status, reason) == ("suspended", "awaiting_reply"), data["messages"][-1]
        assert stored(tmp_path) == written and data["memory"]["proposal"] is None
        out = run("--reply", LANGUAGES[language][0], "r")
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
        status, reason, data = state(tmp_path)
        assert (status, reason, stored(tmp_path)) == ("suspended", "awaiting_confirmation", written)
        confirmed(run)
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("done", "final_answer") and len(stored(tmp_path)) == 2


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_payment_method_from_either_alternative_holds_and_from_neither_is_refused(shop, tmp_path, language):
    run = shop(language, words=False, pay="gift_7")          # not the order's own: a method the user holds (its key)
    confirmed(run)
    assert stored(tmp_path) == [("exchange", ["#W1", OLD, NEW, "gift_7"])]
    confirmed(run)
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("done", "final_answer")
    assert run("--check", "r", "--strict").returncode == 0


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_payment_method_from_neither_alternative_never_runs(shop, tmp_path, language):
    shop(language, words=False, pay="card_999")
    status, reason, data = state(tmp_path)
    assert stored(tmp_path) == [] and data["memory"]["proposals"] == []
    refused = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool" and "exchange" in m["tool_call_id"]]
    assert refused and refused[0]["blocked_by"] == "provenance" and "card_999" in refused[0]["error"]
    assert "get_order" in refused[0]["error"] and "get_user" in refused[0]["error"]


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_an_item_the_words_did_not_name_is_shown_before_anything_runs(shop, tmp_path, language):
    extra = {"order_id": "#W1", "item_ids": OLD + ["5555555555"], "new_item_ids": NEW + ["7706410293"],
             "payment_method_id": "card_1"}
    run = shop(language, words=True, written=extra)           # the words never name the notebook; the call does
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation") and stored(tmp_path) == []
    shown = data["memory"]["proposal"]                         # what waits is the call, not the words
    assert (shown["tool"], shown["args"]["item_ids"]) == ("exchange_items", extra["item_ids"])
    assert 'item_ids[3]: "5555555555"' in run.first.stdout, run.first.stdout
    blocked = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool"
               and m["tool_call_id"].startswith("c_exchange")]
    assert blocked and blocked[0]["blocked_by"] == "unconfirmed_write"
    assert blocked[0]["proposal"]["args"]["item_ids"] == extra["item_ids"]
    out = run("--confirm", "r", "--decline", str(shown["n"]))  # the user declines what they were shown
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
    status, reason, data = state(tmp_path)
    assert stored(tmp_path) == [] and data["memory"]["writes"] == []
    assert data["memory"]["proposals"][0]["state"] == "declined"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_check_strict_fails_a_forged_run_whose_item_id_was_never_sourced(shop, tmp_path, language):
    run = shop(language, words=False)
    confirmed(run)
    confirmed(run)
    assert run("--check", "r", "--strict").returncode == 0
    data = read_audit(tmp_path / "audit", "r")
    for message in data["messages"]:                 # the exchange as it ran, one of its items swapped for another
        for call in message.get("tool_calls") or []:
            if call["function"]["name"] == "exchange_items":
                call["function"]["arguments"] = call["function"]["arguments"].replace(OLD[1], "9999999999")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    found, out = verdicts(run, str(forged))
    assert found["provenance"] == "fail", out.stdout
    assert "9999999999" in out.stdout and "item_ids[2]" in out.stdout
    assert run("--check", str(forged), "--strict").returncode == 1
