"""A run's parts, below the command line: the agent, loaded from an agent file (`load_file`: the Python file that
declares it as AGENT).

Invariants: below the command line (cli/ and durable/ both build runs through it); never imports tools.py or the
demo; every refusal is a runs.Refused naming what is wrong and what the user can do.
"""
import dataclasses
import os

from . import runs
from . import texts

Refused = runs.Refused

__all__ = ["load_file"]


def load_file(path):
    """The agent a Python file declares as AGENT (agents.Agent), its `file` set to the file's absolute
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
    agent = getattr(module, "AGENT", None)
    if not isinstance(agent, Agent):
        raise Refused(f"--agent {path}: the file must define AGENT = handloop.Agent(...)")
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
