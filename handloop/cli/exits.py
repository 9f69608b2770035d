"""How the command line ends: the exit code of each way a run stands, bad usage the user can fix,
and the one error line it prints for a failure. Nothing else.

Exit codes: 0 done or suspended (awaiting the user); 1 stopped (guard, budget, max turns), an
internal error of our own (the run recorded error/internal, or nothing touched when it came before
the run was reopened) or a check or self-test failed; 2 bad usage or input; 3 the model service
failed; 130 interrupted (Ctrl-C or SIGTERM: the run is recorded stopped/interrupted). No traceback
reaches the user for any of these.
"""
from .. import texts

EXIT = {"done": 0, "suspended": 0, "stopped": 1, "error": 3, "running": 3}
INTERNAL = 1               # an exception of our own: as a stopped run


def exit_code(status, reason=""):
    """The exit code of a run that ended in `status` for `reason`."""
    return INTERNAL if (status, reason) == ("error", "internal") else EXIT[status]


class UsageError(Exception):
    """Bad usage the user can fix (exit 2)."""


def error_line(exc, agent=None, what=None):
    """An error line: what the error says, in the agent's language where it carries a texts.Said
    (else as it was said: an English run's refusals are English), with the prefix in the same
    language. Without an agent: the language the error names (`exc.language`: a damaged audit file's
    recorded agent's, when that much of it could be read), else Chinese."""
    language = getattr(exc, "language", None)
    say = agent.say if agent else texts.of(language) if language in texts.LANGUAGES else texts.ZH_TEXTS
    told = texts.told(exc, say)
    told = say(what, error=told) if what else told
    return ("错误：" if texts.CJK.search(told) else "error: ") + told
