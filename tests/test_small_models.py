"""Models as they are: a small local model that answers instead of acting, claims work it never did,
writes calls as markup, echoes tool results, comes back empty, and marks steps done that never ran
(tests/policies.py, written from shared/notes/real-model-replies.md), behind a server that accepts
tool_choice "required" and one that rejects it, through the real `openai` client.

Assertions read states, stores, audit files and requests; never a nudge's wording or a turn count.
"""
import json

import pytest

from handloop import audit
from handloop.judge import texts as check_texts
from handloop import loop
from handloop import runs
import policies
from handloop.llm import replies
from handloop.cli import session
from handloop import texts
from handloop import toolset
from test_own_agent import EXAMPLE
from conftest import BOOK
from test_real_models import bookings, checked, state

ZH = texts.of("zh")


def loop_messages(data):
    return [m for m in data["messages"] if m["role"] == "user" and m.get("name") == "loop"]


def started(cli, tmp_path, policy):
    """The first command of a run against `policy`: (run, its output, status, reason, audit data)."""
    run = cli(policy)
    out = run("--run-id", "r")
    assert out.returncode == 0, out.stderr
    return (run, out, *state(tmp_path))


def forced_after_nudges(requests):
    """Every request that forced a tool call came right after a loop message; returns how many did."""
    forced = [q for q in requests if policies.forced(q)]
    assert all(q["messages"][-1].get("name") == "loop" for q in forced)
    return len(forced)


def test_forced_after_the_nudge_it_plans_and_looks_up_instead_of_answering(cli, tmp_path):
    server = policies.Server(policies.answers_instead)
    _, _, status, reason, data = started(cli, tmp_path, server)
    assert (status, bookings(tmp_path)) == ("suspended", 0)
    plan = data["memory"]["plan"]
    assert [s["tool"] for s in plan] == ["get_weather", "search_hotels", "book_hotel"]   # accepted, after dropped
    assert all(s["after"] == [] for s in plan)
    results = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool"]
    assert any("note" in r and "plan" in r for r in results)                     # the drop was said
    assert any("city" in r and "error" not in r for r in results)                # the weather was looked up
    nudges = loop_messages(data)
    assert "set_plan" in nudges[0]["content"] and any("get_weather" in m["content"] for m in nudges[1:])
    assert reason == "awaiting_reply" and data["memory"]["proposals"] == []     # nothing to confirm yet
    assert forced_after_nudges(server.requests) >= 2                            # each nudge to act, forced


def test_a_server_that_rejects_a_forced_call_is_asked_without_it_and_the_run_goes_on(cli, tmp_path):
    server = policies.Server(policies.answers_instead, accepts=False)
    _, _, status, reason, data = started(cli, tmp_path, server)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0)
    assert server.rejected == 2 and forced_after_nudges(server.requests) == 2     # named, then "required"
    assert any("tool_choice" in n for t in data["trace"] for n in t["notes"])


def test_a_rejected_forced_call_is_remembered_for_the_client(fake_model):
    server = policies.Server(lambda request: policies.say("好的"), accepts=False)
    ask, endpoint = fake_model(server)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for _ in range(3):
        reply = ask([{"role": "user", "content": "u"}], tools, force=True)
        assert reply.text == "好的"
    assert [q["tool_choice"] for q in endpoint.requests] == ["required", "auto", "auto", "auto"]
    assert server.rejected == 1


def test_a_server_that_accepts_it_is_sent_required_each_time(fake_model):
    ask, endpoint = fake_model(lambda request: policies.say("好的"))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    ask([{"role": "user", "content": "u"}], tools, force=True)
    ask([{"role": "user", "content": "u"}], tools)
    ask([{"role": "user", "content": "u"}], tools, force=True)
    assert [q["tool_choice"] for q in endpoint.requests] == ["required", "auto", "required"]


