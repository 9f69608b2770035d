"""Traces from the library (issue 47, finding 3): a run driven with handloop.start/run and handloop.confirm/run
exports its spans with the same environment variables as the command line, to a real OTLP/HTTP collector
(tests/otlp_collector.py); the audit file and the trace page name the model; `--check` of those spans reads the
user's confirmation as the agent's own guards do (the agent reading), English and Chinese."""
import json
import os
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

import handloop                                      # noqa: E402
from conftest import ROOT, read_audit                # noqa: E402
from otlp_collector import Collector                 # noqa: E402

AGENTS = {"en": "fn_agent", "zh": "front_desk"}


@pytest.fixture
def collector():
    made = Collector()
    yield made
    made.close()


def agent_of(language, monkeypatch):
    monkeypatch.setenv("DESK_LANG", language)
    monkeypatch.setenv("DESK_ANSWER", "cancel")
    monkeypatch.syspath_prepend(os.path.join(ROOT, "tests"))
    sys.modules.pop(AGENTS[language], None)             # read with this language
    return __import__(AGENTS[language]).AGENT


@pytest.mark.parametrize("language", sorted(AGENTS))
def test_a_library_run_leaves_as_spans_names_its_model_and_is_judged_with_the_agent_reading(
        tmp_path, collector, monkeypatch, language):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("CLINIC_DB", str(tmp_path / "clinic.db"))
    agent, audit_dir = agent_of(language, monkeypatch), str(tmp_path / "audit")
    model = handloop.offline_model(agent.offline, name="desk-model-1")
    try:
        r, ts = handloop.start(agent, "lib", audit_dir=audit_dir)
        try:
            handloop.run(r, model, ts)
        finally:
            ts.close()
        assert r.status == "suspended"
        r, ts = handloop.confirm(agent, "lib", audit_dir=audit_dir)
        try:
            handloop.run(r, model, ts)
        finally:
            ts.close()
    finally:
        model.close()
    snap = read_audit(audit_dir, "lib")
    assert snap["status"] == "done" and snap["model"] == "desk-model-1"
    spans = collector.spans()
    stretches = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(stretches) == 2 and {s["attributes"]["gen_ai.conversation.id"] for s in stretches} == {"lib"}
    assert {s["attributes"]["gen_ai.request.model"] for s in spans if s["name"].startswith("chat")} == {"desk-model-1"}
    from handloop.cli import view
    assert view.run("lib", audit_dir) == 0
    page = open(os.path.join(audit_dir, "trace-lib.html"), encoding="utf-8").read()
    assert "desk-model-1" in page
    from handloop.cli import check as check_cli
    target = tmp_path / "spans.json"
    target.write_text(json.dumps({"resourceSpans": [r for q in collector.requests for r in q["resourceSpans"]]}))
    entry = check_cli.check_file(str(target), audit_dir=audit_dir, language=None)
    assert entry["error"] is None and (entry["format"], entry["agent"]) == ("otlp", agent.name)
    assert entry["reading"] == "agent"
    assert {v["id"]: v["verdict"] for v in entry["checks"]}["write_after_confirmation"] == "pass"

