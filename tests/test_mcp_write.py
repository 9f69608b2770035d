"""Writes are writes wherever they come from (issue 35): a tool an MCP server runs, declared a write on its
MCPServer (kind, effect, sources, and `key`, the server's argument that receives the idempotency key), is
screened, proposed, confirmed and made once, exactly as a local write, in English and Chinese, over the official
SDK's stdio server (tests/orders_mcp/). The model never sees the key's argument; the server's store refuses a write
made twice by it; a list argument is an effect element by element; the audit file records the tool as a write
and --check judges its confirmation."""
import json
import os
import sqlite3

import pytest

from handloop import MCPServer, Source, toolset
from handloop.calls import Call
from conftest import ROOT, read_audit, run_agent, text, tool_calls

pytest.importorskip("mcp")

ORDERS = os.path.join(ROOT, "tests", "orders_mcp", "orders.py")
WORDS = {"en": ("yes", "cancel_order"), "zh": ("确认", "cancel_order")}


def env(tmp_path, **more):
    return {"ORDERS_DB": str(tmp_path / "orders.db"), **{f"ORDERS_{k.upper()}": v for k, v in more.items()}}


def writes(tmp_path):
    if not (tmp_path / "orders.db").exists():
        return []
    with sqlite3.connect(tmp_path / "orders.db") as db:
        return db.execute("SELECT key, tool, order_id, detail FROM writes ORDER BY rowid").fetchall()


def shown(snap, name):
    return next(t["function"]["parameters"] for t in snap["tools"] if t["function"]["name"] == name)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_mcp_write_is_proposed_confirmed_and_made_once_with_the_runs_idempotency_key(tmp_path, language):
    e = env(tmp_path, lang=language)
    out = run_agent("--agent", ORDERS, "--run-id", "m1", cwd=tmp_path, env=e)
    assert out.returncode == 0, out.stderr
    snap = read_audit(tmp_path / "audit", "m1")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation") and writes(tmp_path) == []
    assert snap["agent"]["tools"]["cancel_order"]["kind"] == "write"
    assert snap["agent"]["tools"]["cancel_order"]["effect"] == [["order_id", "id"]]
    assert "idempotency_key" not in shown(snap, "cancel_order")["properties"]              # the loop's, not the model's
    assert "idempotency_key" not in json.dumps(shown(snap, "cancel_order"))
    [proposal] = snap["memory"]["proposals"]
    assert [(c["tool"], c["args"], c["state"]) for c in proposal["calls"]] == \
        [("cancel_order", {"order_id": "W-1001", "reason": "not needed"}, "proposed")]
    done = run_agent("--confirm", "m1", cwd=tmp_path, env=e)
    assert done.returncode == 0, done.stderr
    snap = read_audit(tmp_path / "audit", "m1")
    assert snap["status"] == "done" and [p["state"] for p in snap["memory"]["proposals"]] == ["executed"]
    [(key, tool, order, reason)] = writes(tmp_path)
    made = Call("x", "cancel_order", "", args={"order_id": "W-1001", "reason": "not needed"},
                tool=_declared_write("cancel_order", {"order_id": "id"}))
    assert (tool, order, reason) == ("cancel_order", "W-1001", "not needed")
    assert key == toolset.idempotency_key("m1", made)                                      # the run's key, whole call
    assert run_agent("--confirm", "m1", cwd=tmp_path, env=e).returncode == 2 and len(writes(tmp_path)) == 1
    check = run_agent("--check", "m1", "--strict", "--agent", ORDERS, cwd=tmp_path, env=e)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("language", ["en", "zh"])
