"""Decide, before anything runs, which calls of a turn may execute.

Invariants: guards see only the calls and memory, never a result; they mutate nothing (the
proposal a blocked write becomes is carried in its result and enters memory through absorb);
every decision is a named Decision, and every blocked call gets an Outcome, hence a tool
message. Checks, in order: repeated (blocked before), arguments, calls per turn, budget, spin, plan first, plan order,
provenance, unconfirmed write. Calls earlier in the same turn count as they will have happened: a
set_plan or mark_step allowed before a call is taken into account for it, and so is a call
blocked before it. A spin is a call that already ran SPIN_REPEATS times since the last user
message, an A-B-A-B alternation, or a call blocked before and sent again unchanged with nothing
new in between. A write runs only when the user confirmed it: the blocked write they were shown,
or the proposal in words they confirmed, if the write is what it stated (memory.unshown).
"""
import dataclasses

import config
from memory import count_run
from toolset import Outcome

@dataclasses.dataclass(frozen=True)
class Decision:
    guard: str
    allowed: bool
    reason: str = ""
    propose: bool = False       # the blocked write becomes the proposal put to the user


ALLOW = Decision("all", True)


def screen(pending, memory, budget=None):
    """Split a turn's calls into those allowed to run and those blocked (id → Outcome)."""
    allowed, blocked, turn = [], {}, _Turn(memory)
    for call in pending:
        decision = turn.decide(call, budget)
        if decision.allowed:
            allowed.append(call)
            turn.note(call)
        else:
            extra = turn.proposal_for(call, decision.reason) if decision.propose else {}
            blocked[call.id] = Outcome({"error": decision.reason, "blocked_by": decision.guard, **extra},
                                       status="blocked", guard=decision.guard)
            turn.blocked[call.signature] = turn.blocked.get(call.signature, 0) + 1
    return allowed, blocked


