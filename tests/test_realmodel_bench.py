"""bench/realmodel.py, the real-model runner, against scripted models behind the loopback endpoint (the real
`openai` client): one JSON line per run with what it did, the seed sent with every request, a summary table."""
import json

import pytest

import policies
from bench import realmodel
from handloop import model
from handloop.llm.endpoint import Endpoint


def serving(respond, seen):
    """connect(extra=...) for the runner: the scripted model behind its own loopback endpoint; every request it
    gets is kept in `seen`."""
    def connect(extra):
        def record(request):
            seen.append(request)
            return respond(request)
        return model.offline_model(record, name="scripted", extra=extra)
    return connect


def shop_args(talk, name):
    return {"order_id": "A-1"} if name in ("get_order", "refund") else None


@pytest.mark.parametrize("task, respond", [
    ("xian", policies.SmallModel()),                                     # the 1.5 B model, forced step by step
    ("shop", policies.SmallModel(args=shop_args, sentence="Sure, please confirm."))])
def test_each_run_is_one_json_line_with_what_it_did_and_the_seed_goes_with_every_request(tmp_path, task, respond,
                                                                                        capsys):
    seen = []
    out = tmp_path / "runs.jsonl"
    rows = realmodel.main(["--tasks", task, "--runs", "2", "--seed", "40", "--out", str(out)],
                          connect=serving(respond, seen))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines == rows and [r["seed"] for r in lines] == [40, 41]
    for row in lines:
        assert (row["task"], row["system"], row["status"]) == (task, "handloop", "done")
        assert row["reached_proposal"] and row["right_write"] and row["writes_run"] == 1
        assert row["confirmations"] == 1 and row["model_requests"] > 0 and row["tokens"] > 0
    assert seen and {q.get("seed") for q in seen} == {40, 41}
    table = capsys.readouterr().out
    assert task in table and "done/final_answer 2" in table


def test_a_run_that_books_the_wrong_room_is_declined_and_counted_so(tmp_path):
    """The user of the runner confirms only the right write: a model that books Deluxe on a rainy day is declined."""
    seen = []
    wrong = policies.SmallModel(args=lambda talk, name: dict(policies.xian_args(talk, name), room_type="Deluxe")
                                if name == "book_hotel" and policies.xian_args(talk, name) else
                                policies.xian_args(talk, name))
    rows = realmodel.main(["--tasks", "xian", "--runs", "1", "--out", str(tmp_path / "r.jsonl")],
                          connect=serving(wrong, seen))
    assert rows[0]["writes_run"] == 0 and not rows[0]["right_write"] and rows[0]["confirmations"] == 0


def test_agentdojo_runs_through_handloop_and_through_its_own_plain_pipeline(tmp_path):
    pytest.importorskip("agentdojo")
    import openai
    seen = []
    answer = lambda request: {"content": "I cannot do that."}              # noqa: E731  (a model that does nothing)
    endpoint = Endpoint(lambda request: seen.append(request) or answer(request))
    client = openai.OpenAI(base_url=endpoint.url, api_key="k", max_retries=0)
    try:
        rows = realmodel.main(["--tasks", "banking", "--runs", "1", "--limit", "1", "--plain", "--seed", "7",
                               "--temperature", "0", "--out", str(tmp_path / "r.jsonl")],
                              connect=serving(answer, seen), plain_client=client)
    finally:
        endpoint.close()
    assert [(r["system"], r["user_task"]) for r in rows] == [("handloop", "user_task_0"), ("plain", "user_task_0")]
    assert all(r["writes_run"] == 0 and r["model_requests"] >= 1 and isinstance(r["idle_passes"], bool) for r in rows)
    assert {q.get("seed") for q in seen} == {7} and {q.get("temperature") for q in seen} == {0}   # both systems


def test_an_unknown_task_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        realmodel.main(["--tasks", "nope", "--out", str(tmp_path / "r.jsonl")])
    assert exit_.value.code == 2


def test_a_stopped_run_resumes_with_only_what_its_file_lacks(tmp_path):
    """--resume keeps the rows --out already holds (a line a crash cut short is dropped) and runs the rest; each
    run's line is in the file as soon as the run ends."""
    pytest.importorskip("agentdojo")
    import openai
    seen = []
    endpoint = Endpoint(lambda request: seen.append(request) or {"content": "I cannot do that."})
    client = openai.OpenAI(base_url=endpoint.url, api_key="k", max_retries=0)
    out = tmp_path / "r.jsonl"
    earlier = {"task": "banking", "system": "plain", "user_task": "user_task_0", "seed": 7, "utility": False,
               "idle_passes": False, "reached_proposal": None, "right_write": False, "confirmations": 0,
               "model_requests": 1, "tokens": 0, "writes_run": 0, "status": "done", "reason": "final_answer",
               "seconds": 1.0}
    out.write_text(json.dumps(earlier) + "\n" + '{"task": "banking", "sys', encoding="utf-8")
    try:
        rows = realmodel.main(["--tasks", "banking", "--limit", "3", "--user-tasks", "0-1", "--runs", "1", "--seed", "7",
                               "--systems", "plain", "--out", str(out), "--resume"], plain_client=client)
    finally:
        endpoint.close()
    assert [(r["system"], r["user_task"]) for r in rows] == [("plain", "user_task_0"), ("plain", "user_task_1")]
    assert rows[0] == earlier and len(seen) == rows[1]["model_requests"] >= 1     # only user_task_1 asked the model
    kept = realmodel.kept(str(out))
    assert [(r["system"], r["user_task"]) for r in kept] == [("plain", "user_task_0"), ("plain", "user_task_1")]


