"""What the user confirms is exactly what runs (issue 46): a proposal is a set of exact held calls, a confirmation
approves them once each, and no reading of words decides what runs.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless scripted
model that behaves unlike the demo: it offers in words, it names other numbers, dates and items than the call it
makes, it calls another write after the user said yes, and it may ignore a forced tool choice. English and Chinese.
Assertions read the writes the tools really made (SQLite), the audit file's held calls, and --check --strict.
"""
import importlib.util
import json
import os
import sqlite3

import pytest

from conftest import read_audit, store_rows
import handloop

HERE = os.path.dirname(os.path.abspath(__file__))
SHOP = open(os.path.join(HERE, "shop_agent.py"), encoding="utf-8").read()


def _call(name, args, call_id=None):
    return {"content": None, "tool_calls": [{"id": call_id or f"call_{name}", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


def shop_model(offer, shown, late=None, obeys=True):
    """A stateless model: it reads the order and the shows, then answers `offer` in words. Asked for a call (a
    forced tool choice) it makes `shown` (when it `obeys`; else it says its offer again). Once the user replied (or
    it sees a write made) it calls `late` once (another write, or other values), then answers."""
    def respond(request):
        messages, calls, ok = request.get("messages") or [], {}, set()
        for m in messages:
            calls.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
            if m["role"] == "tool" and "error" not in json.loads(m["content"]):
                ok.add(calls.get(m["tool_call_id"]))
        if "my_order" not in ok:
            return {"content": None, "tool_calls": [
                {"id": "call_order", "type": "function", "function": {"name": "my_order", "arguments": "{}"}},
                {"id": "call_shows", "type": "function", "function": {"name": "list_shows", "arguments": "{}"}}]}
        choice = request.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        if forced and obeys:
            return _call(shown[0], shown[1], "call_shown")
        users = [i for i, m in enumerate(messages) if m["role"] == "user" and m.get("name") != "loop"]
        wrote = any(m["role"] == "tool" and '"done"' in m["content"] for m in messages)
        replied = len(users) > 1 or wrote
        late_made = any(c.get("id") == "call_late" for m in messages for c in m.get("tool_calls") or [])
        if replied and late and not late_made:
            return _call(late[0], late[1], "call_late")
        if replied:
            return {"content": "OK."}
        return {"content": offer}
    return respond


@pytest.fixture
def shop(agent_files, tmp_path):
    def make(lang, *model_args, **model_kwargs):
        path, run = agent_files(shop_model(*model_args, **model_kwargs), "shop_agent.py", SHOP)
        os.environ["SHOP_LANG"] = lang           # the forked CLI process reads it
        first = run("--agent", str(path), "--run-id", "r")
        assert first.returncode == 0, first.stdout + first.stderr
        return run
    yield make
    os.environ.pop("SHOP_LANG", None)


def writes(tmp_path):
    rows = store_rows(tmp_path, "shop.db", "SELECT tool, args FROM writes ORDER BY tool, args")
    return [(tool, json.loads(args)) for tool, args in rows]


def audit(tmp_path):
    return read_audit(tmp_path / "audit", "r")


def held_calls(data):
    return [(c["tool"], c["args"], c["state"]) for p in data["memory"]["proposals"] for c in p["calls"]]


# Finding 1: words name other values than the call; finding 3: after the yes, another tool with a value the words named.
WRONG_VALUES = [
    ("en", "Hamlet (S-1) has 3 seats left. Shall I book 2 seats for Hamlet (S-1)?",
     ("book_seats", {"show_id": "S-1", "seats": 2}), ("book_seats", {"show_id": "S-1", "seats": 3})),
    ("zh", "《哈姆雷特》（S-1）还剩 3 个座位。要我为您订 2 个座位吗？",
     ("book_seats", {"show_id": "S-1", "seats": 2}), ("book_seats", {"show_id": "S-1", "seats": 3})),
    ("en", "Your booking is on 2026-12-01. Shall I move it to 2026-12-03?",
     ("move_booking", {"day": "2026-12-03"}), ("move_booking", {"day": "2026-12-01"})),
    ("en", "Shall I return the lamp (I-1)? The mug (I-2) stays with you.",
     ("return_items", {"item_ids": ["I-1"]}), ("return_items", {"item_ids": ["I-1", "I-2"]})),
    ("zh", "要我为您退回台灯（I-1）吗？杯子（I-2）留给您。",
     ("return_items", {"item_ids": ["I-1"]}), ("return_items", {"item_ids": ["I-1", "I-2"]})),
    ("en", "Your order A-1 cost $348. Shall I refund order A-1?",
     ("refund", {"order_id": "A-1"}), ("send_certificate", {"user_id": "u-7", "amount": 348})),
]


@pytest.mark.parametrize("lang, offer, shown, late", WRONG_VALUES)
def test_an_offer_in_words_becomes_the_exact_call_and_only_that_call_runs(shop, tmp_path, lang, offer, shown, late):
    run = shop(lang, offer, shown, late)
    data = audit(tmp_path)
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation") and writes(tmp_path) == []
    assert held_calls(data) == [(shown[0], shown[1], "proposed")]       # the user is shown the exact call
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert writes(tmp_path) == [shown]                                   # exactly what was shown, once
    data = audit(tmp_path)
    assert held_calls(data) == [(shown[0], shown[1], "executed"), (late[0], late[1], "proposed")]
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")   # the other call waits
    check = run("--check", "r")
    assert check.returncode == 0, check.stdout


# Finding 2: words that offer nothing, with a server that ignores the forced tool choice; then "yes".
NO_OFFER = [
    ("en", "I won't refund order A-1 yet. Shall I check the shipping status first?"),
    ("en", "Once it comes back I can refund order A-1. Shall I e-mail you a return label now?"),
    ("en", "You wrote: \"refund order A-1\". Before that, shall I check where the parcel is?"),
    ("zh", "先不要退款，我先帮您查一下物流，可以吗？"),
]


@pytest.mark.parametrize("lang, offer", NO_OFFER)
def test_a_yes_to_words_runs_nothing_the_next_write_is_held(shop, tmp_path, lang, offer):
    run = shop(lang, offer, ("refund", {"order_id": "A-1"}), late=("refund", {"order_id": "A-1"}), obeys=False)
    data = audit(tmp_path)
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_reply") and data["memory"]["proposals"] == []
    done = run("--confirm", "r")              # the user answers "yes" to the words: an ordinary reply
    assert done.returncode == 0, done.stdout + done.stderr
    data = audit(tmp_path)
    assert writes(tmp_path) == []                                          # nothing ran on it
    assert held_calls(data) == [("refund", {"order_id": "A-1"}, "proposed")]
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")


def _bills_model(request):
    """Proposes three refunds together (one of them, A-9, fails), then answers."""
    messages = request.get("messages") or []
    if not any(m.get("tool_calls") for m in messages):
        return {"content": None, "tool_calls": [
            {"id": f"call_{o}", "type": "function", "function": {"name": "refund", "arguments": json.dumps({"order_id": o})}}
            for o in ("A-1", "A-9", "A-3")]}
    return {"content": "Done."}


@pytest.mark.parametrize("flags, ran, states", [
    (["--approve", "1,3"], [("refund", {"order_id": "A-1"}), ("refund", {"order_id": "A-3"})],
     ["executed", "declined", "executed"]),
    (["--decline", "1"], [("refund", {"order_id": "A-3"})], ["declined", "failed", "executed"]),
    ([], [("refund", {"order_id": "A-1"}), ("refund", {"order_id": "A-3"})], ["executed", "failed", "executed"]),
])
def test_a_batch_is_decided_call_by_call(agent_files, tmp_path, flags, ran, states):
    path, run = agent_files(_bills_model, "shop_agent.py", SHOP)
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    data = audit(tmp_path)
    assert [c["n"] for c in data["memory"]["proposals"][0]["calls"]] == [1, 2, 3]
    done = run("--confirm", "r", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert writes(tmp_path) == ran
    data = audit(tmp_path)
    assert [c["state"] for c in data["memory"]["proposals"][0]["calls"]] == states
    assert data["status"] == "done"
    check = run("--check", "r")
    assert check.returncode == 0, check.stdout


def test_a_decision_naming_calls_that_do_not_wait_is_refused(agent_files, tmp_path):
    path, run = agent_files(_bills_model, "shop_agent.py", SHOP)
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    out = run("--confirm", "r", "--approve", "4")
    assert out.returncode == 2 and "#4" in out.stderr and "Traceback" not in out.stderr
    assert run("--confirm", "r", "--approve", "x").returncode == 2
    assert run("--reply", "yes", "r").returncode == 2          # a confirm reply cannot go as --reply while calls wait
    assert writes(tmp_path) == [] and audit(tmp_path)["status"] == "suspended"


def test_the_library_confirm_names_the_proposal_the_user_saw(tmp_path, monkeypatch):
    """A script's confirm naming a proposal that was replaced (the user never saw the new one) is Refused; naming the
    one that waits, it runs exactly that call."""
    monkeypatch.setenv("SHOP_LANG", "en")
    monkeypatch.setenv("AGENT_AUDIT_DIR", str(tmp_path))
    spec = importlib.util.spec_from_file_location("shop_agent_lib", os.path.join(HERE, "shop_agent.py"))
    shop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shop)
    asked = []

    def model(messages, tools, final=False, **_):
        asked.append(messages)
        if any(m["role"] == "tool" and '"done"' in m["content"] for m in messages):
            return handloop.Reply.of("Done.")
        users = [m for m in messages if m["role"] == "user" and m.get("name") != "loop"]
        order = "A-1" if len(users) == 1 else "A-3"
        return handloop.Reply.of({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{len(asked)}", "type": "function",
             "function": {"name": "refund", "arguments": json.dumps({"order_id": order})}}]})

    r, ts = handloop.start(shop.AGENT, "lib", audit_dir=str(tmp_path))
    r = handloop.run(r, model, ts)
    ts.close()
    assert r.proposal["number"] == 1 and r.proposal["calls"][0]["args"] == {"order_id": "A-1"}
    r, ts = handloop.reply(shop.AGENT, "lib", "not that one, the other order", audit_dir=str(tmp_path))
    r = handloop.run(r, model, ts)
    ts.close()
    assert r.proposal["number"] == 2 and r.proposal["calls"][0]["n"] == 2
    with pytest.raises(handloop.Refused):
        handloop.confirm(shop.AGENT, "lib", audit_dir=str(tmp_path), proposal=1)
    with pytest.raises(handloop.Refused):
        handloop.confirm(shop.AGENT, "lib", audit_dir=str(tmp_path), approve=[1])
    r, ts = handloop.confirm(shop.AGENT, "lib", audit_dir=str(tmp_path), proposal=2, approve=[2])
    r = handloop.run(r, model, ts)
    ts.close()
    assert r.status == "done"
    with sqlite3.connect(tmp_path / "shop.db") as db:
        done = [(t, json.loads(a)) for t, a in db.execute("SELECT tool, args FROM writes")]
    assert done == [("refund", {"order_id": "A-3"})]


def test_an_argument_named_like_a_field_of_the_proposal_is_shown_and_runs_as_held(tmp_path, capsys):
    """An argument called `tool` (or `n`, `state`, `why`) is an argument like any other: the held call keeps the
    arguments apart from its own fields, the printout shows each with its value, and the loop runs it exactly."""
    rented = []

    def rent(tool: str, days: int, n: int, idempotency_key: str) -> dict:
        """Rent a tool for some days (a write)."""
        rented.append((tool, days, n))
        return {"rented": tool, "days": days}
    agent = handloop.Agent("rental", "You rent tools.", [
        handloop.Tool.from_function(rent, kind="write", takes=("idempotency_key",),
                                    effect={"tool": "id", "days": "count"})], language="en", planning=False,
        goal="Rent me a chainsaw for two days.")
    call = {"id": "c1", "type": "function",
            "function": {"name": "rent", "arguments": json.dumps({"tool": "chainsaw", "days": 2, "n": 7})}}

    def model(messages, tools, final=False, **_):
        done = any(m["role"] == "tool" and '"rented"' in m["content"] for m in messages)
        return handloop.Reply.of("Done." if done else {"role": "assistant", "content": None, "tool_calls": [call]})
    r, ts = handloop.start(agent, "t", audit_dir=str(tmp_path))
    r = handloop.run(r, model, ts)
    ts.close()
    held = r.proposal["calls"][0]
    assert (held["tool"], held["args"], held["n"]) == ("rent", {"tool": "chainsaw", "days": 2, "n": 7}, 1)
    from handloop.confirmation import shown
    lines = shown.call_lines(held, r.say)
    assert 'tool: "chainsaw"' in "\n".join(lines) and "n: 7" in "\n".join(lines)
    r, ts = handloop.confirm(agent, "t", audit_dir=str(tmp_path))
    r = handloop.run(r, model, ts)
    ts.close()
    assert r.status == "done" and rented == [("chainsaw", 2, 7)]
