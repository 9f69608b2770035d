"""--trace [RUN_ID]: write the run's HTML view beside its audit file and print the page's path. Nothing else.

Invariants: reads the audit file (audit.load checks it) and writes one file, `<audit-dir>/trace-<run_id>.html`,
atomically, through a temporary file it made (audit.replace: never through a link planted in the folder); the page is in the language of the agent the run recorded (or the one --agent names); a run that
cannot be found or read is one error line and exit 2, never a traceback.
"""
import os
import sys

from .. import audit
from .. import texts
from .exits import error_line


def run(target, audit_dir, named=None, cmd="handloop"):
    """Write the view of run `target` (empty: the latest) in `audit_dir`; the exit code. `cmd`: the command as the
    user ran it (a hint repeats it)."""
    try:
        run_id = audit.check_run_id(target or audit.latest_run_id(audit_dir, cmd))
        snap = audit.load(audit.path_for(audit_dir, run_id))
    except audit.AuditError as exc:
        print(error_line(exc, named), file=sys.stderr)
        return 2
    from ..trace import timeline, view
    say = named.say if named else _recorded_say(snap)
    page = view.render(timeline.build(snap), say)
    path = os.path.abspath(os.path.join(audit_dir, f"trace-{run_id}.html"))
    try:
        audit.replace(path, page.encode("utf-8"), fsync=False, mode=0o644)
    except OSError as exc:
        print(error_line(exc, named, "cli.audit_dir"), file=sys.stderr)
        return 2
    print(path)
    return 0


def _recorded_say(snap):
    agent = snap.get("agent") if isinstance(snap.get("agent"), dict) else {}
    return texts.of(agent["language"]) if agent.get("language") in texts.LANGUAGES else texts.ZH_TEXTS