def test_two_mcp_writes_in_one_run_a_list_effect_element_by_element_then_a_second_write(tmp_path, language):
    e = env(tmp_path, lang=language, script="two")
    assert run_agent("--agent", ORDERS, "--run-id", "m2", cwd=tmp_path, env=e).returncode == 0
    snap = read_audit(tmp_path / "audit", "m2")
    assert snap["agent"]["tools"]["exchange_items"]["lists"] == ["item_ids"]
    assert shown(snap, "exchange_items")["properties"]["item_ids"] == {"type": "array", "items": {"type": "string"}}
    assert writes(tmp_path) == [] and snap["memory"]["proposals"][0]["calls"][0]["args"]["item_ids"] == ["I-11", "I-12"]
    first = run_agent("--confirm", "m2", cwd=tmp_path, env=e)
    assert first.returncode == 0, first.stderr
    snap = read_audit(tmp_path / "audit", "m2")                 # the exchange ran; the cancel is a new proposal
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert [row[1:3] for row in writes(tmp_path)] == [("exchange_items", "W-1001")]
    assert run_agent("--confirm", "m2", cwd=tmp_path, env=e).returncode == 0
    snap = read_audit(tmp_path / "audit", "m2")
    assert snap["status"] == "done" and [p["state"] for p in snap["memory"]["proposals"]] == ["executed", "executed"]
    assert [row[1:] for row in writes(tmp_path)] == [("exchange_items", "W-1001", "I-11,I-12->I-13"),
                                                     ("cancel_order", "W-1002", "not needed")]
    check = run_agent("--check", "m2", "--strict", "--agent", ORDERS, cwd=tmp_path, env=e)
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_mcp_write_of_an_order_no_read_gave_is_blocked_before_it_becomes_a_proposal(tmp_path):
    assert run_agent("--agent", ORDERS, "--run-id", "m3", cwd=tmp_path, env=env(tmp_path, script="invent")).returncode == 0
    snap = read_audit(tmp_path / "audit", "m3")
    guards = [(t["status"], t.get("guard")) for r in snap["trace"] for t in r["tools"] if t["name"] == "cancel_order"]
    assert guards and set(guards) == {("blocked", "provenance")}
    assert snap["memory"]["proposals"] == [] and writes(tmp_path) == []


OFFERS = ["Order W-1001 (mug, lamp) is delivered. Shall I cancel order W-1001 for you, reason: changed my mind?",
          "Order W-1001 (mug, lamp) is delivered. Shall I cancel order W-1001 for you?"]


@pytest.mark.parametrize("offer", OFFERS)
@pytest.mark.parametrize("obeys", [True, False], ids=["forced", "ignores_forcing"])
def test_a_model_that_proposes_in_words_gets_the_mcp_write_held_and_run_once_confirmed(cli, tmp_path, offer, obeys):
    """Unlike the agent's offline script: the model reads and proposes in words (through the real openai client
    against the loopback endpoint). The words are no proposal: the loop asks for the cancel's call (a forced
    tool_choice naming it, although the offer names the order's items too, which the exchange takes); the call is
    held and shown exactly, the reason the words may or may not have stated included, and one confirmation runs
    it once. A model that ignores the forced choice and offers in words again leaves the run waiting for the
    user's reply with nothing held: the user's yes approves nothing, the model's call after it is held, and only
    the confirmation of that held call runs it."""
    def model(request):
        said = [m for m in request["messages"] if m["role"] == "tool"]
        users = [m["content"] for m in request["messages"] if m["role"] == "user" and m.get("name") != "loop"]
        choice = request.get("tool_choice")
        forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        if not said:
            return tool_calls(("get_order", {"order_id": "W-1001"}))
        if len(said) == 1 and ((obeys and forced == "cancel_order") or users[-1] == "yes"):
            return tool_calls(("cancel_order", {"order_id": "W-1001", "reason": "changed my mind"}, "c9"))
        if len(said) == 1:
            return text(offer)
        return text("Order W-1001 is cancelled.")
    run = cli(model)
    assert run("--agent", ORDERS, "--run-id", "w1", **env(tmp_path)).returncode == 0
    snap = read_audit(tmp_path / "audit", "w1")
    if not obeys:                                  # words again: nothing held, the user's yes is an ordinary reply
        assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_reply") and writes(tmp_path) == []
        assert snap["memory"]["proposals"] == []
        replied = run("--reply", "yes", "w1", **env(tmp_path))
        assert replied.returncode == 0, replied.stderr
        snap = read_audit(tmp_path / "audit", "w1")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation") and writes(tmp_path) == []
    [record] = snap["memory"]["proposals"]
    assert [(c["tool"], c["args"], c["state"]) for c in record["calls"]] == \
        [("cancel_order", {"order_id": "W-1001", "reason": "changed my mind"}, "proposed")]
    done = run("--confirm", "w1", **env(tmp_path))
    assert done.returncode == 0, done.stderr
    snap = read_audit(tmp_path / "audit", "w1")
    assert snap["status"] == "done" and [p["state"] for p in snap["memory"]["proposals"]] == ["executed"]
    assert [row[1:] for row in writes(tmp_path)] == [("cancel_order", "W-1001", "changed my mind")]
    assert run("--confirm", "w1", **env(tmp_path)).returncode == 2 and len(writes(tmp_path)) == 1
    check = run("--check", "w1", "--strict", "--agent", ORDERS, **env(tmp_path))
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_server_whose_schema_lacks_the_declared_key_argument_is_refused_in_one_line(tmp_path):
    out = run_agent("--agent", ORDERS, "--run-id", "m4", cwd=tmp_path, env=env(tmp_path, key="request_key"))
    assert out.returncode == 2 and "orders" in out.stderr and "request_key" in out.stderr
    assert "Traceback" not in out.stderr and writes(tmp_path) == []
    assert not (tmp_path / "audit" / "run-m4.json").exists()


