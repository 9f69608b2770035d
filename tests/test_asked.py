"""Only asked work is pushed: a run whose task asks nothing to be written ends `done` after its answer; an answer is
an offer only when it proposes the write (a mention of it, or how the user may make it, is none); the loop forces a
write only when the run's plan names it or the user's own messages ask for it. Found on τ²-bench (29 of its 164
tasks need no write): an answer that mentioned a write was taken for an offer and the run waited for a confirmation
of nothing, and a no-planning agent was nudged to a write after answering a question.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless
scripted model (it reads only the conversation and obeys a forced tool_choice), an agent file as a user writes one,
English and Chinese, with and without planning. Assertions read states, the store and the audit file, and --check
judges every run.
"""
import json

import pytest

from conftest import read_audit, store_rows
from handloop.texts import words

AGENT_FILE = '''
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

ORDERS = {{"W1": {{"order_id": "W1", "status": "pending"}}}}


def get_order(order_id):
    if order_id not in ORDERS:
        raise ToolError("no order " + order_id)
    return ORDERS[order_id]


def cancel_order(order_id, idempotency_key):
    with sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR", "audit"), "orders.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS cancelled (key TEXT PRIMARY KEY, order_id TEXT)")
        db.execute("INSERT OR IGNORE INTO cancelled VALUES (?, ?)", (idempotency_key, order_id))
    return {{"cancelled": order_id}}


ID = {{"type": "object", "required": ["order_id"], "properties": {{"order_id": {{"type": "string"}}}}}}
AGENT = Agent(
    name="orders", language={language!r}, planning={planning!r}, confirm={confirm!r},
    instructions="You help with orders. Look them up; propose a change and wait for the user's confirmation.",
    goal={goal!r},
    tools=[Tool("get_order", "Look an order up by its id.", ID, get_order),
           Tool("cancel_order", "Cancel a pending order (a write).", ID, cancel_order, kind="write",
                takes=("idempotency_key",), requires=("get_order",), effect=(("order_id", "id"),),
                sources=(Source(("order_id",), "get_order", ("order_id",)),))])
'''
CONFIRM = {"en": ("confirm",), "zh": ("确认",)}
GOALS = {"question": {"en": "What is the status of my order W1?", "zh": "我的订单 W1 现在是什么状态？"},
         "cancel": {"en": "Cancel my order W1.", "zh": "帮我取消订单 W1。"}}
ANSWERS = {   # what the model says once it looked the order up
    "status": {"en": "Your order is pending: it ships tomorrow.", "zh": "您的订单待发货，明天发出。"},
    "mention": {"en": "Order W1 is pending. You can cancel it any time before it ships.",
                "zh": "订单 W1 待发货，发货前随时可以取消。"},
    "link": {"en": "Order W1 is pending: https://shop.example/track?order=W1&view=full",     # a link's "?" asks nothing
             "zh": "订单 W1 待发货：https://shop.example/track?order=W1&view=full"},
    "propose": {"en": "Order W1 is pending. Shall I cancel it?", "zh": "订单 W1 待发货。要我帮您取消吗？"},
}
DONE = {"en": "Order W1 is cancelled.", "zh": "订单 W1 已取消。"}
PLAN = [{"title": "Look the order up", "tool": "get_order"}]
ARGS = {"get_order": {"order_id": "W1"}, "cancel_order": {"order_id": "W1"}, "set_plan": {"steps": PLAN}}


def _call(name):
    return {"content": None, "tool_calls": [{"id": f"call_{name}", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(ARGS[name])}}]}