def test_claimed_work_is_shown_as_not_done_and_check_agrees(cli, tmp_path):
    run, out, status, reason, data = started(cli, tmp_path, policies.Server(policies.claims_done, accepts=False))
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0)
    assert data["memory"]["proposals"] == [] and not data["memory"]["writes"]
    assert ZH("cli.unbacked.read") in out.stdout and ZH("cli.unbacked.write") in out.stdout
    assert any("claims write" in n for t in data["trace"] for n in t["notes"])
    notes = json.loads(run("--check", "r", "--json").stdout)["files"][0]["notes"]
    judge = check_texts.of("zh")
    turns = [m["turn"] for m in data["trace"]]
    assert any(judge("note.unbacked_write", turn=t) in notes for t in turns)
    assert any(judge("note.unbacked_read", turn=t) in notes for t in turns)


def test_markup_that_is_no_call_gets_a_forced_nudge_naming_the_next_tool(cli, tmp_path):
    _, _, status, _, data = started(cli, tmp_path, policies.Server(policies.markup_calls))
    assert status == "suspended" and bookings(tmp_path) == 0
    nudges = loop_messages(data)
    assert nudges and "set_plan" in nudges[0]["content"]                        # the concrete next step
    assert data["memory"]["plan"] and data["memory"]["weather"]                  # forced, it acted
    audit.load(audit.path_for(str(tmp_path / "audit"), "r"))


@pytest.mark.parametrize("policy", [policies.echoes, policies.dumps_hotels])
def test_an_echo_or_a_dump_is_not_an_offer(cli, tmp_path, policy):
    run, out, status, reason, data = started(cli, tmp_path, policy)
    assert (status, reason, data["memory"]["proposals"]) == ("suspended", "awaiting_reply", [])
    assert ZH("proposal.header", number=1).split("：")[0] not in out.stdout    # not called a proposal
    again = run("--confirm", "r")                                               # 「确认」 to nothing
    status, _, data = state(tmp_path)
    assert again.returncode == 0 and bookings(tmp_path) == 0 and not data["memory"]["confirmed"]
    assert not data["messages"][-1].get("decision") and all(not m.get("decision") for m in data["messages"])


def test_an_empty_reply_after_a_tool_result_is_asked_again_with_a_nudge(cli, tmp_path):
    run = cli(policies.Obeys(policies.empty_after_tools))
    assert run("--run-id", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    assert run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path)) == ("done", 1)
    empty = [m for m in loop_messages(data) if m["content"].startswith(ZH("nudge.empty_reply"))]
    assert len(empty) == 2                                                      # once per empty reply
    checked(run)