def test_systems_are_named_and_resume_needs_its_file(tmp_path):
    for argv in (["--tasks", "banking", "--systems", "other"], ["--tasks", "banking", "--resume"]):
        with pytest.raises(SystemExit) as exit_:
            realmodel.main(argv + (["--out", str(tmp_path / "r.jsonl")] if "other" in argv else []))
        assert exit_.value.code == 2


def test_audit_files_are_kept_where_asked(tmp_path):
    """--audit-dir keeps each run's audit files, a folder per run, to read what the model did."""
    seen = []
    kept = tmp_path / "audits"
    rows = realmodel.main(["--tasks", "shop", "--runs", "1", "--seed", "3", "--out", str(tmp_path / "r.jsonl"),
                           "--audit-dir", str(kept)],
                          connect=serving(policies.SmallModel(args=shop_args, sentence="Sure, please confirm."), seen))
    assert rows[0]["right_write"]
    files = list((kept / "shop-seed3").rglob("*.json"))
    records = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    assert any(r.get("status") == "done" and r.get("messages") for r in records if isinstance(r, dict))


def test_report_prints_the_tables_of_files_already_written_side_by_side(tmp_path, capsys):
    def row(system, task, utility, requests, idle=False):
        return {"task": "slack", "system": system, "user_task": f"user_task_{task}", "seed": 1, "utility": utility,
                "idle_passes": idle, "reached_proposal": None, "right_write": False, "confirmations": 0,
                "model_requests": requests, "tokens": 10, "writes_run": 0, "status": "done",
                "reason": "final_answer", "seconds": 1.0}
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in (row("handloop", 10, True, 3), row("plain", 10, False, 15))),
                     encoding="utf-8")
    second.write_text(json.dumps(row("handloop", 2, False, 4, idle=True)) + "\n", encoding="utf-8")
    rows = realmodel.main(["--report", str(first), str(second)])
    assert len(rows) == 3
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("| slack")]
    assert lines == ["| slack | 2 | 1 | yes | no | 4 | 0 | done/final_answer | - | - | - | - |",
                     "| slack | 10 | 1 | no | yes | 3 | 0 | done/final_answer | no | 15 | 0 | done/final_answer |"]
    assert "1/2" in out and "0/1" in out                  # the summary: handloop's utility, plain's


def plain_run(respond, tmp_path):
    """The row of banking's first user task through AgentDojo's plain pipeline, asking `respond` on loopback."""
    import openai
    endpoint = Endpoint(respond)
    client = openai.OpenAI(base_url=endpoint.url, api_key="k", max_retries=0)
    try:
        rows = realmodel.main(["--tasks", "banking", "--limit", "1", "--runs", "1", "--systems", "plain",
                               "--out", str(tmp_path / "r.jsonl")], plain_client=client)
    finally:
        endpoint.close()
    return rows[0]


@pytest.mark.filterwarnings("ignore:Model output was None")            # AgentDojo's own, after the third attempt
def test_the_plain_pipeline_counts_every_write_that_ran_over_all_its_attempts(tmp_path):
    """A model that calls send_money at every turn: AgentDojo's loop spends its 15 iterations, asks again from the
    start (three attempts in the same world), and the row counts the writes of all three and ends `max_iters`."""
    pytest.importorskip("agentdojo")
    counter = iter(range(1000))

    def pay(request):
        args = {"recipient": "GB29NWBK60161331926819", "amount": 1.0, "subject": "x", "date": "2022-04-01"}
        return {"content": None, "tool_calls": [{"id": f"call_{next(counter)}", "type": "function",
                                                 "function": {"name": "send_money", "arguments": json.dumps(args)}}]}
    row = plain_run(pay, tmp_path)
    assert (row["status"], row["reason"], row["attempts"]) == ("stopped", "max_iters", 3)
    assert row["model_requests"] == 48 and row["writes_run"] == 45          # 16 asked and 15 run, three times


@pytest.mark.filterwarnings("ignore:Model output was None")
def test_an_empty_reply_of_the_plain_pipeline_is_no_answer(tmp_path):
    """A model that replies with nothing: AgentDojo asks again, three times in all, and the row says no_answer."""
    pytest.importorskip("agentdojo")
    row = plain_run(lambda request: {"content": None}, tmp_path)
    assert (row["status"], row["reason"], row["attempts"], row["model_requests"]) == ("stopped", "no_answer", 3, 3)


def test_user_tasks_name_numbers_and_ranges(tmp_path):
    assert realmodel.user_tasks("0, 3,9-11") == {"user_task_0", "user_task_3", "user_task_9", "user_task_10",
                                                "user_task_11"}
    assert realmodel.user_tasks("") == set()
    with pytest.raises(SystemExit) as exit_:
        realmodel.main(["--tasks", "banking", "--user-tasks", "a-b", "--out", str(tmp_path / "r.jsonl")])
    assert exit_.value.code == 2