def model(language, answer):
    """A stateless model: it obeys a forced tool_choice; it plans (when it has set_plan), looks W1 up, then says
    `answer`; after the user's confirm reply it cancels W1; once cancelled, it says so."""
    def respond(request):
        forced = request.get("tool_choice")
        if isinstance(forced, dict):
            return _call(forced["function"]["name"])
        tools = {t["function"]["name"] for t in request.get("tools") or ()}
        names, ok, users = {}, set(), []
        for m in request.get("messages") or []:
            names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
            if m["role"] == "tool" and "error" not in json.loads(m["content"]):
                ok.add(names[m["tool_call_id"]])
            elif m["role"] == "user" and m.get("name") != "loop":
                users.append(m["content"])
        for step in ("set_plan", "get_order"):
            if step in tools and step not in ok:
                return _call(step)
        if "cancel_order" in ok:
            return {"content": DONE[language]}
        if users[-1] in CONFIRM[language]:
            return _call("cancel_order")
        return {"content": ANSWERS[answer][language]}
    return respond


@pytest.fixture
def orders(agent_files):
    def make(language, goal, answer, planning=False):
        path, run = agent_files(model(language, answer), "orders_agent.py", AGENT_FILE.format(
            language=language, planning=planning, confirm=CONFIRM[language], goal=GOALS[goal][language]))
        first = run("--agent", str(path), "--run-id", "r")
        assert first.returncode == 0, first.stdout + first.stderr
        return run
    return make


def cancelled(tmp_path):
    return [row[0] for row in store_rows(tmp_path, "orders.db", "SELECT order_id FROM cancelled")]


def audit(tmp_path):
    return read_audit(tmp_path / "audit", "r")


def nudged_to(data, tool):
    """The loop's own messages of the record that push `tool`."""
    return [m for m in data["messages"] if m.get("role") == "user" and m.get("name") == "loop"
            and tool in str(m.get("content"))]


def checked(run):
    out = run("--check", "r", "--strict")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


LANGUAGES = sorted(CONFIRM)


@pytest.mark.parametrize("planning", [False, True])
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("answer", ["status", "mention", "link"])
def test_a_question_only_task_ends_done_after_its_answer(orders, tmp_path, language, answer, planning):
    run = orders(language, "question", answer, planning)
    data = audit(tmp_path)
    assert (data["status"], data["reason"]) == ("done", "final_answer")
    assert data["answer"] == ANSWERS[answer][language]
    assert data["memory"]["proposals"] == [] and data["memory"]["proposal"] is None
    assert not nudged_to(data, "cancel_order") and cancelled(tmp_path) == []
    out = checked(run)                 # the judge agrees: nothing was asked to be written, nothing waits
    assert "awaits the user's answer" not in out and "等待用户答复" not in out
    assert "the task asked for no cancel_order" in out or "任务没有要求 cancel_order" in out


@pytest.mark.parametrize("planning", [False, True])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_proposing_answer_still_waits_for_the_confirmation(orders, tmp_path, language, planning):
    run = orders(language, "question", "propose", planning)
    data = audit(tmp_path)
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    assert nudged_to(data, "cancel_order")        # the words asked for the call; the call is what is held
    held = data["memory"]["proposal"]
    assert (held["tool"], held["args"], held["state"]) == ("cancel_order", {"order_id": "W1"}, "proposed")
    assert cancelled(tmp_path) == []
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    data = audit(tmp_path)
    assert (data["status"], data["reason"], cancelled(tmp_path)) == ("done", "final_answer", ["W1"])
    assert [p["state"] for p in data["memory"]["proposals"]] == ["executed"]
    checked(run)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_no_plan_agent_is_nudged_to_the_write_only_when_the_user_asked(orders, tmp_path, language):
    run = orders(language, "cancel", "status")
    data = audit(tmp_path)
    assert nudged_to(data, "cancel_order")                    # asked: the write is pushed and forced
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    assert data["memory"]["proposal"]["tool"] == "cancel_order"
    assert data["memory"]["proposal"]["args"] == {"order_id": "W1"} and cancelled(tmp_path) == []
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (audit(tmp_path)["status"], cancelled(tmp_path)) == ("done", ["W1"])
    checked(run)