def test_a_step_whose_tool_never_ran_is_not_marked_done(cli, tmp_path):
    run = cli(policies.Obeys(policies.marks_unrun_steps))
    assert run("--run-id", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    assert [s["status"] for s in data["memory"]["plan"]] == ["done", "done", "pending"]
    refused = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool"][1]
    assert "error" in refused and "book_hotel" in refused["error"]
    assert run("--confirm", "r").returncode == 0 and bookings(tmp_path) == 1


def english_room_model(request):
    """The same small model on the English meeting-room agent (planning off): answers instead of acting,
    forced it lists the rooms, then claims a booking it never made."""
    talk = policies.Talk(request)
    if policies.forced(request):
        return policies.calls(("list_rooms", {"seats": 6}))
    if not talk.results:
        return policies.say("Sure, please confirm the plan first.")
    return policies.say("I have booked Maple (R-202) for you on 2026-12-03 at 10:00. Booking number MR-1.")


def test_an_english_agent_is_nudged_forced_and_its_claim_noted_in_english(tmp_path, fake_model):
    agent = session.load_file(EXAMPLE)
    ts = toolset.ToolSet("e", agent=agent)
    r = runs.begin(str(tmp_path), "e", "", ts, "scripted", fsync=False)
    server = policies.Server(english_room_model)
    ask, _ = fake_model(server)
    loop.run(r, ask, ts)
    assert (r.status, r.reason, r.memory.proposals) == ("suspended", "awaiting_reply", [])
    assert forced_after_nudges(server.requests) >= 1 and "list_rooms" in r.memory.done_tools
    assert r.memory.unbacked(r.answer) == ["write"]
    assert any("claims write" in n for t in r.trace for n in t["notes"])
    said = json.dumps([m for m in r.messages if m.get("name") == "loop"], ensure_ascii=False)
    assert said and not texts.CJK.search(said)


WRITTEN = [   # round 2 of shared/notes/real-model-replies.md: (text, tools it names, what is wrong with it)
    ('"name": "set_plan", "arguments": [ {"title": "查天气", "tool": "get_weather"} ]', ["set_plan"],
     ["arguments_not_object"]),
    ('"hotel_id": <返回的酒店ID>, "room_type": <根据天气预报决定的房型（Standard 或 Suite）>', ["book_hotel"],
     ["placeholder"]),
    ('<tools>\n{"steps":[{"title":"查天气","tool":"get_weather"}]}\n</tools>\n\n<mark_step index="1" status="done"/>\n\n'
     '<get_weather city="西安" date="2026-10-01"/>', ["mark_step", "get_weather"], ["markup"]),
    ('{"name": "set_plan", "arguments": {"steps": [{"title": "预订", "tool": "book_hotel", "arguments": '
     '{"hotel_id": <hotel-id>}}]}}', ["set_plan"], ["placeholder"]),
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "西安"}}\n</tool_call>', ["get_weather"], []),
    ("好的，我会重新发出工具调用。", [], []),
    ("建议预订曲江国际酒店（XA-003）Suite 两晚，共 ¥1920，请确认。", [], []),
]
SIGNATURES = {"set_plan": ["steps"], "mark_step": ["index", "status", "note"], "get_weather": ["city", "date"],
              "search_hotels": ["city", "check_in", "nights"],
              "book_hotel": ["hotel_id", "room_type", "check_in", "nights"]}


@pytest.mark.parametrize("text, names, problems", WRITTEN)
def test_what_is_wrong_with_a_call_written_as_text_is_named(text, names, problems):
    assert replies.written_calls(text, SIGNATURES) == names
    assert replies.written_problems(text, list(SIGNATURES)) == problems