@pytest.mark.parametrize("rule,wrong", [
    ({"kind": "state"}, "not one of read, write"), ({"kind": "write"}, "a write must declare effect"),
    ({"key": "k"}, "key is for a write"), ({"effect": {"x": "id"}}, "effect is for a write"),
    ({"kind": "write", "effect": {"x": "idd"}}, "effect entry"),
    ({"kind": "write", "effect": {"x": "id"}, "key": "x"}, "filled by the loop"),
    ({"kind": "write", "effect": {"x": "id"}, "key": "a b"}, "must name the server's argument"),
    ({"kind": "write", "effect": {"x": "id"}, "reconcile": "find"}, "reconcile must be callable"),
    ({"kind": "write", "effect": {"x": "id"}, "rules": ["r"]}, "must be a Rule"),
])
def test_a_mistaken_mcp_write_declaration_is_a_declaration_error(rule, wrong):
    with pytest.raises(ValueError, match=wrong):
        MCPServer("s", command=["x"], tools={"t": {"fields": ("a",), **rule}})


def test_an_mcp_write_whose_effect_argument_the_server_lacks_cannot_be_used(tmp_path):
    server = MCPServer("s", command=["x"], tools={"t": {"fields": ("a",), "kind": "write", "effect": {"nope": "id"}}})
    with pytest.raises(Exception, match=r"t\(nope\)"):
        toolset.allowed_specs({"t": {"inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}}, server)
    source = Source.of("t", "a")
    ok = MCPServer("s", command=["x"], tools={"t": {"fields": ("a",), "kind": "write", "effect": {"a": "id"},
                                                    "key": "k", "sources": [source]}})
    listed = {"t": {"inputSchema": {"type": "object", "required": ["a", "k"],
                                    "properties": {"a": {"type": "string"}, "k": {"type": "string"}}}}}
    spec = toolset.allowed_specs(listed, ok)["t"]["parameters"]
    assert spec == {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert toolset.allowed_specs({"t": {"inputSchema": spec}}, ok, listed=False)["t"]["parameters"] == spec


def _declared_write(name, effect):
    from handloop import Tool
    return Tool(name, "", {"type": "object", "properties": {k: {"type": "string"} for k in (*effect, "reason")}},
                fn=None, kind="write", effect=effect)