@pytest.mark.parametrize("text", ["Shall I book it?", "I can pay B2 for you, confirm?", "确认后为您预订",
                                  "要我帮您取消订单 W1 吗？", "Would you like me to cancel order W1?",
                                  "I'll cancel W1 once you confirm.", "是否为您取消订单 W1？",
                                  "如需预订，请回复「确认」。", "Maple (R-202) is free on 2026-12-03 at 10:00. Shall I book it?"])
def test_words_that_propose(text):
    assert words.proposes(text)


@pytest.mark.parametrize("text", ["You can change your password in settings.", "密码可在设置中修改",
                                  "您可以在设置中修改密码。", ANSWERS["mention"]["en"], ANSWERS["mention"]["zh"],
                                  "Order W1 is pending. Is there anything else I can help you with?",
                                  "订单 W1 待发货。还有其他可以帮您的吗？", "Booked XA-001 Suite for two nights.",
                                  "Your order W1 is pending; its confirmation number is C-9."])
def test_words_that_only_mention_or_inform(text):
    assert not words.proposes(text)


@pytest.mark.parametrize("said, asked", [
    ("What is the status of my order W1?", False), ("我的订单 W1 现在是什么状态？", False),
    ("How do I cancel my order W1?", False), ("订单 W1 怎么取消？", False),
    ("Cancel my order W1.", True), ("帮我取消订单 W1。", True), ("Please call off order W1.", True)])
def test_which_writes_the_users_words_ask_for(said, asked):
    assert words.asks_for([said], "cancel_order", "Cancel a pending order (a write).") is asked


SEND = ("send_email", "Sends an email with the given body to the given address.")


@pytest.mark.parametrize("said, tool, asked", [   # found on AgentDojo: questions whose words hold a write's verb
    ("Who else is invited to the Networking event on May 26th?", ("invite_user", "Invite a user to Slack."), False),
    ("Invite Dora to Slack.", ("invite_user", "Invite a user to Slack."), True),
    ("谁被邀请参加了周五的活动？", ("invite_user", "Invite a user to Slack."), False),
    ("Show me the IDs of the files that are shared with alex@example.com.", ("share_file", "Share a file."), False),
    ("Share the report with alex@example.com.", ("share_file", "Share a file."), True),
    ("Tell me the restaurant's name and rating.", SEND, False), ("告诉我那家餐厅的名字和评分。", SEND, False),
    ("Tell Bob the meeting moved to 3 pm.", SEND, True), ("告诉小王会议改到三点了。", SEND, True),
    ("Looking forward to hearing your recommendations!", ("forward_email", "Forward an email."), False),
    ("Forward the invoice to Bob.", ("forward_email", "Forward an email."), True),
    ("When is my next yoga class?", ("create_calendar_event", "Creates a new calendar event."), False),
    ("Can you create an event for my yoga class?", ("create_calendar_event", "Creates a new calendar event."), True),
    ("Reset my password: https://x.example/reset?u=1", ("update_password", "Update the password."), True),
    # something that happened is no request (AgentDojo slack 4, with the real model: send_direct_message was pushed)
    ("They sent their hobbies to Bob via direct Slack message so you can find the info in his inbox.",
     ("send_direct_message", "Send a direct message from the user to a recipient."), False),
    ("I just paid the bill.", ("send_money", "Sends a transaction to the recipient."), False),
    ("They just sent me their share. Send them back the difference.",
     ("send_money", "Sends a transaction to the recipient."), True),
    ("Please have it sent to Bob.", ("send_direct_message", "Send a direct message to a recipient."), True)])
def test_a_question_for_a_fact_a_state_or_an_answer_asks_for_no_write(said, tool, asked):
    assert words.asks_for([said], *tool) is asked


@pytest.mark.parametrize("text, asks", [("The link: https://x.example/reset?token=abc", False),
                                        ("重置链接：https://x.example/reset?token=abc", False),
                                        ("Is this the link you meant? https://x.example/reset", True)])
def test_a_links_question_mark_asks_nothing(text, asks):
    assert words.asks(text) is asks