@pytest.mark.parametrize("text, offer", [
    ("建议预订曲江国际酒店（XA-003）Suite 两晚，共 ¥1920，请确认。", "book_hotel"),
    ("Shall I book XA-003, a Suite, for two nights?", "book_hotel"),
    ("XA-001 或 XA-003 都有 Suite，你想订哪家？", "book_hotel"),             # two ids: the call shows which
    ("建议预订 XA-003，Suite 或 Standard 都行。", "book_hotel"),              # two choices: the same
    ("好的，请等待我确认。", None),                                          # names nothing
    ('<tool_response>\n{"message":"已收到预订请求，请确认后预订。"}\n</tool_response>', None),
    ("已为你预订曲江国际酒店（XA-003）Suite，订单号 789012。", None),          # claims a write that did not happen
])
def test_an_offer_in_words_only_asks_for_the_call_and_is_never_a_proposal(text, offer, tmp_path):
    """Words steer: an offer is answered by asking for its write's call (the offer nudge); it holds nothing,
    and a 「确认」 to it approves nothing."""
    from handloop import steer, tools
    ts = toolset.ToolSet("t", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    memory = loop.Memory(agent=ts.agent).declare(ts.tools.values())
    memory.absorb_user("帮我订 2026-10-01 西安的酒店，住两晚。")
    search = ts.prepare([{"id": "s", "function": {"name": "search_hotels", "arguments": json.dumps(policies.SEARCH)}}])
    memory.absorb(search[0], ts.run(search[0], memory))
    memory.absorb_answer(text)
    assert memory.offering == offer and (steer.verdict(memory, text=text) == ("nudge", "offer")) is bool(offer)
    memory.absorb_user("确认")
    assert memory.proposals == [] and memory.proposal is None and not memory.confirmed


@pytest.mark.parametrize("text, claimed", [
    ("好的，我已经查询了西安的天气预报。根据预报结果，当天没有下雨。", {"read"}),
    ("好的，我已经预订了西安的星海酒店，住两晚，使用房间类型为 Standard。订单号为 789012。", {"write"}),
    ("预订成功！天气为雨，您选择的房型是 Suite。", {"write"}),
    ("已为你订好曲江国际酒店 Suite。", {"write"}),
    ("I have booked Maple for you.", {"write"}),
    ("Your room is now booked: MR-1.", {"write"}),
    ("I've checked the calendar and searched the rooms.", {"read"}),
    ("该房型已预订满，建议订 Standard。", set()),                          # a fact read, not a claim
    ("建议对订单号 A1001 退款 ¥899，确认吗？", set()),
    ("订单 A1001 已退款过一次。", set()),
    ("我将预订 Standard 酒店，预订前请确认。", set()),                     # a promise
    ("我还没查过天气。", set()),
    ("R-101 is booked at 10:00, but Maple (R-202) is free. Shall I book it?", set()),
    ("Once you confirm I will book it and send you the booking number.", set()),
    ("I haven't checked the weather yet.", set()),
])
def test_what_an_answer_claims_to_have_done(text, claimed):
    from handloop.texts import words
    assert words.claims(text) == claimed


@pytest.mark.parametrize("status, said", [(400, "Only 'auto' tool choice is supported"),
                                          (422, "Input should be 'none' or 'auto'"),
                                          (400, "tool_choice 'required' is not supported")])
def test_a_forced_call_refused_in_the_servers_own_words_falls_back_to_auto(fake_model, status, said):
    def server(request):
        if policies.forced(request):
            return {"_http": {"status": status, "body": {"error": {"message": said, "type": "invalid_request_error"}}}}
        return policies.say("好的")
    ask, endpoint = fake_model(server)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    reply = ask([{"role": "user", "content": "u"}], tools, force=True)
    assert reply.text == "好的" and [q["tool_choice"] for q in endpoint.requests] == ["required", "auto"]
    assert any(said in note for note in reply.notes)


def test_a_request_refused_with_auto_too_fails_as_it_would_have(fake_model):
    from handloop import model
    ask, endpoint = fake_model(lambda request: {"_http": {"status": 400, "body": {"error": {"message": "bad"}}}})
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    with pytest.raises(model.ModelError) as caught:
        ask([{"role": "user", "content": "u"}], tools, force=True)
    assert caught.value.kind == "bad_request" and len(endpoint.requests) == 2


def test_an_ask_of_ones_own_without_forces_is_called_as_before(tmp_path, fake_model):
    from handloop import tools
    server = policies.Server(policies.answers_instead)
    client, _ = fake_model(server)

    def ask(messages, tools_, final=False):             # a user's own model function: no `force` parameter
        return client(messages, tools_, final=final)
    ts = toolset.ToolSet("o", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    r = runs.begin(str(tmp_path), "o", "", ts, "own", fsync=False)
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_reply") and sum(m.get("name") == "loop" for m in r.messages)
    assert {q.get("tool_choice") for q in server.requests} == {"auto"}


@pytest.mark.parametrize("text", [case[0] for case in WRITTEN if case[2]])
def test_each_written_call_problem_is_told_in_a_nudge(tmp_path, fake_model, text):
    from handloop import tools
    ask, _ = fake_model([{"content": text}, {"content": "好的。"}])
    ts = toolset.ToolSet("w", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    r = runs.begin(str(tmp_path), "w", "", ts, "scripted", fsync=False)
    loop.run(r, ask, ts)
    told = [m["content"] for m in r.messages if m.get("name") == "loop"]
    assert r.status == "suspended" and told and len(told[0]) > len(ZH("nudge.written_call"))   # the problem said too


# ---- round 3: forcing follows the plan all the way to the proposal ----
def forced_names(requests):
    """The functions the forced requests named (None for "required"), per stretch of the run between two
    user messages: a step is pushed at most once in each."""
    stretches, users = {}, 0
    for q in requests:
        users = sum(m["role"] == "user" and m.get("name") != "loop" for m in q["messages"])
        if policies.forced(q):
            stretches.setdefault(users, []).append(policies.forced_tool(q))
    return stretches


def proposed_and_booked(cli, tmp_path, server, *first):
    """The run from the goal to its proposal and, after --confirm, to its booking, each step checked; returns
    (the calls to the proposal, the calls to the booking, the proposal, the audit data at the end)."""
    run = cli(server)
    out = run("--run-id", "r", *first)
    assert out.returncode == 0, out.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    proposal, to_proposal = data["memory"]["proposal"], len(server.requests)
    assert bookings(tmp_path) == 0 and not data["memory"]["writes"]
    assert run("--confirm", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert status == "done" and len(data["memory"]["writes"]) == 1
    before, after = server.requests[:to_proposal], server.requests[to_proposal:]   # the model is not sent the
    for requests in (before, after):                              # confirmation: its stretches are split here
        for stretch in forced_names(requests).values():           # one push per step and per user message
            named = [n for n in stretch if n]
            assert len(named) == len(set(named))
    assert proposal["tool"] not in [policies.forced_tool(q) for q in after]     # the write made is never pushed again
    return to_proposal, len(server.requests), proposal, data


SMALL = [   # (what the model does, what its server accepts of a forced tool_choice)
    (policies.SmallModel(), True),
    (policies.SmallModel(), "required"),
    (policies.SmallModel(echo="tags"), True),
    (policies.SmallModel(echo="bare"), "required"),
    (policies.SmallModel(follows=True), False),
]


@pytest.mark.parametrize("model, accepts", SMALL)
def test_a_small_model_forced_step_by_step_ends_on_a_proposal_and_books_once(cli, tmp_path, model, accepts):
    server = policies.Server(model, accepts=accepts)
    run_calls, _, proposal, data = proposed_and_booked(cli, tmp_path, server)
    assert proposal["tool"] == "book_hotel" and proposal["args"] == {          # rain, the cheapest Suite
        "hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
    assert bookings(tmp_path) == 1
    receipt = data["memory"]["writes"][0]["args"]
    assert {k: receipt[k] for k in ("hotel_id", "room_type")} == {"hotel_id": "XA-001", "room_type": "Suite"}
    forced = [q for q in server.requests if policies.forced(q)]
    assert all(q["messages"][-1].get("name") == "loop" for q in forced)
    if accepts is True:
        assert forced and all(policies.forced_tool(q) for q in forced) and server.rejected == 0
    elif accepts == "required":          # the named form refused once, by the run's client (after the
        # confirmation the loop makes the confirmed call itself: that process forces nothing)
        assert server.rejected == 1 and sum(q["tool_choice"] == "required" for q in forced) > 2
    else:                                # both forms refused once, nothing forced after that
        assert server.rejected == 2 and len(forced) == 2
    verdicts = judged(tmp_path)       # the judge reads the plan's `after: [own step]` as written (the loop drops it)
    assert {k: v for k, v in verdicts.items() if k != "no_skipped_step"} == dict.fromkeys(
        ["plan_first", "provenance", "room_type", "write_after_confirmation", "answer_matches_receipt"], "pass")


def judged(tmp_path):
    from handloop.cli import check as check_cli
    entry = check_cli.check_file(str(tmp_path / "audit" / "run-r.json"))
    return {c["id"]: c["verdict"] for c in entry["checks"]}


def test_the_small_model_behind_a_server_that_forces_nothing_comes_back_to_the_user(cli, tmp_path):
    server = policies.Server(policies.SmallModel(), accepts=False)
    _, _, status, reason, data = started(cli, tmp_path, server)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0)    # not stopped: bounded
    assert any("tool_choice" in n for t in data["trace"] for n in t["notes"])
    refused = [i for i, q in enumerate(server.requests) if q.get("tool_choice") == "required"]
    assert len(refused) == 1 and {q.get("tool_choice") for q in server.requests[refused[0] + 1:]} == {"auto"}


@pytest.mark.parametrize("echo", ["tags", "bare"])
def test_an_echoed_result_is_neither_the_answer_nor_an_offer(cli, tmp_path, echo):
    server = policies.Server(policies.SmallModel(echo=echo), accepts=True)
    _, out, status, reason, data = started(cli, tmp_path, server)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    held = data["memory"]["proposals"][0]                   # the forced call, held; the echo is not its words
    assert (held["words"], [c["tool"] for c in held["calls"]]) == (None, ["book_hotel"])
    echoes = [m["content"] for m in data["messages"] if m["role"] == "assistant" and not m.get("tool_calls")]
    assert echoes and all(e.strip() not in data["answer"] for e in echoes)          # never the answer shown
    assert ZH("cli.echo") in out.stdout


QUESTION = "XA-001 和 XA-003 都有 Suite，你想订哪一家？"


def test_a_good_models_question_reaches_the_user_when_it_makes_no_call(cli, tmp_path):
    """The booking is ready: the loop asks once for its call (forced); a model that asks the user instead, again,
    has its question reach the user, with nothing held."""
    def asks(request):
        talk = policies.Talk(request)
        if not talk.results:
            return policies.opening_or_end(talk)
        return policies.say(QUESTION)
    server = policies.Server(asks)
    _, _, status, reason, data = started(cli, tmp_path, server)
    assert (status, reason, data["answer"], data["memory"]["proposals"]) == (
        "suspended", "awaiting_reply", QUESTION, [])
    assert [policies.forced_tool(q) for q in server.requests if policies.forced(q)] == ["book_hotel"]
    assert len(loop_messages(data)) == 1 and bookings(tmp_path) == 0


@pytest.mark.parametrize("policy", [policies.words_question, policies.words_statement])
def test_a_good_models_offer_in_words_is_asked_for_its_call_once_and_the_call_is_held(cli, tmp_path, policy):
    server = policies.Server(policies.Obeys(policy))
    _, _, status, reason, data = started(cli, tmp_path, server)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    held = [(c["tool"], c["args"], c["state"]) for p in data["memory"]["proposals"] for c in p["calls"]]
    assert held == [("book_hotel", BOOK, "proposed")]
    forced = [q for q in server.requests if policies.forced(q)]
    assert len(loop_messages(data)) == 1 and [policies.forced_tool(q) for q in forced] == ["book_hotel"]
    assert forced[0]["messages"][-1].get("name") == "loop"


def test_a_model_that_never_calls_even_when_forced_is_pushed_once_per_step(cli, tmp_path):
    def deaf(request):                      # a server that ignores tool_choice, a model that only talks
        talk = policies.Talk(request)
        return policies.opening_or_end(talk) if not talk.results else policies.say("好的，请确认。")
    server = policies.Server(deaf)
    run, _, status, reason, _ = started(cli, tmp_path, server)
    assert (status, reason) == ("suspended", "awaiting_reply")
    assert run("--reply", "请继续：查天气、搜酒店，然后给出具体的预订方案", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0)
    stretches = forced_names(server.requests)
    assert len(stretches) == 2 and all(s and None not in s and len(s) == len(set(s)) for s in stretches.values())


def test_the_english_agent_without_planning_is_forced_through_its_requires_to_a_proposal(cli, tmp_path):
    import sqlite3
    server = policies.Server(policies.SmallModel(policies.room_args, sentence="Sure, please confirm the plan first."))
    to_proposal, to_booking, proposal, data = proposed_and_booked(cli, tmp_path, server, "--agent", EXAMPLE)
    assert (proposal["tool"], proposal["args"]) == ("book_room", {"room_id": "R-202", "day": "2026-12-03",
                                                                  "hour": "10:00"})
    assert {q["tool_choice"]["function"]["name"] for q in server.requests if policies.forced(q)} == \
        {"list_rooms", "get_calendar", "book_room"}
    said = json.dumps(loop_messages(data), ensure_ascii=False)
    assert said and not texts.CJK.search(said)
    with sqlite3.connect(tmp_path / "audit" / "rooms.db") as db:
        assert db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0] == 1


def test_the_forced_tool_choice_steps_down_named_required_auto_and_is_remembered(fake_model):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for accepts, seen in [(True, [{"type": "function", "function": {"name": "f"}}] * 2),
                          ("required", [{"type": "function", "function": {"name": "f"}}, "required", "required"]),
                          (False, [{"type": "function", "function": {"name": "f"}}, "required", "auto", "auto"])]:
        ask, endpoint = fake_model(policies.Server(lambda request: policies.say("好的"), accepts=accepts))
        for _ in range(2):
            assert ask([{"role": "user", "content": "u"}], tools, force="f").text == "好的"
        assert [q["tool_choice"] for q in endpoint.requests] == seen


def xian_memory(tmp_path):
    from handloop import tools
    ts = toolset.ToolSet("m", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    memory = loop.Memory(agent=ts.agent).declare(ts.tools.values())
    return ts, memory


def ran(ts, memory, name, args):
    call = ts.prepare([{"id": name, "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}])[0]
    memory.absorb(call, ts.run(call, memory))


def test_the_next_step_is_the_plans_then_what_the_write_requires_then_the_write(tmp_path):
    ts, memory = xian_memory(tmp_path)
    assert memory.next_step() == "set_plan"
    ran(ts, memory, "set_plan", {"steps": [{"title": "订", "tool": "book_hotel"}, {"title": "天气", "tool": "get_weather"}]})
    assert memory.next_step() == "get_weather"              # the booking step is not ready: what it requires is not done
    ran(ts, memory, "get_weather", policies.WEATHER)
    assert memory.next_step() == "search_hotels"            # the plan forgot it; the write requires it
    ran(ts, memory, "search_hotels", policies.SEARCH)
    assert memory.next_step() == "book_hotel"


def test_an_agent_without_planning_steps_through_its_writes_requires(tmp_path):
    agent = session.load_file(EXAMPLE)
    ts = toolset.ToolSet("e", agent=agent)
    memory = loop.Memory(agent=agent).declare(ts.tools.values())
    memory.absorb_user(agent.goal)                # the user asks for the booking: it is pushed
    seen = []
    for _ in range(3):
        seen.append(memory.next_step())
        if seen[-1] != "book_room":
            ran(ts, memory, seen[-1], policies.ROOM_ARGS[seen[-1]])
    assert seen == ["list_rooms", "get_calendar", "book_room"]


def test_an_echo_is_a_result_given_back_and_words_are_not(tmp_path):
    from handloop.memory import echoed
    weather = '{"city":"西安","date":"2026-10-01","condition":"rain","high":19,"low":14}'
    messages = [{"role": "tool", "tool_call_id": "c", "content": weather}]
    assert echoed(f"<tool_response>\n{weather}\n</tool_response>", messages)
    assert echoed('<tool_response>\n{"weather":"西安 2026-10-01 气温：19-14 度，天气为雨"}\n</tool_response>', messages)
    assert echoed('{"condition": "rain", "city": "西安", "date": "2026-10-01", "low": 14, "high": 19}', messages)
    assert echoed(f"```json\n{weather}\n```", messages)
    assert not echoed('{"name": "get_weather", "arguments": {"city": "西安"}}', messages)     # a written call
    assert not echoed(f"西安那天有雨：{weather}，建议订 Suite。", messages)                   # words of its own
    assert not echoed("好的，请先确认预订方案。", messages)


@pytest.mark.parametrize("text, question", [
    ("XA-001 和 XA-003 都有 Suite，你想订哪一家？", True), ("你想住几晚", True), ("需要我继续吗", True),
    ("Which room would you like?", True), ("Shall I book it", True),
    ("好的，请先确认预订方案。", False), ("好的，请确认。", False), ("好的，请继续。", False), ("好的，请等待我确认。", False),
    ("Sure, please confirm the plan first.", False), ("好的，我已经预订了西安的星海酒店。订单号为 789012。", False),
])
def test_what_is_a_question_to_the_user(text, question):
    from handloop.texts import words
    assert words.asks(text) is question
