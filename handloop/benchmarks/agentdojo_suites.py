"""The declarations of AgentDojo v1.2.2's four suites as data (workspace, travel, banking, slack): which suite
functions write, their effects, where their arguments must come from, which reach outside, and which results name
values in their text (`mentions`), as a careful user would write them (docs/security.md says why each).
benchmarks/agentdojo.py turns them into handloop tools.

Invariants: plain data of the public API (Source), no import of `agentdojo`; a function a suite leaves out is a
read with no sources; a user passes their own {function: Declared} instead.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from handloop import Source

__all__ = ["Declared", "SUITES"]


@dataclasses.dataclass(frozen=True)
class Declared:
    """How one suite function is declared to handloop (read with `tools_for`).

    Attributes:
        kind: "read" or "write" (a write runs only after the user confirmed it).
        effect: a write's effect arguments, {argument: "id" | "choice" | "date" | "count"}.
        sources: handloop Sources its arguments must come from.
        outside: its arguments leave the user's trust boundary (every text argument needs a Source).
        mentions: each record of its result gains `mentions`, the URLs, e-mails and IBANs its text names
            (True: all its text; a tuple of field names: only those fields, the ones a careful user trusts).
    """

    kind: str = "read"
    effect: Mapping[str, str] = dataclasses.field(default_factory=dict)
    sources: tuple = ()
    outside: bool = False
    mentions: bool | tuple = False


def _any(arg: str, *places: tuple[str, str, str]) -> Source:
    """`arg` from the user's own words or from any of `places` ((tool, field, path) of a result)."""
    return Source.any(Source.user(arg), *(Source.of(tool, {arg: field}, path=path) for tool, field, path in places))


_MENTIONED = "[].mentions[]"     # the mentions of each record of a list result
_TEXT = "mentions[]"             # the mentions of a text result
_CONTACTS = (("search_contacts_by_name", "email", "[]"), ("search_contacts_by_email", "email", "[]"))
_SENDERS = tuple((tool, "sender", "[]") for tool in ("search_emails", "get_received_emails", "get_unread_emails"))
_PARTICIPANTS = tuple((tool, "email", _MENTIONED) for tool in ("search_calendar_events", "get_day_calendar_events"))


def _people(arg: str) -> Source:
    """An e-mail address the user typed, or one the user's own address book, an e-mail's sender, a calendar event
    or a file of the drive names (a careful user's people; never an e-mail's body)."""
    drive = tuple((tool, "email", path) for tool, path in (("search_files_by_filename", "[]." + _TEXT),
                                                           ("search_files", "[]." + _TEXT),
                                                           ("get_file_by_id", _TEXT)))
    return _any(arg, *_CONTACTS, *_SENDERS, *_PARTICIPANTS, *drive)


def _workspace() -> dict[str, Declared]:
    return {
        "send_email": Declared("write", {"recipients": "id"}, (_people("recipients[]"),)),
        "delete_email": Declared("write", {"email_id": "id"}),
        "create_calendar_event": Declared("write", {"title": "id", "start_time": "date"},
                                          (_people("participants[]"),)),
        "cancel_calendar_event": Declared("write", {"event_id": "id"}),
        "reschedule_calendar_event": Declared("write", {"event_id": "id", "new_start_time": "date"}),
        "add_calendar_event_participants": Declared("write", {"event_id": "id"},
                                                    (_people("participants[]"),)),
        "append_to_file": Declared("write", {"file_id": "id"}),
        "create_file": Declared("write", {"filename": "id"}),
        "delete_file": Declared("write", {"file_id": "id"}),
        "share_file": Declared("write", {"file_id": "id", "email": "id", "permission": "choice"},
                               (_people("email"),)),
        **{name: Declared(mentions=True) for name in ("search_files_by_filename", "search_files", "get_file_by_id")},
        # an event's participants, never its description (where anyone who sends an invitation writes)
        **{name: Declared(mentions=("participants",)) for name in ("search_calendar_events", "get_day_calendar_events")},
    }


def _travel() -> dict[str, Declared]:
    return {
        "reserve_hotel": Declared("write", {"hotel": "id", "start_day": "date", "end_day": "date"}),
        "reserve_car_rental": Declared("write", {"company": "id", "start_time": "date"}),
        "reserve_restaurant": Declared("write", {"restaurant": "id", "start_time": "date"}),
        "create_calendar_event": Declared("write", {"title": "id", "start_time": "date"}),
        "cancel_calendar_event": Declared("write", {"event_id": "id"}),
        "send_email": Declared("write", {"recipients": "id"}, (Source.user("recipients[]"),)),
    }


def _banking() -> dict[str, Declared]:
    payees = (("get_most_recent_transactions", "recipient", "[]"), ("get_most_recent_transactions", "sender", "[]"),
              ("get_scheduled_transactions", "recipient", "[]"), ("read_file", "iban", _TEXT))
    return {
        "send_money": Declared("write", {"recipient": "id", "amount": "count", "date": "date"},
                               (_any("recipient", *payees),)),
        "schedule_transaction": Declared("write", {"recipient": "id", "amount": "count", "date": "date"},
                                         (_any("recipient", *payees),)),
        "update_scheduled_transaction": Declared("write", {"id": "id"},
                                                 (_any("recipient", *payees),)),
        "update_password": Declared("write", {"password": "id"}, (Source.user("password"),)),
        "update_user_info": Declared("write", {"street": "id", "city": "id"}),
        "read_file": Declared(mentions=True),
    }


def _slack() -> dict[str, Declared]:
    colleagues = (("read_channel_messages", "url", _MENTIONED), ("read_inbox", "url", _MENTIONED))
    members = (("get_users_in_channel", "user", "[]"), ("read_channel_messages", "sender", "[]"),
               ("read_inbox", "sender", "[]"))
    return {
        "get_webpage": Declared(outside=True, sources=(_any("url", *colleagues),)),
        "post_webpage": Declared("write", {"url": "id"}, (Source.user("url"),)),
        "send_direct_message": Declared("write", {"recipient": "id"}, (_any("recipient", *members),)),
        "send_channel_message": Declared("write", {"channel": "id"}),
        "add_user_to_channel": Declared("write", {"user": "id", "channel": "id"}),
        "invite_user_to_slack": Declared("write", {"user": "id", "user_email": "id"}),
        "remove_user_from_slack": Declared("write", {"user": "id"}),
        "read_channel_messages": Declared(mentions=True),
        "read_inbox": Declared(mentions=True),
    }


SUITES: dict[str, dict[str, Declared]] = {"workspace": _workspace(), "travel": _travel(), "banking": _banking(),
                                          "slack": _slack()}
"""The declarations of AgentDojo v1.2.2's four suites, as a careful user would write them (docs/security.md says
why each): every function that changes the world is a write; a function absent is a read with no sources."""
