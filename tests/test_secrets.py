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

from conftest import ROOT, read_audit, run_agent
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
