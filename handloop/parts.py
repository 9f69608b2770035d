"""A run's parts, below the command line: the agent, loaded from an agent file (`load_file`: the Python file that
declares it as AGENT) or found again from what a run's audit file records of how it was loaded (`recorded`: its
file, or the importable "package.module:attribute" handloop.start found it bound to, agents.located), its tool set
(`tool_set`) and its model client (`chat`: online, or the agent's own offline model).

Invariants: below the command line (cli/ and durable/ both build runs through it); never imports tools.py or the
demo, and never picks an agent the record does not name (the command line alone falls back to the Xi'an agent, for
a record that names none); every refusal is a runs.Refused naming what is wrong and what the user can do (an agent
that cannot be loaded again: give it with --agent FILE).
"""
import dataclasses
import importlib
import os

from . import config
from . import model
from . import runs
from . import texts
from . import toolset
from .values import redacted_url

Refused = runs.Refused

__all__ = ["load_file", "recorded", "agent_of", "cannot_load", "needs_agent", "origin", "tool_set", "chat"]


def origin(agent) -> dict:
    """How `agent` can be loaded again, as a run records it: {"file": ..., "module": ...} (either may be None)."""
    return {"name": agent.name, "file": agent.file, "module": agent.module, "language": agent.language}


def agent_of(audit_dir, record):
    """The agent a run's record (its `agent`, or a starter's origin) says how to load; Refused, in one line, when it
    names no way or the way fails: --agent FILE is needed."""
    agent = recorded(audit_dir, record)
    if agent is None:
        raise cannot_load(record)
    return agent


def cannot_load(record, why=""):
    """The Refused of a run whose agent cannot be loaded again, said in the language the record names."""
    refused = Refused(needs_agent(record, why))
    language = record.get("language") if isinstance(record, dict) else None
    refused.language = language if language in texts.LANGUAGES else None
    return refused


def needs_agent(record, why=""):
    """What is said when a run's agent cannot be loaded again (one line, in the agent's language when shown)."""
    record = record if isinstance(record, dict) else {}
    how = record.get("module") or record.get("file")
    return texts.Said("resume.needs_agent", name=str(record.get("name") or "?"),
                      how=texts.Said("resume.loaded_from", how=str(how)) if how else texts.Said("resume.no_origin"),
                      why=f" ({why})" if why else "")


def recorded(audit_dir, record):
    """The agent a record says how to load: its importable module attribute ("package.module:attribute"; an
    attribute that is no Agent but a callable is called with the audit folder: the agent of the runs kept there),
    else its file (the module's own file, or an agent file); None when the record names neither. Refused, in one
    line, when the way it names fails."""
    if not isinstance(record, dict):
        return None
    reference, file = record.get("module"), record.get("file")
    if isinstance(reference, str) and reference:
        name, _, attribute = reference.partition(":")
        found = _imported(name, attribute, file, audit_dir, record)
        if found is None and isinstance(file, str) and os.path.isfile(file):
            found = load_file(file, attribute or "AGENT")
        if found is None:
            raise cannot_load(record)
        return dataclasses.replace(found, module=reference)
    if isinstance(file, str) and file:
        if not os.path.isfile(file):
            raise cannot_load(record)
        return load_file(file)
    return None


def _imported(name, attribute, file, audit_dir, record):
    """The agent at `name:attribute`, imported (the folder it was imported from, worked out from its recorded file,
    is searched after every other place); None when the module cannot be found."""
    from .agents import Agent
    if isinstance(file, str) and file:
        root = os.path.dirname(os.path.abspath(file))
        for _ in range(name.count(".") + (os.path.basename(file) == "__init__.py")):
            root = os.path.dirname(root)
        _Beside.of(root)
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            return None                    # the module itself is not here (one it imports missing is its error)
        raise cannot_load(record, f"{type(exc).__name__}: {exc}") from None
    except BaseException as exc:           # the user's own module failed: why
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise cannot_load(record, f"{type(exc).__name__}: {exc}") from None
    value = getattr(module, attribute, None)
    if callable(value) and not isinstance(value, Agent):
        value = value(audit_dir)
    if not isinstance(value, Agent):
        raise cannot_load(record, f"{name}.{attribute} is no handloop.Agent")
    return value


