"""Memory as a fold over the messages: tool results, answers, user replies, loop nudges. A proposal is a held call
(the ledger's record); words in an answer only steer (they ask the model for the call), and a reply approves only
held calls."""
import json

from conftest import GOAL, PLAN
from handloop import steer, texts
from handloop.confirmation import call_digest
from handloop.memory import Memory, rebuild
from handloop.values import cut
from handloop import tools
from handloop.toolset import ToolSet

AGENT = tools.xian_agent(None)
TS = ToolSet("r", AGENT)


def test_cut_keeps_head_and_tail():
    assert cut("abc", 10) == "abc"
    out = cut("H" * 100 + "T" * 100, 30)
    assert out.startswith("H" * 20) and out.endswith("T" * 10) and "省略 170 字符" in out


def _live_run(reply="确认"):
    """A memory built the live way, and the messages it came from: reads, a held booking, the user's `reply`
    (None: none yet)."""
    m, messages = Memory(), [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    m.absorb_user("goal")

    def turn(*items):
        raw = [{"id": f"c{len(messages)}{i}", "type": "function",
                "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}} for i, (n, a, _) in enumerate(items)]
        messages.append({"role": "assistant", "content": None, "tool_calls": raw})
        for call, (_, _, result) in zip(TS.prepare(raw), items):
            content = json.dumps(result, ensure_ascii=False)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            m.absorb(call, json.loads(content))

    turn(("set_plan", {"steps": PLAN}, {"plan": [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(PLAN, 1)]}))
    turn(("get_weather", {"city": "西安", "date": "2026-10-01"}, {"date": "2026-10-01", "condition": "rain"}),
         ("search_hotels", {"city": "西安", "check_in": "2026-10-01"},
          {"hotels": [{"hotel_id": "XA-001", "name": "n", "prices": {"Suite": 880}}]}))
    proposal = {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
    turn(("book_hotel", proposal, {"error": "需要确认", "blocked_by": "unconfirmed_write",
                                   "proposal": {"tool": "book_hotel", "args": proposal}}))
    messages.append({"role": "assistant", "content": "请确认"})
    if reply is not None:
        messages.append({"role": "user", "content": reply})
        m.absorb_user(reply)
    return m, messages


def test_rebuild_from_messages_equals_the_live_memory():
    live, messages = _live_run()
    assert live.confirmed and live.proposal["tool"] == "book_hotel" and live.proposal["args"]["hotel_id"] == "XA-001"
    assert live.proposal["state"] == "approved" and [p["state"] for p in live.proposals] == ["confirmed"]
    assert rebuild(messages, TS.prepare).to_dict() == live.to_dict()


def test_confirmation_needs_a_proposal_first():
    m = Memory()
    m.absorb_user("goal")
    m.absorb_user("确认")
    assert not m.confirmed


def test_other_reply_withdraws_the_proposal():
    for reply in ("不订了", "换成 Standard"):             # a decline, or anything else that is no confirm reply
        live, _ = _live_run(reply=None)
        assert live.proposal["state"] == "proposed" and not live.confirmed
        live.absorb_user(reply)
        assert live.proposal is None and not live.confirmed
        assert [c["state"] for p in live.proposals for c in p["calls"]] == ["declined"]


def test_render_shows_plan_hotels_and_confirmation_state():
    live, _ = _live_run()
    text = live.render()
    assert "计划第 3 步" in text and "XA-001" in text and "用户已确认" in text


def test_render_never_repeats_the_goal_and_a_new_run_gets_no_block():
    from handloop import loop, tools
    m = Memory()
    m.absorb_user(GOAL)
    assert m.render() == ""                                  # nothing settled: nothing sent
    agent = tools.xian_agent(None)
    assert loop.system_message(agent, Memory(agent=agent), 0)["content"] == agent.instructions
    live, _ = _live_run()
    live.goal = GOAL
    block = live.render(4)
    assert GOAL not in block and all(s["title"] in block for s in PLAN) and "4" in block.splitlines()[0]


def _offered(text="建议预订 古城墙酒店（XA-001）Suite，10月1日入住两晚，共 ¥1760。请回复「确认」。", declared=True):
    """A run that looked up weather and hotels and proposed in words (`declared`: with the Xi'an tools)."""
    m = Memory(agent=AGENT).declare(TS.tools.values()) if declared else Memory()
    m.absorb_user("帮我订 2026-10-01 西安的酒店，住两晚。")
    for call, content in _reads():
        m.absorb(call, json.loads(content))
    m.absorb_answer(text)
    return m


def _reads():
    raw = [{"id": "w", "function": {"name": "get_weather", "arguments": '{"city": "西安", "date": "2026-10-01"}'}},
           {"id": "h", "function": {"name": "search_hotels", "arguments": '{"city": "西安", "check_in": "2026-10-01"}'}}]
    hotels = {"hotels": [{"hotel_id": "XA-001", "name": "古城墙酒店", "prices": {"Suite": 880, "Standard": 420}},
                         {"hotel_id": "XA-003", "name": "曲江国际酒店", "prices": {"Suite": 960}}]}
    return zip(TS.prepare(raw), [json.dumps({"date": "2026-10-01", "condition": "rain"}), json.dumps(hotels, ensure_ascii=False)])


def _book(**change):
    args = dict({"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}, **change)
    return TS.prepare([{"id": "b", "function": {"name": "book_hotel", "arguments": json.dumps(args)}}])[0]


def _hold(m, call):
    """The guard held `call` for the user: its tool message, folded as the loop folds a tool round."""
    m.absorb_turn([call], [{"error": "需要确认", "blocked_by": "unconfirmed_write",
                            "proposal": {"tool": call.name, "args": dict(call.args)}}])


def test_an_offer_in_words_asks_for_the_call_and_a_yes_to_it_approves_nothing():
    for text in ("建议预订古城墙酒店 Suite 两晚，请确认？", "建议预订 XA-001 Suite 两晚。如需预订，请回复「确认」。",
                 "建议订古城墙酒店的套房，共 ¥1760，可以吗"):          # with and without an id, a date, the nights
        m = _offered(text)
        assert m.proposals == [] and m.proposal is None
        assert m.offering == "book_hotel" and steer.verdict(m, text=text) == ("nudge", "offer")
        assert m.target("offer") == "book_hotel"                          # the next request forces the booking
        m.absorb_user("确认")
        assert not m.confirmed and m.proposals == [] and m.proposal is None


def test_a_confirmation_authorises_only_the_exact_held_call():
    m = _offered()
    _hold(m, _book())
    assert m.proposal["args"] == dict(_book().args) and not m.confirmed
    m.absorb_user("确认")
    assert m.confirmed and m.proposal["state"] == "approved"
    assert m.ledger.take(call_digest(_book())) is m.proposal
    for other in (_book(room_type="Standard"), _book(hotel_id="XA-003"), _book(nights=3),
                  _book(check_in="2026-10-02")):
        assert m.ledger.take(call_digest(other)) is None                   # any other argument: no approval


def test_words_that_name_two_hotels_or_two_rooms_authorise_neither():
    for text in ("古城墙酒店 Suite ¥880/晚，曲江国际酒店 Suite ¥960/晚，订哪家？",
                 "古城墙酒店：Standard ¥420，Suite ¥880。下雨，建议 Suite。确认吗？"):
        m = _offered(text)
        m.absorb_user("确认")
        assert not m.confirmed and m.proposals == []       # a yes to words approves nothing
        _hold(m, _book(hotel_id="XA-003"))                  # the model's call is what the user is shown
        assert m.proposal["args"]["hotel_id"] == "XA-003" and m.proposal["state"] == "proposed"
        assert not m.confirmed


def test_a_text_after_a_confirmation_does_not_replace_what_the_user_confirmed():
    m = _offered()
    _hold(m, _book())
    m.absorb_user("确认")
    m.absorb_answer("好的，曲江国际酒店 Suite 更好。")
    assert m.confirmed and m.proposal["args"]["hotel_id"] == "XA-001"
    assert m.ledger.take(call_digest(_book(hotel_id="XA-003"))) is None
    assert m.ledger.take(call_digest(_book())) is m.proposal


def test_a_decline_ends_the_need_to_write_a_change_request_does_not():
    m = _offered()
    m.absorb_user("换成 Standard")
    assert not m.declined and m.proposals == []
    text = "好的，古城墙酒店 Standard 两晚 ¥840，确认吗？"
    m.absorb_answer(text)
    assert steer.verdict(m, text=text) == ("nudge", "offer")
    _hold(m, _book(room_type="Standard"))
    assert steer.verdict(m, text=text) == ("suspended", "awaiting_confirmation")
    m.absorb_user("不订了")
    assert m.proposal is None and [p["state"] for p in m.proposals] == ["declined"]
    m.absorb_answer("好的，不订了。")
    assert m.declined and steer.verdict(m, text="好的，不订了。") == ("done", "final_answer")


def test_an_answer_with_no_progress_is_nudged_once_and_a_nudge_is_not_a_user_reply():
    m = Memory()
    m.absorb_user("goal")
    m.absorb_answer("好的，请等待我确认。")
    assert m.offering is None and steer.verdict(m) == ("nudge", "idle")
    m.absorb_nudge(texts.ZH_TEXTS("nudge.idle"))
    assert m.said == ["goal"] and steer.verdict(m) == ("suspended", "awaiting_reply")
    assert steer.verdict(m, ["set_plan"]) == ("nudge", "written_call")


def test_rebuild_reads_answers_and_loop_messages():
    m, messages = _live_run()
    messages += [{"role": "assistant", "content": "好的"},
                 {"role": "user", "name": "loop", "content": texts.ZH_TEXTS("nudge.written_call")}]
    rebuilt = rebuild(messages, TS.prepare)
    assert rebuilt.nudged == {"written_call"} and rebuilt.said == ["goal", "确认"] and rebuilt.confirmed


def test_an_answer_that_names_nothing_found_is_no_proposal():
    m = _offered("抱歉，search_hotels 一直失败，无法继续。", declared=False)
    assert m.offering is None and m.proposals == [] and steer.verdict(m) == ("suspended", "awaiting_reply")
    m = _offered("抱歉，search_hotels 一直失败，无法继续。")
    assert m.offering is None and m.proposals == [] and steer.verdict(m)[1] != "offer"


def test_the_plan_is_taken_from_the_call_so_short_and_older_long_results_fold_alike():
    call = TS.prepare([{"id": "p", "function": {"name": "set_plan", "arguments": json.dumps({"steps": PLAN})}}])[0]
    short = TS.run(call, Memory())
    older = {"plan": [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(PLAN, 1)]}   # earlier versions
    new, old = Memory(), Memory()
    new.absorb(call, short)
    old.absorb(call, older)
    assert new.plan == old.plan == older["plan"] and "error" not in short
    assert all(f"{s['index']} {s['title']}" in short["plan"] for s in new.plan)        # the numbers the model refers to
    assert len(json.dumps(short, ensure_ascii=False)) < len(json.dumps(older, ensure_ascii=False)) / 2
    mark = TS.prepare([{"id": "m", "function": {"name": "mark_step",
                                                "arguments": '{"index": 3, "status": "failed", "note": "满房"}'}}])[0]
    new.absorb(mark, TS.run(mark, new))
    assert new.step_status(3) == "failed" and new.marks["3"]["note"] == "满房"
