"""How the shared leaf texts/stated.py reads the shapes of real tasks, for the guards and the judge alike: argument
paths into lists, records keyed by id and their keys, alternatives, results that are no JSON object, list and
object effects in a proposal in words; and the declaration mistakes in them, refused when they are made."""
import pytest

from handloop import Source, Tool
from handloop.calls import declared_tool
from handloop.texts import stated

RESULTS = {"get_order": [{"order_id": "#W1", "payment_history": [{"payment_method_id": "card_1"}],
                          "items": [{"item_id": "A1", "name": "Water Bottle"}, {"item_id": "B2", "name": "Desk Lamp"},
                                    {"item_id": "C3", "name": "Notebook"}]}],
           "get_user": [{"payment_methods": {"card_1": {"source": "credit_card"}, "gift_7": {"source": "gift_card"}}}],
           "list_orders": [{"value": [{"order_id": "#W1"}, {"order_id": "#W2"}]}]}


def records(tool, path):
    return [r for result in RESULTS.get(tool, ()) for r in stated.records_at(result, path)]


def _tool(**more):
    ids = {"type": "array", "items": {"type": "string"}}
    params = {"type": "object", "properties": {"order_id": {"type": "string"}, "item_ids": ids,
                                               "payment_method_id": {"type": "string"},
                                               "passengers": {"type": "array", "items": {"type": "object"}}}}
    return Tool("refund", "A write.", params, lambda **kw: {}, kind="write",
                effect=more.pop("effect", (("order_id", "id"), ("item_ids", "id"), ("payment_method_id", "id"))), **more)


PAYMENT = Source.any(Source(("payment_method_id",), "get_order", ("payment_method_id",), "payment_history[]"),
                     Source(("payment_method_id",), "get_user", ("*",), "payment_methods.*"))
DECL = declared_tool(_tool(sources=(Source(("order_id",), "get_order", ("order_id",)),
                                    Source(("item_ids[]",), "get_order", ("item_id",), "items[]"), PAYMENT)))


def test_records_keyed_by_id_carry_their_key_and_a_wrapped_list_is_read_as_returned():
    assert [r["*"] for r in records("get_user", "payment_methods.*")] == ["card_1", "gift_7"]
    assert records("get_user", "payment_methods.*")[1]["source"] == "gift_card"
    assert [r["order_id"] for r in records("list_orders", "[]")] == ["#W1", "#W2"]
    assert stated.returned({"value": "done"}) == "done" and stated.returned({"value": 5, "x": 1}) == {"value": 5, "x": 1}
    assert stated.records_at({"value": 42}, "") == [{"value": 42}, 42]      # a tool's own {"value": ...} still reads


def test_each_element_of_a_list_argument_is_sourced_on_its_own_from_any_alternative():
    source = stated.sources(DECL)[1]
    assert stated.unsourced({"item_ids": ["A1", "B2"]}, source, records) == []
    assert stated.unsourced({"item_ids": ["A1", "Z9"]}, source, records) == [(1, ("Z9",))]
    assert stated.unsourced({"item_ids": []}, source, records) == []
    payment = stated.sources(DECL)[2]
    assert [o["tool"] for o in stated.options(payment)] == ["get_order", "get_user"]
    for method in ("card_1", "gift_7"):                         # either alternative holds
        assert stated.unsourced({"payment_method_id": method}, payment, records) == []
    assert stated.unsourced({"payment_method_id": "card_999"}, payment, records) == [(0, ("card_999",))]
    assert stated.rows({"passengers": [{"name": "Ann"}, {"name": "Bo"}], "order_id": "#W1"},
                       ["order_id", "passengers[].name"]) == [("#W1", "Ann"), ("#W1", "Bo")]


def test_each_element_of_a_list_of_objects_comes_from_one_record():
    flights = [{"value": [{"flight_number": "HAT001", "date": "2024-05-01"}, {"flight_number": "HAT002", "date": "2024-05-02"}]}]
    found = lambda tool, path: [r for result in flights for r in stated.records_at(result, path)]   # noqa: E731
    source = Source(("flights[].flight_number", "flights[].date"), "search", ("flight_number", "date"), "[]").declared()
    good = [{"flight_number": "HAT001", "date": "2024-05-01"}, {"flight_number": "HAT002", "date": "2024-05-02"}]
    assert stated.unsourced({"flights": good}, source, found) == []
    mixed = [good[0], {"flight_number": "HAT001", "date": "2024-05-02"}]        # each field seen, not in one record
    assert stated.unsourced({"flights": mixed}, source, found) == [(1, ("HAT001", "2024-05-02"))]


def test_two_sources_on_one_argument_must_both_hold():
    strict = declared_tool(_tool(sources=(Source(("payment_method_id",), "get_order", ("payment_method_id",),
                                                 "payment_history[]"),
                                          Source(("payment_method_id",), "get_user", ("*",), "payment_methods.*"))))
    held = [bool(stated.unsourced({"payment_method_id": "gift_7"}, s, records)) for s in stated.sources(strict)]
    assert held == [True, False]            # the gift card is the user's, not the order's: one source fails


def test_the_lists_and_alternatives_are_recorded_for_the_judge():
    assert DECL["lists"] == ["item_ids"]
    assert [o["tool"] for o in DECL["sources"][2]["any"]] == ["get_order", "get_user"]
    assert "lists" not in declared_tool(_tool(effect=(("order_id", "id"),)))        # as recorded before


@pytest.mark.parametrize("sources, wrong", [
    ((Source(("items[]",), "get_order", ("item_id",), "items[]"),), "args are arguments of the tool"),
    ((Source(("item_ids[]", "passengers[].name"), "get_order", ("item_id", "name"), "items[]"),), "one list argument"),
    ((Source(("item_ids[][]",), "get_order", ("item_id",), "items[]"),), "one list argument"),
])
def test_a_mistake_in_an_argument_path_is_refused_when_declared(sources, wrong):
    with pytest.raises(ValueError, match=r"refund.*" + wrong):
        _tool(sources=sources)


def test_alternatives_must_source_the_same_arguments():
    with pytest.raises(ValueError, match="same arguments"):
        Source.any(Source(("order_id",), "get_order", ("order_id",)), Source(("item_ids",), "get_order", ("item_id",)))
    with pytest.raises(ValueError, match="must be a Source"):
        Source.any(Source(("order_id",), "get_order", ("order_id",)), "get_user")
    nested = Source.any(PAYMENT, Source(("payment_method_id",), "get_user", ("id",), "cards[]"))
    assert len(nested.options()) == 3


def test_a_list_in_another_order_is_the_same_write_for_its_key_and_for_written():
    from handloop.calls import Call
    from handloop.memory import Memory
    from handloop.toolset import idempotency_key
    tool = _tool(sources=(Source(("item_ids[]",), "get_order", ("item_id",), "items[]"),))
    first = Call("c1", "refund", "{}", {"order_id": "#W1", "item_ids": ["A1", "B2"], "payment_method_id": "card_1"},
                 tool=tool)
    again = Call("c2", "refund", "{}", dict(first.args, item_ids=["B2", "A1"]), tool=tool)
    other = Call("c3", "refund", "{}", dict(first.args, item_ids=["A1"]), tool=tool)
    assert idempotency_key("r", first) == idempotency_key("r", again) != idempotency_key("r", other)
    memory = Memory().declare([tool])
    memory.absorb(first, {"value": "refunded 2 items"})
    assert memory.written(again) == {"receipt": "refunded 2 items"} and memory.written(other) is None
    assert memory.writes[0]["receipt"] == "refunded 2 items"          # as the tool returned it