class _Turn:
    """Memory as it will be when the calls allowed so far in this turn have run."""

    def __init__(self, memory):
        self.memory = memory
        self.plan, self.marks = memory.plan, dict(memory.marks)
        self.runs, self.recent, self.blocked = dict(memory.runs), list(memory.recent), dict(memory.blocked)
        self.proposed, self.wrote, self.seen = False, False, 0

    def note(self, call):
        count_run(self.runs, self.recent, call.signature)
        if call.name == "set_plan":
            self.plan = [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(call.args["steps"], 1)]
            self.marks = {}
        elif call.name == "mark_step":
            self.marks[call.args["index"]] = {"status": call.args["status"]}

    def decide(self, call, budget):
        self.seen += 1
        for check in (self.repeated, self.arguments, self.too_many, self.budget, self.spin, self.plan_first,
                      self.plan_order, self.provenance, self.unconfirmed_write):
            decision = check(call, budget)
            if not decision.allowed:
                return decision
        return ALLOW

    def arguments(self, call, budget):
        return Decision("arguments", call.problem is None, call.problem or "")

    def too_many(self, call, budget):
        over = self.seen > config.MAX_CALLS_PER_TURN
        return Decision("too_many_calls", not over, f"一轮最多执行 {config.MAX_CALLS_PER_TURN} 个调用，这个没有执行")

    def budget(self, call, budget):
        over = budget is not None and self.memory.used_tokens > budget
        return Decision("budget", not over, f"已用 {self.memory.used_tokens} tokens，超过预算 {budget}，本次运行停止")

    def spin(self, call, budget):
        sig = call.signature
        if self.runs.get(sig, 0) >= config.SPIN_REPEATS:
            return Decision("spin", False, f"相同的调用已执行 {self.runs[sig]} 次（打转），请换参数、换做法或直接回答")
        last = self.recent[-3:]
        if len(last) == 3 and last[0] == last[2] != sig == last[1]:
            return Decision("spin", False, "两个调用来回交替（A-B-A-B 打转），请换做法或直接回答")
        return ALLOW

    def repeated(self, call, budget):
        """A call blocked before, sent again unchanged with nothing new since: a spin, whatever
        blocked it (checked first, so that bad arguments sent again are counted too)."""
        if self.blocked.get(call.signature):
            return Decision("spin", False, "这个调用刚被拦截过，之后没有任何新情况，原样再发也会被拦截（打转）；"
                            "请按之前的错误提示修改参数，或换个做法")
        return ALLOW

    def plan_first(self, call, budget):
        need = call.kind != "state" and not self.plan
        return Decision("plan_first", not need, "请先调用 set_plan 制定计划，再调用业务工具")

    def plan_order(self, call, budget):
        if call.kind == "state":
            return ALLOW
        missing = [t for t in config.WRITE_PREREQUISITES.get(call.name, ()) if t not in self.memory.done_tools]
        if missing:
            return Decision("plan_order", False, f"{call.name} 之前必须先成功调用：{', '.join(missing)}")
        steps = [s for s in self.plan if s.get("tool") == call.name]
        step = next((s for s in steps if self.status(s) != "done"), steps[-1] if steps else None)
        undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(self.plan)
                  and self.status(self.plan[d - 1]) != "done"]
        return Decision("plan_order", not undone,
                        f"计划第 {step and step['index']} 步依赖的第 {undone} 步还没完成，请先完成它们")

    def status(self, step):
        mark = self.marks.get(step["index"], {}).get("status")
        return "done" if mark == "done" or step.get("tool") in self.memory.done_tools else mark or "pending"

    def provenance(self, call, budget):
        args = call.args
        if call.name == "book_hotel" and args["hotel_id"] not in self.memory.hotels:
            return Decision("provenance", False, f"hotel_id {args['hotel_id']} 不在本次运行的酒店搜索结果里，"
                            f"只能用：{', '.join(sorted(self.memory.hotels)) or '（尚未搜索）'}")
        if call.name == "get_weather" and "latitude" in args and not any(
                _same_place(args, loc) for loc in self.memory.locations):
            return Decision("provenance", False, "经纬度必须来自本次运行 search_location 的结果")
        return ALLOW

    def unconfirmed_write(self, call, budget):
        if call.kind != "write":
            return ALLOW
        memory = self.memory
        done = memory.booking_for(call.args)
        if done:
            return Decision("unconfirmed_write", False, f"这笔预订已经完成（订单号 {done.get('booking_id')}），不要重复预订")
        missing = self.unconfirmed(call)
        if not missing:
            if self.wrote:
                return Decision("unconfirmed_write", False, "一次确认只授权一次预订，本轮已经执行过这笔预订")
            self.wrote = True
            return ALLOW
        if self.proposed:
            return Decision("unconfirmed_write", False, "一次只能提出一个预订，等用户确认后再说")
        if memory.confirmed:
            return Decision("unconfirmed_write", False, f"这与用户确认的方案不一致（{missing}），没有执行；"
                            "已作为新提案，需要用户再次确认", propose=True)
        return Decision("unconfirmed_write", False, "预订需要用户确认，没有执行，已作为提案交给用户。请向用户说明提案"
                        "（酒店、房型、日期、晚数、总价）并停止调用工具，等用户回复「确认」", propose=True)

    def unconfirmed(self, call):
        """Why the user's confirmation does not cover this write ('' when it does)."""
        memory = self.memory
        if not memory.confirmed:
            return "用户还没有确认"
        if memory.proposal is not None:
            differ = [k for k, _ in call.effect if call.args.get(k) != memory.proposal.get(k)]
            return "、".join(f"{k}={call.args.get(k)!r}，提案是 {memory.proposal.get(k)!r}" for k in differ)
        return "、".join(f"{k}={call.args.get(k)!r} 不是用户确认的方案里写明的" for k in memory.unshown(call))

    def proposal_for(self, call, reason):
        """The blocked write as the proposal the user will be asked to confirm."""
        self.proposed = True
        proposal = {k: call.args[k] for k, _ in call.effect}
        hotel = self.memory.hotels.get(proposal.get("hotel_id"), {})
        price = hotel.get("prices", {}).get(proposal.get("room_type"))
        nights = proposal.get("nights")
        proposal.update(tool=call.name, hotel_name=hotel.get("name"), price_per_night=price,
                        total=price * nights if isinstance(price, (int, float)) and isinstance(nights, int) else None)
        if self.memory.confirmed:
            proposal["why"] = reason
        return {"proposal": proposal}


def _same_place(args, location):
    try:
        return (round(float(args["latitude"]), 4) == round(float(location["latitude"]), 4)
                and round(float(args["longitude"]), 4) == round(float(location["longitude"]), 4))
    except (KeyError, TypeError, ValueError):
        return False

