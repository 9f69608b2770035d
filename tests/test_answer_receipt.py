"""An answer that states, for a write that took effect, another amount or count than its receipt (issue 48, finding
8): "Paid bill B1: 1200 EUR." after a receipt of 120, 「三晚」 after a booking of two nights. The run's printout notes
it and --check fails answer_matches_receipt, in English and Chinese; the answer that states the receipt's own
numbers passes. A number is read beside the receipt field's own name or a unit the tool declares for it.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by stateless scripted
models; an agent file as a user writes one, and the Xi'an agent. Assertions read the audit file and the judge's
verdicts, and the printout's note by its catalogue text."""
import json

import pytest

import policies
from handloop import texts
from test_real_models import state

AGENT_FILE = '''
from handloop import Agent, Source, Tool

BILLS = [{{"bill_id": "B1", "payee": "Acme", "amount": 120}}]


def list_bills():
    return {{"bills": BILLS}}


def pay_bill(bill_id, amount):
    return {{"paid": bill_id, "amount": amount}}


AGENT = Agent(
    name="bank", language={language!r}, planning=False, confirm={confirm!r},
    instructions="You pay the user's bills.", goal="Pay my bill.",
    tools=[Tool("list_bills", "The user's unpaid bills.", {{"type": "object", "properties": {{}}}}, list_bills),
           Tool("pay_bill", "Pay one bill (a write).", {{"type": "object", "required": ["bill_id", "amount"],
                "properties": {{"bill_id": {{"type": "string"}}, "amount": {{"type": "integer"}}}}}}, pay_bill,
                kind="write", requires=("list_bills",), effect=(("bill_id", "id"),),
                units={{"amount": ("EUR", "欧元")}},
                sources=(Source(("bill_id", "amount"), "list_bills", ("bill_id", "amount"), "bills[]"),))])
'''
CONFIRM = {"en": ("confirm",), "zh": ("确认",)}
WRONG = {"en": "Paid bill B1: 1200 EUR.", "zh": "已支付账单 B1：1200 欧元。"}
RIGHT = {"en": "Paid bill B1: 120 EUR.", "zh": "已支付账单 B1：120 欧元。"}


def paying_model(final):
    """Lists the bill, pays it (proposed, then confirmed), then answers `final`."""
    def respond(request):
        talk = policies.Talk(request)
        if talk.ok("pay_bill"):
            return policies.say(final)
        if not talk.ok("list_bills"):
            return policies.calls(("list_bills", {}))
        blocked = talk.results[-1][0] == "pay_bill" and talk.last.get("role") == "tool"
        return policies.say("Please confirm the payment.") if blocked else \
            policies.calls(("pay_bill", {"bill_id": "B1", "amount": 120}))
    return respond


def judged(run, *more):
    out = run("--check", "r", "--json", *more)
    entry = json.loads(out.stdout)["files"][0]
    return out.returncode, {c["id"]: (c["verdict"], c["reason"]) for c in entry["checks"]}


@pytest.mark.parametrize("language", sorted(CONFIRM))
@pytest.mark.parametrize("right", [False, True])
def test_an_answer_stating_another_amount_than_the_receipt_fails_the_check(agent_files, tmp_path, language, right):
    final = (RIGHT if right else WRONG)[language]
    path, run = agent_files(paying_model(final), "bank_agent.py",
                            AGENT_FILE.format(language=language, confirm=CONFIRM[language]))
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    done = run("--agent", str(path), "--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "audit" / "run-r.json").read_text(encoding="utf-8"))
    assert (data["status"], data["memory"]["writes"][0]["receipt"]["amount"]) == ("done", 120)
    note = texts.of(language)("cli.contradicts", tool="pay_bill", arg="amount", named="1200", written="120")
    code, verdicts = judged(run)
    if right:
        assert code == 0 and verdicts["answer_matches_receipt"][0] == "pass" and note not in done.stdout
    else:
        assert note in done.stdout                                        # the printout says so, as the judge
        assert code == 1 and verdicts["answer_matches_receipt"][0] == "fail"
        assert "1200" in verdicts["answer_matches_receipt"][1] and "120" in verdicts["answer_matches_receipt"][1]


def booked_then_says(final):
    """The Xi'an eager model, whose final answer is `final`."""
    def respond(request):
        talk = policies.Talk(request)
        return policies.say(final) if talk.ok("book_hotel") else policies.eager(request)
    return respond


@pytest.mark.parametrize("final, fails", [("已为你订好古城墙酒店的 Suite，三晚。", True),
                                          ("已为你订好古城墙酒店的 Suite，两晚。", False)])
def test_a_chinese_answer_stating_another_count_of_nights_fails_the_check(cli, tmp_path, final, fails):
    run = cli(booked_then_says(final))
    assert run("--run-id", "r").returncode == 0
    assert run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, data["memory"]["booking"]["nights"]) == ("done", 2)
    code, verdicts = judged(run)
    assert (code, verdicts["answer_matches_receipt"][0]) == ((1, "fail") if fails else (0, "pass"))
    if fails:
        assert "nights" in verdicts["answer_matches_receipt"][1] and "3" in verdicts["answer_matches_receipt"][1]
