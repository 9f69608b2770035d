"""What the shared real model (Qwen2.5-Coder-1.5B-Instruct behind a grammar-constraining server, issue 49) did,
replayed by scripted models through the real `openai` client and the loopback endpoint: each behaviour the loop
must meet, asserted on states, stores and audit contents, never on wording or an exact call sequence."""
import json

from handloop import loop
from conftest import GOAL, tool_calls, text

LONG = "好的，我来为您规划这次预订。首先，" + "我们需要了解西安的天气情况，" * 80     # what a 1024-token limit cut


def cut_until_told(say):
    """A greedy server: the same request gets the same reply, cut at the token limit (finish_reason "length");
    told its reply was too long (the loop's note), it answers briefly."""
    def respond(request):
        last = request["messages"][-1]
        if last.get("role") == "user" and last.get("content") == say("nudge.length"):
            return text("请问您想订哪一家酒店？")
        return dict(text(LONG), finish_reason="length")
    return respond


def test_a_reply_cut_at_the_token_limit_is_asked_again_once_with_a_note(fake_model, new_run):
    r, ts, _ = new_run(goal=GOAL)
    ask, endpoint = fake_model(cut_until_told(r.say))
    loop.run(r, ask, ts)
    assert r.status != "error", (r.reason, r.detail)
    notes = [m for m in r.messages if m.get("name") == loop.LOOP_NAME and m["content"] == r.say("nudge.length")]
    assert len(notes) == 1 and len(endpoint.requests) == 2
    assert endpoint.requests[1]["messages"][-1]["content"] == r.say("nudge.length")
    assert all(LONG[:40] not in (m.get("content") or "") for m in r.messages)     # a cut reply is never recorded
    assert sum(t["tokens"] for t in r.trace) == r.memory.used_tokens > 0          # the cut attempt is paid for

