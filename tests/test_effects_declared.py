"""Effects are read from the declaration the user wrote, in Chinese as in English: a `choice` takes its values
from the argument schema's enum (no aliases needed), an `id` is any value the reads produced for that argument
whatever the field is called, and what the user confirmed fixes the whole write (an argument sourced from the
same tool as an effect must come from that effect's record). Scripted models through the real openai client."""
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


def run(tmp_path, fake_model, replies, confirm=True):
    SENT.clear()
    ts = toolset.ToolSet("p", agent=AGENT)
    r = runs.begin(str(tmp_path), "p", "把张三的包裹寄出去，先问我。", ts, "scripted", fsync=False)
    ask, _ = fake_model(replies)
    loop.run(r, ask, ts)
    first = (r.status, r.reason)
    if confirm and r.status == "suspended":
        runs.add_user(r, "确认")
        loop.run(r, ask, ts)
    return first, r


def test_an_id_by_any_field_name_and_an_enum_choice_make_a_proposal_in_words(tmp_path, fake_model):
    first, r = run(tmp_path, fake_model, [LOOKUPS, text("张三的包裹 PK7 在柜子 L-12，建议用快递寄出。回复「确认」即可。"),
                                          tool_calls(("send_parcel", {"code": "PK7", "locker": "L-12", "speed": "快递"})),
                                          text("已寄出。")])
    assert first == ("suspended", "awaiting_confirmation") and r.status == "done"
    assert SENT == [("PK7", "L-12", "快递")]


@pytest.mark.parametrize("words", ["张三的包裹 PK7 或李四的 PK9，用快递寄出？", "张三的包裹 PK7，用快递还是慢递？"])
def test_two_values_for_one_effect_argument_state_nothing(tmp_path, fake_model, words):
    first, r = run(tmp_path, fake_model, [LOOKUPS, text(words)], confirm=False)
    assert first == ("suspended", "awaiting_reply") and r.memory.offer is None


def test_a_locker_from_another_record_than_the_confirmed_code_is_put_to_the_user(tmp_path, fake_model):
    first, r = run(tmp_path, fake_model, [LOOKUPS, text("建议把 PK7 用快递寄出。"),
                                          tool_calls(("send_parcel", {"code": "PK7", "locker": "L-30", "speed": "快递"})),
                                          text("需要你再确认一次。")])
    assert first == ("suspended", "awaiting_confirmation") and SENT == []
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation")
    assert r.memory.proposal["locker"] == "L-30" and not r.memory.confirmed
