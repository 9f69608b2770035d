"""Secrets stay with their server and contents stay home (issue 36), through the command line: each MCP token
goes only to the server that declared it (AGENT_MCP_TOKEN only to the one --mcp-url names), a missing token is
named by the variable that should hold it, no password of a URL nor any header value is printed, recorded or
exported; without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT no span carries a tool's error, a guard's
reason or any other content; a collector's answer that is not a success (a redirect too) is "Trace not
exported", one line. Real servers on 127.0.0.1: our MCP server (mcp/http_server.py, the token required)
recording what each request carried, and the OTLP collector of tests/otlp_collector.py."""
import json
import os
import threading

import pytest

from conftest import ROOT, read_audit, run_agent, run_cli
from handloop.demo import weather_server
from handloop.mcp import http_server as mcp_http_server

WEATHER = os.path.join(ROOT, "tests", "secret_weather.py")
CLINIC = os.path.join(ROOT, "tests", "secret_clinic.py")
GEO, SKY, SHELL = "geo-token-1111", "sky-token-2222", "shell-token-9999"
PASSWORD = "hunter2-pw-5555"
LANGUAGES = ["en", "zh"]


class Recording(mcp_http_server.MCPHTTPServer):
    """Our MCP weather server over HTTP in this process, requiring `token` (None: none), keeping the
    Authorization header of every request it was sent (None when there was none)."""

    def __init__(self, token):
        self.seen = []
        seen = self.seen

        class Handler(mcp_http_server.Handler):
            def do_POST(self):
                seen.append(self.headers.get("Authorization"))
                super().do_POST()

            def do_DELETE(self):
                seen.append(self.headers.get("Authorization"))
                super().do_DELETE()

        super().__init__(("127.0.0.1", 0), lambda: weather_server.engine(weather_server.OfflineWeather()), token)
        self.RequestHandlerClass = Handler
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        self.shutdown()
        self.server_close()
        self.thread.join(5)


@pytest.fixture
def servers():
    """servers(token) → a Recording server; all stopped at the end."""
    started = []

    def start(token=None):
        started.append(Recording(token))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def everything(tmp_path, *outputs):
    """All the text a person or a program can read after the runs: what they printed and every file they wrote."""
    texts = [o.stdout + o.stderr for o in outputs]
    for folder, _, files in os.walk(tmp_path):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                texts.append(f.read().decode("utf-8", "replace"))
    return "\n".join(texts)


