"""Start-up: wall time of CLI modes in a fresh process, import time of each module, and the time
from spawning `python agent.py` to its first model request.

`--check` and `--selftest` are measured when this checkout's agent.py offers them (they are
built on another branch); otherwise they are skipped with a note. For them, and for --help,
the run also reports whether `openai` got imported (it must not be).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench import workload

ROOT = workload.ROOT
AGENT = os.path.join(ROOT, "agent.py")
MODULES = ("config", "tools", "toolset", "memory", "guards", "executor", "audit", "model", "loop", "endpoint", "offline",
           "agent", "checks", "selftest", "mcp_tools")


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_")) and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", **extra)
    return env


def _wall(args, reps, cwd, env=None):
    """Median wall seconds of `python ARGS` (after one warm-up), its exit code, and whether
    `openai` got imported (one more run under -X importtime)."""
    walls, code = [], None
    for i in range(reps + 1):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *args], cwd=cwd, env=env or _env(), capture_output=True, timeout=120)
        if i:                                    # the first one warms the disk cache and __pycache__
            walls.append(time.perf_counter() - started)
        code = done.returncode
    traced = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=cwd, env=env or _env(),
                            capture_output=True, text=True, timeout=120)
    imported = any(line.split("|")[-1].strip() == "openai" for line in traced.stderr.splitlines())
    return {"seconds": statistics.median(walls), "exit": code, "imports_openai": imported}


def _modes():
    done = subprocess.run([sys.executable, AGENT, "--help"], capture_output=True, text=True, env=_env(), timeout=60)
    return done.stdout


def cli(reps=5):
    """--help always; --check and --selftest when agent.py has them."""
    folder = tempfile.mkdtemp(prefix="bench-startup-")
    try:
        out = {"--help": _wall([AGENT, "--help"], reps, folder)}
        help_text = _modes()
        if "--check" in help_text:
            subprocess.run([sys.executable, AGENT, "--run-id", "s1"], cwd=folder, env=_env(), capture_output=True,
                           timeout=120)
            out["--check"] = _wall([AGENT, "--check", "s1"], reps, folder)
        else:
            out["--check"] = {"skipped": "agent.py in this checkout has no --check mode yet"}
        if "--selftest" in help_text:
            out["--selftest"] = _wall([AGENT, "--selftest"], reps, folder)
        else:
            out["--selftest"] = {"skipped": "agent.py in this checkout has no --selftest mode yet"}
        out["offline run (python agent.py)"] = _wall([AGENT], reps, folder)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def imports():
    """Self and cumulative import time (ms) of each project module in a fresh interpreter."""
    out = {}
    for name in MODULES:
        if not os.path.exists(os.path.join(ROOT, name + ".py")):
            out[name] = None
            continue
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {name}"], cwd=ROOT, env=_env(),
                              capture_output=True, text=True, timeout=60)
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == name:
                out[name] = {"self_ms": int(parts[0].split()[-1]) / 1000, "cumulative_ms": int(parts[1]) / 1000}
    return out


def first_request(reps=5):
    """Seconds from spawning `python agent.py` (online path, an OpenAI-compatible endpoint on
    127.0.0.1 answered by the offline model) to the endpoint receiving the first request."""
    from handloop.demo import offline
    from handloop.llm.endpoint import Endpoint
    seen, ready = [], threading.Event()

    def respond(request):
        if not ready.is_set():
            seen.append(time.perf_counter())
            ready.set()
        return offline.respond(request)

    endpoint = Endpoint(respond)
    folder = tempfile.mkdtemp(prefix="bench-first-")
    firsts, walls = [], []
    try:
        for i in range(reps + 1):
            ready.clear()
            seen.clear()
            started = time.perf_counter()
            done = subprocess.run([sys.executable, AGENT, "--run-id", f"f{i}"], cwd=folder, capture_output=True,
                                  text=True, timeout=120,
                                  env=_env(OPENAI_API_KEY="bench-key", OPENAI_BASE_URL=endpoint.url, AGENT_MODEL="bench"))
            if done.returncode != 0 or not seen:
                raise RuntimeError(f"agent.py exited {done.returncode}: {done.stderr[-500:]}")
            if i:
                firsts.append(seen[0] - started)
                walls.append(time.perf_counter() - started)
    finally:
        endpoint.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {"first_request_s": statistics.median(firsts), "whole_run_s": statistics.median(walls), "reps": reps}
