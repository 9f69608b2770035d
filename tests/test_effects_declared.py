"""Effects are read from the declaration the user wrote, in Chinese as in English: a `choice` takes its values
from the argument schema's enum (no aliases needed), an `id` is any value the reads produced for that argument
whatever the field is called; words offering a write are no proposal: the loop asks for the call, and the call
is held and shown whole (a locker from another record than the code included), and what runs is exactly the call
the user approved. Scripted models through the real openai client."""
import pytest

from handloop import Agent, Source, Tool, loop, runs, toolset
from conftest import text, tool_calls

PACKAGES = {"张三": {"code": "PK7", "locker": "L-12"}, "李四": {"code": "PK9", "locker": "L-30"}}
SENT = []


def find_parcel(person):
    return dict(PACKAGES[person], person=person)


def send(code, locker, speed, idempotency_key):
    SENT.append((code, locker, speed))
    return {"sent": code, "locker": locker, "speed": speed}


FIND = Tool("find_parcel", "查包裹", {"type": "object", "required": ["person"], "properties": {
    "person": {"type": "string"}}}, find_parcel)
SEND = Tool("send_parcel", "寄出包裹（写操作）", {"type": "object", "required": ["code", "locker", "speed"], "properties": {
    "code": {"type": "string"}, "locker": {"type": "string"}, "speed": {"type": "string", "enum": ["慢递", "快递"]}}},
    send, kind="write", takes=("idempotency_key",),
    sources=(Source(("code",), "find_parcel", ("code",)), Source(("locker",), "find_parcel", ("locker",))),
    effect=(("code", "id"), ("speed", "choice")))
AGENT = Agent("parcels", "你只用工具寄包裹。", [FIND, SEND], planning=False)
LOOKUPS = tool_calls(("find_parcel", {"person": "张三"}), ("find_parcel", {"person": "李四"}))


def run(tmp_path, fake_model, replies, confirm=True, answer="确认"):
    SENT.clear()
    ts = toolset.ToolSet("p", agent=AGENT)
    r = runs.begin(str(tmp_path), "p", "把张三的包裹寄出去，先问我。", ts, "scripted", fsync=False)
    ask, _ = fake_model(replies)
    loop.run(r, ask, ts)
    first = (r.status, r.reason)
    if confirm and r.status == "suspended":
        runs.add_user(r, answer)
        loop.run(r, ask, ts)
    return first, r


def test_an_id_by_any_field_name_and_an_enum_choice_offered_in_words_are_held_and_sent_once(tmp_path, fake_model):
    first, r = run(tmp_path, fake_model, [LOOKUPS, text("张三的包裹 PK7 在柜子 L-12，建议用快递寄出。回复「确认」即可。"),
                                          tool_calls(("send_parcel", {"code": "PK7", "locker": "L-12", "speed": "快递"})),
                                          text("已寄出。")])
    assert first == ("suspended", "awaiting_confirmation") and r.status == "done"
    assert SENT == [("PK7", "L-12", "快递")]
    assert [(p["state"], [c["args"] for c in p["calls"]]) for p in r.memory.proposals] == \
        [("executed", [{"code": "PK7", "locker": "L-12", "speed": "快递"}])]


@pytest.mark.parametrize("words", ["张三的包裹 PK7 或李四的 PK9，用快递寄出？", "张三的包裹 PK7，用快递还是慢递？"])
def test_two_values_for_one_effect_argument_state_nothing(tmp_path, fake_model, words):
    """Words naming two parcels or two speeds, and a model that makes no call: nothing is held, and the user's
    「确认」 to the words approves nothing."""
    first, r = run(tmp_path, fake_model, [LOOKUPS, text(words), text(words), text("好的。")])
    assert first == ("suspended", "awaiting_reply")
    assert r.memory.proposals == [] and r.proposal is None and SENT == [] and not r.memory.confirmed


def test_a_locker_from_another_record_than_the_code_is_shown_to_the_user_and_a_no_sends_nothing(tmp_path, fake_model):
    first, r = run(tmp_path, fake_model, [LOOKUPS, text("建议把 PK7 用快递寄出。"),
                                          tool_calls(("send_parcel", {"code": "PK7", "locker": "L-30", "speed": "快递"})),
                                          text("好的，不寄了。")], answer="柜子不对，不要寄。")
    assert first == ("suspended", "awaiting_confirmation") and SENT == []
    [record] = r.memory.proposals                                          # the locker L-30 shown, then declined
    assert [(c["args"], c["state"]) for c in record["calls"]] == \
        [({"code": "PK7", "locker": "L-30", "speed": "快递"}, "declined")]
    assert SENT == [] and not r.memory.confirmed and r.memory.writes == []
