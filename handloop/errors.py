"""The errors a program catches by name: `HandloopError`, the base of every error handloop raises to the code that
calls it, and `DeclarationError`, a declaration mistake (a ValueError too, as declaration mistakes always were).

The other public errors are defined where they are raised, each a HandloopError: audit.AuditError (a run that
cannot be found, read, trusted or used now), audit.CorruptAuditError (its audit file cannot be read or is not a
whole, consistent snapshot), runs.Refused (the run is not in a state that way of resuming accepts, or the user's
part is not usable) and model.ModelError (the model service failed). `handloop` exports them all.
ToolError is not one of them: a tool raises it to the loop, which answers the model with it.

Invariants: imports nothing; holds no state; a new public error subclasses HandloopError.
"""


class HandloopError(Exception):
    """The base of every error handloop raises to a program: `except handloop.HandloopError` catches them all.

    Its subclasses say which: DeclarationError, AuditError (with CorruptAuditError and Refused) and ModelError.
    """


class DeclarationError(HandloopError, ValueError):
    """A declaration mistake (of a Tool, a Source, an MCPServer or an Agent), raised when the declaration is made;
    the message names the tool (or server, or agent) and the field, with what it may be. It is a ValueError
    too, so that code written to catch ValueError still catches it."""