def page(tmp_path, run_id):
    """The run's --trace page, written and read back (it must hold no secret either)."""
    shown = run_agent("--trace", run_id, "--audit-dir", str(tmp_path / "audit"), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    return shown


# ---------------------------------------------------------------- finding 1: tokens, passwords, header values
@pytest.mark.parametrize("language", LANGUAGES)
def test_each_mcp_server_gets_its_own_token_and_never_the_shells(tmp_path, servers, language):
    geo, sky = servers(GEO), servers(SKY)
    env = {"GEO_URL": geo.url, "SKY_URL": sky.url, "GEO_TOKEN": GEO, "SKY_TOKEN": SKY, "AGENT_MCP_TOKEN": SHELL,
           "SECRET_LANG": language, "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_agent("--agent", WEATHER, "--offline", "--run-id", "w1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert read_audit(tmp_path / "audit", "w1")["status"] == "done"
    assert geo.seen and set(geo.seen) == {f"Bearer {GEO}"}
    assert sky.seen and set(sky.seen) == {f"Bearer {SKY}"}
    shown = page(tmp_path, "w1")
    assert not [s for s in (GEO, SKY, SHELL) if s in everything(tmp_path, done, shown)]


def test_a_spawned_mcp_server_gets_no_other_servers_token(tmp_path, servers):
    geo, given = servers(GEO), tmp_path / "sky-env.json"
    env = {"GEO_URL": geo.url, "GEO_TOKEN": GEO, "SKY_TOKEN": SKY, "AGENT_MCP_TOKEN": SHELL, "SKY_ENV_FILE": str(given),
           "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_agent("--agent", WEATHER, "--offline", "--run-id", "w5", cwd=tmp_path, env=env)
    assert done.returncode == 0 and read_audit(tmp_path / "audit", "w5")["status"] == "done", done.stderr
    received = json.loads(given.read_text(encoding="utf-8"))
    assert received["SKY_ENV_FILE"] == str(given) and "PATH" in received         # our environment, but
    assert not {"GEO_TOKEN", "AGENT_MCP_TOKEN"} & set(received) and GEO not in json.dumps(received)
    assert set(geo.seen) == {f"Bearer {GEO}"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_agent_mcp_token_goes_only_to_the_server_mcp_url_names(tmp_path, servers, language):
    geo, sky, other = servers(GEO), servers(SKY), servers(SHELL)
    env = {"GEO_URL": geo.url, "SKY_URL": sky.url, "GEO_TOKEN": GEO, "SKY_TOKEN": SKY, "AGENT_MCP_TOKEN": SHELL,
           "SECRET_LANG": language, "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_agent("--agent", WEATHER, "--offline", "--mcp", "--mcp-url", other.url, "--run-id", "w2", cwd=tmp_path,
                     env=env)
    assert done.returncode == 0, done.stderr
    snap = read_audit(tmp_path / "audit", "w2")
    assert snap["status"] == "done" and snap["mcp_url"] == other.url
    assert geo.seen == []                                       # the first server's own URL: not asked at all
    assert other.seen and set(other.seen) == {f"Bearer {SHELL}"}      # the one --mcp-url names: AGENT_MCP_TOKEN
    assert sky.seen and set(sky.seen) == {f"Bearer {SKY}"}
    assert not [s for s in (GEO, SKY, SHELL) if s in everything(tmp_path, done)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_declared_token_that_is_not_set_is_named_by_its_own_variable(tmp_path, servers, language):
    geo, sky = servers(GEO), servers(SKY)
    env = {"GEO_URL": geo.url, "SKY_URL": sky.url, "GEO_TOKEN": GEO, "AGENT_MCP_TOKEN": SHELL,
           "SECRET_LANG": language, "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    refused = run_agent("--agent", WEATHER, "--offline", "--run-id", "w3", cwd=tmp_path, env=env)
    assert refused.returncode == 3 and "Traceback" not in refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "SKY_TOKEN" in line and "AGENT_MCP_TOKEN" not in line and sky.url in line and "401" in line
    assert ("token" in line) == (language == "en") and ("令牌" in line) == (language == "zh")
    assert sky.seen and set(sky.seen) == {None}                 # asked once, with no token: never the shell's
    assert set(geo.seen) == {f"Bearer {GEO}"}
    assert not [s for s in (GEO, SHELL) if s in everything(tmp_path, refused)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_password_in_a_declared_mcp_url_is_refused_and_never_printed(tmp_path, servers, language):
    sky = servers(SKY)
    port = sky.server_address[1]
    env = {"GEO_URL": f"http://ann-user:{PASSWORD}@127.0.0.1:{port}/mcp", "SKY_URL": sky.url, "SKY_TOKEN": SKY,
           "SECRET_LANG": language, "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    refused = run_agent("--agent", WEATHER, "--offline", "--run-id", "w4", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "***@127.0.0.1" in refused.stderr and "geo" in refused.stderr
    assert PASSWORD not in everything(tmp_path, refused) and "ann-user" not in refused.stderr
    assert sky.seen == []


@pytest.mark.parametrize("how", ["option", "environment"])
@pytest.mark.parametrize("agent", [None, WEATHER])
def test_a_password_in_the_mcp_url_given_is_refused_and_never_printed(tmp_path, servers, how, agent):
    sky = servers(SKY)
    url = f"http://ann-user:{PASSWORD}@127.0.0.1:{sky.server_address[1]}/mcp"
    env = {"GEO_URL": sky.url, "SKY_URL": sky.url, "AGENT_AUDIT_DIR": str(tmp_path / "audit"),
           **({"AGENT_MCP_URL": url} if how == "environment" else {})}
    args = (["--agent", agent] if agent else []) + ["--offline", "--mcp"] + (["--mcp-url", url] if how == "option" else [])
    refused = run_agent(*args, cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "***@127.0.0.1" in refused.stderr and PASSWORD not in everything(tmp_path, refused)
    assert sky.seen == []


# ---------------------------------------------------------------- finding 1: the OTLP endpoint and its headers
@pytest.fixture
def collector():
    from otlp_collector import Collector
    made = []

    def start(**options):
        made.append(Collector(**options))
        return made[-1]

    yield start
    for c in made:
        c.close()


def not_exported(done):
    """The lines saying no trace left, in either language (the OTel tests run the CLI in a process of its own:
    the SDK logs through the logging module, which pytest takes over in a forked child)."""
    return [line for line in done.stderr.splitlines() if line.startswith(("Trace not exported", "未导出追踪"))]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_password_in_the_otlp_endpoint_is_never_printed(tmp_path, collector, language):
    pytest.importorskip("opentelemetry.sdk")
    refusing = collector(status=503)
    endpoint = refusing.endpoint.replace("http://", f"http://otel:{PASSWORD}@")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1", "SECRET_LANG": language,
           "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_cli("--agent", CLINIC, "--offline", "--run-id", "c1", cwd=tmp_path, env=env)
    assert done.returncode == 0 and read_audit(tmp_path / "audit", "c1")["status"] == "suspended"
    lines = not_exported(done)
    assert len(lines) == 1 and "***@127.0.0.1" in lines[0] and "503" in lines[0], done.stderr
    assert PASSWORD not in everything(tmp_path, done) and "Traceback" not in done.stderr
    assert refusing.headers                                    # it was asked (and said no)


@pytest.mark.parametrize("headers", ["x-api-key=hdr-secret-7777", "x-api-key:hdr-secret-7777",
                                     "x-api-key=hdr secret 7777\n", "Authorization=Bearer hdr-secret-7777,bad"])
def test_no_header_value_of_otel_exporter_otlp_headers_is_ever_printed(tmp_path, collector, headers):
    """Well formed (the collector refuses it), malformed (the SDK's own warning would print it whole), with a line
    break (the HTTP client's own error would quote it), one of two parts malformed."""
    pytest.importorskip("opentelemetry.sdk")
    refusing = collector(status=401)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": refusing.endpoint, "OTEL_EXPORTER_OTLP_HEADERS": headers,
           "OTEL_EXPORTER_OTLP_TIMEOUT": "1", "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_cli("--agent", CLINIC, "--offline", "--run-id", "c2", cwd=tmp_path, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert len(not_exported(done)) == 1, done.stderr
    assert "hdr-secret" not in everything(tmp_path, done) and "hdr secret" not in everything(tmp_path, done)
    if headers.startswith("x-api-key="):                         # sent where it belongs, and only there
        assert [h.get("x-api-key") for h in refusing.headers] == [headers.partition("=")[2].strip()]


# ---------------------------------------------------------------- finding 2: no content without the opt-in
def _run_clinic(tmp_path, collector, language, capture):
    received = collector()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": received.endpoint, "SECRET_LANG": language,
           "AGENT_AUDIT_DIR": str(tmp_path / "audit"),
           **({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"} if capture else {})}
    done = run_cli("--agent", CLINIC, "--offline", "--run-id", "c3", cwd=tmp_path, env=env)
    assert done.returncode == 0 and not not_exported(done), done.stderr
    snap = read_audit(tmp_path / "audit", "c3")
    assert snap["status"] == "suspended"
    return received, snap


@pytest.mark.parametrize("language", LANGUAGES)
def test_without_the_opt_in_no_span_carries_a_tools_error_a_guards_reason_or_any_content(tmp_path, collector,
                                                                                         language):
    import secret_clinic
    received, snap = _run_clinic(tmp_path, collector, language, capture=False)
    sent = json.dumps(received.requests, ensure_ascii=False)
    assert not [p for p in secret_clinic.PRIVATE if p in sent]
    recorded = json.dumps(snap["messages"], ensure_ascii=False)
    assert all(p in recorded for p in secret_clinic.PRIVATE)       # the record has them all: the spans left them out
    for text in [m["content"] for m in snap["messages"] if isinstance(m.get("content"), str)]:
        assert text not in sent                                    # no message's words, whoever said them
    spans = {s["name"]: s for s in received.spans()}
    failed, blocked = spans["execute_tool check_account"], spans["execute_tool admit"]
    assert failed["status"]["code"] == "STATUS_CODE_ERROR" and failed["attributes"]["error.type"] == "tool_error"
    assert blocked["attributes"]["handloop.guard"] == "provenance" and blocked["attributes"]["error.type"] == "blocked"
    assert blocked["status"]["code"] == "STATUS_CODE_ERROR" and "handloop.guard.reason" not in blocked["attributes"]
    assert spans["execute_tool find_patient"]["attributes"]["handloop.tool.status"] == "ok"
    agent = spans["invoke_agent clinic"]
    assert agent["attributes"]["handloop.turns"] == len(snap["trace"]) >= 3          # reads, write, words (nudged)
    assert agent["attributes"]["handloop.status"] == "suspended" and snap["memory"]["proposals"] == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_with_the_opt_in_the_same_spans_carry_the_contents(tmp_path, collector, language):
    import secret_clinic
    received, _ = _run_clinic(tmp_path, collector, language, capture=True)
    spans = {s["name"]: s for s in received.spans()}
    failed, blocked = spans["execute_tool check_account"], spans["execute_tool admit"]
    assert secret_clinic.ACCOUNT in failed["status"]["message"]
    assert secret_clinic.INVENTED in blocked["attributes"]["handloop.guard.reason"]
    assert secret_clinic.INVENTED in blocked["attributes"]["gen_ai.tool.call.arguments"]


# ---------------------------------------------------------------- finding 3: an answer that is not a success
@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_collector_redirecting_elsewhere_is_trace_not_exported_in_one_line(tmp_path, collector, status, language):
    pytest.importorskip("opentelemetry.sdk")
    elsewhere = collector()
    redirecting = collector(status=status, location=elsewhere.endpoint + "/v1/traces")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": redirecting.endpoint, "SECRET_LANG": language,
           "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=hdr-secret-7777", "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    done = run_cli("--agent", CLINIC, "--offline", "--run-id", "c4", cwd=tmp_path, env=env)
    assert done.returncode == 0 and read_audit(tmp_path / "audit", "c4")["status"] == "suspended"
    lines = not_exported(done)
    assert len(lines) == 1 and str(status) in lines[0] and redirecting.endpoint in lines[0], done.stderr
    assert len(redirecting.headers) == 1                         # asked once
    assert elsewhere.headers == [] and elsewhere.requests == []  # never followed: no span, no header elsewhere
    assert "hdr-secret" not in everything(tmp_path, done)


# ---------------------------------------------------------------- Temporal's own spans: the same two rules
def test_temporal_spans_carry_no_exceptions_words_without_the_opt_in_and_a_redirect_is_not_sent(collector,
                                                                                                monkeypatch):
    """The contrib's interceptor records an activity's exception (its message and stack trace) and puts its words
    in the status: they leave as the exception's type and the status code only; a redirecting collector makes
    flush() say False (the command line's "Trace not exported")."""
    pytest.importorskip("temporalio.contrib.opentelemetry")
    from opentelemetry.trace import Status, StatusCode
    from otlp_collector import plain
    from handloop.trace import temporal
    words = "no bed for Ann Smith, account 55-1234"
    for capture in (False, True):
        received = collector()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", received.endpoint)
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true" if capture else "false")
        span = temporal._provider().get_tracer("t").start_span("RunActivity:agent.tool")
        span.record_exception(ValueError(words))
        span.set_status(Status(StatusCode.ERROR, f"ValueError: {words}"))
        span.end()
        assert temporal.flush()
        [sent] = received.spans()
        [event] = sent["events"]
        assert event["name"] == "exception" and sent["status"]["code"] == "STATUS_CODE_ERROR"
        assert (words in json.dumps(received.requests)) == capture
        assert plain(event.get("attributes", []))["exception.type"] == "ValueError"
    elsewhere = collector()
    redirecting = collector(status=307, location=elsewhere.endpoint + "/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", redirecting.endpoint)
    temporal._provider().get_tracer("t").start_span("RunActivity:agent.ask").end()
    assert temporal.flush() is False and len(redirecting.headers) == 1 and elsewhere.headers == []
    assert temporal.flush() is True                               # said once: nothing new failed since


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_password_in_the_model_services_url_is_never_printed(tmp_path, language):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                                 # nothing listens there once closed
    env = {"OPENAI_API_KEY": "sk-test-not-shown", "OPENAI_BASE_URL": f"http://ann-user:{PASSWORD}@127.0.0.1:{port}/v1",
           "AGENT_MODEL_RETRIES": "0", "SECRET_LANG": language, "AGENT_AUDIT_DIR": str(tmp_path / "audit")}
    failed = run_agent("--agent", CLINIC, "--run-id", "m1", cwd=tmp_path, env=env)
    assert failed.returncode == 3 and "Traceback" not in failed.stderr
    assert f"***@127.0.0.1:{port}" in failed.stdout + failed.stderr
    shown = everything(tmp_path, failed)
    assert PASSWORD not in shown and "ann-user" not in shown and "sk-test-not-shown" not in shown