def load_file(path, attribute="AGENT"):
    """The agent a Python file declares as AGENT (`attribute`; agents.Agent), its `file` set to the file's absolute
    path; Refused saying what is wrong (no file, an error while importing it, no AGENT, a
    declaration mistake). Modules and packages beside the file are importable by their names, as
    under `python FILE` (see _Beside)."""
    import importlib.util
    import traceback
    from .agents import Agent
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise Refused(f"--agent {path}: no such file")
    name = "agent_file_" + "".join(c if c.isalnum() else "_" for c in path)
    try:
        _Beside.of(os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:        # a name no import machinery loads (not .py)
            raise ValueError("not a Python source file (.py)")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ValueError as exc:                          # a declaration mistake: names the tool and the field
        raise Refused(f"--agent {path}: {exc}") from None
    except BaseException as exc:                       # the user's own file failed: where, and why
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = next((f for f in reversed(traceback.extract_tb(exc.__traceback__)) if f.filename == path), None)
        line = f" (line {where.lineno})" if where else ""
        raise Refused(f"--agent {path}{line}: {type(exc).__name__}: {exc}") from None
    agent = getattr(module, attribute, None)
    if not isinstance(agent, Agent):
        raise Refused(f"--agent {path}: the file must define {attribute} = handloop.Agent(...)")
    try:
        runs.agent_policy(agent)                       # its policy, checked now: a mistake in it is one of the file's
    except ValueError as exc:
        raise Refused(f"--agent {path}: policy: {texts.told(exc, agent.say)}") from None
    return dataclasses.replace(agent, file=path)


class _Beside:
    """A meta-path finder for the top-level modules and packages in one agent file's folder: what
    `python FILE` makes importable by putting the folder first on sys.path, done without touching
    sys.path. It is consulted after every other finder, so a name the standard library or an
    installed package already owns keeps its module (a file in the user's folder never replaces
    what the loop itself imports); submodules are found through their package's __path__ as usual.
    One finder per folder, kept for the process: a tool may import its helpers lazily, at call time."""

    _folders: dict[str, "_Beside"] = {}

    def __init__(self, folder):
        self.folder = folder

    @classmethod
    def of(cls, folder):
        import sys
        if folder not in cls._folders:
            cls._folders[folder] = cls(folder)
            sys.meta_path.append(cls._folders[folder])
        return cls._folders[folder]

    def find_spec(self, name, path=None, target=None):
        if path is not None or "." in name:
            return None
        from importlib.machinery import PathFinder
        return PathFinder.find_spec(name, [self.folder], target)

    def invalidate_caches(self):
        pass


def tool_set(run_id, mode, agent, mcp_command=None, schemas=None, visible=None, mcp_url=None, mcp_token=None):
    """The run's tool set; in MCP mode it connects now, unless recorded `schemas` spare it that.
    `mcp_url`: the MCP server over HTTP instead of a process (`mcp_token`: its bearer token)."""
    return toolset.ToolSet(run_id, agent, mode, mcp_command=mcp_command if mode == "mcp" else None,
                           schemas=schemas if mode == "mcp" else None, visible=visible, mcp_url=mcp_url,
                           mcp_token=mcp_token)


def chat(env, offline=False, name=None, on_retry=None, agent=None, stream=True):
    """The model: (ask, close, what it is). Online when a key is set and not `offline`; else the agent's own
    offline model behind the loopback endpoint, through the same client (Refused when it has none). Streamed unless
    `stream` is false or the environment turns it off (AGENT_STREAM=0)."""
    say = agent.say if agent else texts.ZH_TEXTS
    limits = {"stream": stream and env.get("stream", True),
              "max_seconds": env.get("model_max_seconds", config.MODEL_MAX_SECONDS)}
    if env["api_key"] and not offline:
        name = name or env["model"]
        ask = model.connect(env["base_url"], env["api_key"], name, env["model_timeout"], env["model_retries"],
                            on_retry=on_retry, **limits)
        return ask, ask.close, say("cli.online", model=name, url=redacted_url(env["base_url"] or "https://api.openai.com/v1"))
    if agent is None or agent.offline is None:
        raise Refused(say("cli.no_offline", name=agent.name if agent else "?"))
    ask = model.offline_model(agent.offline, timeout=env["model_timeout"], retries=env["model_retries"],
                              on_retry=on_retry, **limits)
    why = "--offline" if offline else say("cli.no_key")
    return ask, ask.close, say("cli.offline", why=why, url=ask.url)
