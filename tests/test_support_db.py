"""CustomerSupport-v0's store and scenarios: snapshots, digests and diffs, the actions' rules,
gold replay, the generator's nine kinds, and user scenario files."""

from __future__ import annotations

import json
from datetime import date

import pytest

from judgegym.envs.support import KINDS, ScenarioError, ScenarioFileError, SupportScenario, db, generate_scenario, load_scenarios
from judgegym.envs.support.generate import POOLS
from judgegym.envs.support.scenario import prepare

TODAY = "2025-03-10"

USER_SCENARIO = {
    "id": "u1",
    "kind": "refund",
    "today": TODAY,
    "company": "Zephyr Kitchen",
    "return_window_days": 30,
    "customers": [
        {"customer_id": "C-1", "name": "Ada Lovelace", "email": "ada@example.com", "address": "1 Analytical Way, London 10001"},
        {"customer_id": "C-2", "name": "Charles Babbage", "email": "charles@example.com", "address": "2 Engine Road, London 10002"},
    ],
    "products": [
        {"product_id": "P-1", "name": "Zephyr Kettle", "variant": "Red", "price": 49.5, "stock": 3},
        {"product_id": "P-2", "name": "Zephyr Kettle", "variant": "Blue", "price": 49.5, "stock": 0},
        {"product_id": "P-3", "name": "Zephyr Toaster", "variant": "", "price": 30, "stock": 5},
    ],
    "orders": [
        {
            "order_id": "O-100",
            "customer_id": "C-1",
            "status": "delivered",
            "placed_on": "2025-03-01",
            "delivered_on": "2025-03-03",
            "items": [{"item_id": "I-1", "product_id": "P-1", "quantity": 2}],
        },
        {
            "order_id": "O-200",
            "customer_id": "C-2",
            "status": "processing",
            "placed_on": "2025-03-09",
            "items": [{"item_id": "I-2", "product_id": "P-3"}],
        },
    ],
    "user": {
        "customer_id": "C-1",
        "opening": "Hi, I'd like a refund for my kettles.",
        "goal": "Get order O-100 refunded.",
        "facts": {"email": "ada@example.com", "order_id": "O-100", "reason": "They leak."},
    },
    "gold_actions": [{"name": "refund_order", "arguments": {"order_id": "O-100"}}],
    "required_info": ["{refund}"],
}


def scenario(**changes) -> SupportScenario:
    return SupportScenario.model_validate({**json.loads(json.dumps(USER_SCENARIO)), **changes})


def test_snapshot_digest_and_diff_track_every_compared_change():
    prepared = prepare(scenario())
    conn = db.copy(prepared.database)
    before = db.snapshot(conn)
    assert db.digest(before) == prepared.task["initial_hash"]
    assert before["orders"]["O-100"][-1] == 9900 and before["payments"]["PAY-1001"][2:4] == ("charge", 9900)
    result = db.refund_order(conn, TODAY, "o-100 ")
    assert result == {"order_id": "O-100", "status": "refunded", "refund": "$99.00", "ticket_id": "T-1001"}
    after = db.snapshot(conn)
    assert db.digest(after) == prepared.task["expected_hash"] != db.digest(before)
    change = db.diff(before, after)
    assert change == prepared.task["expected_diff"]
    assert change["orders"] == {"O-100": {"status": ["delivered", "refunded"]}}
    assert change["payments"]["PAY-1003"]["amount_cents"] == [None, 9900]
    assert set(change) == {"orders", "payments", "tickets"}
    assert db.diff_mismatches(change, change) == [] and db.diff_mismatches(change, {}) == [
        "orders/O-100",
        "payments/PAY-1003",
        "tickets/T-1001",
    ]
    # the escalation note is stored but not compared: two summaries, one digest
    a, b = db.copy(prepared.database), db.copy(prepared.database)
    db.escalate_to_human(a, TODAY, "O-100", "first wording")
    db.escalate_to_human(b, TODAY, "O-100", "another wording")
    assert db.digest(db.snapshot(a)) == db.digest(db.snapshot(b))
    assert a.execute("SELECT note FROM tickets").fetchone() == ("first wording",)


@pytest.mark.parametrize(
    "action, arguments, message",
    [
        ("refund_order", {"order_id": "O-200"}, "only delivered orders can be refunded"),
        ("cancel_order", {"order_id": "O-100"}, "only orders still processing can be cancelled"),
        ("update_address", {"order_id": "O-100", "address": "3 New St"}, "only orders still processing"),
        ("update_address", {"order_id": "O-200", "address": "   "}, "empty"),
        ("exchange_item", {"order_id": "O-100", "item_id": "I-1", "new_product_id": "P-2"}, "out of stock"),
        ("exchange_item", {"order_id": "O-100", "item_id": "I-1", "new_product_id": "P-3"}, "same product"),
        ("exchange_item", {"order_id": "O-100", "item_id": "I-1", "new_product_id": "P-1"}, "already is"),
        ("exchange_item", {"order_id": "O-100", "item_id": "I-2", "new_product_id": "P-2"}, "has no item"),
        ("exchange_item", {"order_id": "O-100", "item_id": "I-1", "new_product_id": "P-9"}, "no product"),
        ("escalate_to_human", {"order_id": "O-999"}, "no order"),
    ],
)
def test_refused_actions_change_nothing(action, arguments, message):
    conn = db.copy(prepare(scenario()).database)
    before = db.snapshot(conn)
    with pytest.raises(db.ActionError, match=message):
        db.apply_action(conn, TODAY, action, arguments)
    assert db.snapshot(conn) == before


def test_exchange_moves_the_item_and_stock_and_keeps_the_price():
    products = [dict(p) for p in USER_SCENARIO["products"]]
    products[1]["stock"] = 2
    conn = db.copy(prepare(scenario(products=products)).database)
    result = db.exchange_item(conn, TODAY, "O-100", "I-1", "P-2")
    assert result["new_product"] == "Zephyr Kettle (Blue)" and result["ticket_id"] == "T-1001"
    assert conn.execute("SELECT product_id, unit_price_cents FROM order_items WHERE item_id = 'I-1'").fetchone() == ("P-2", 4950)
    assert conn.execute("SELECT stock FROM products WHERE product_id = 'P-2'").fetchone() == (0,)  # two units exchanged


def test_ids_and_money_are_normalised():
    assert db.normalize_id(" #o-12 345 ") == "O-12345" and db.normalize_email("  Ada@Example.COM ") == "ada@example.com"
    assert db.money(8450) == "$84.50" and db.money(123456789) == "$1,234,567.89" and db.money(-5) == "-$0.05"
    assert db.normalize_address("  1  Main\tSt ") == "1 Main St"


@pytest.mark.parametrize("kind", KINDS)
def test_every_generated_kind_replays_and_is_consistent(kind):
    for seed in range(12):
        s = generate_scenario("train", seed, kind)
        prepared = prepare(s)
        task = prepared.task
        assert prepared.initial == db.snapshot(prepared.database)  # built from the rows, equal to reading the database
        assert s.kind == kind and s.id == f"train-{seed}-{kind}"
        assert task["required_info"] and all("{" not in fact for fact in task["required_info"])
        changes = task["expected_diff"]
        if kind in ("refund_expired", "info"):
            assert not s.gold_actions and changes == {}
        else:
            assert s.gold_actions and changes
        orders = {o.order_id: o for o in s.orders}
        mine = orders[s.user.facts["order_id"]]
        assert mine.customer_id == s.user.customer_id
        emails = {c.customer_id: c.email for c in s.customers}
        assert s.user.facts["email"] == emails[s.user.customer_id]
        assert 10 <= len(s.customers) <= 20 and len(set(emails.values())) == len(emails)
        for fact in s.user.facts.values():
            assert fact not in s.user.opening or fact == s.user.facts.get("other_order_id")  # private facts are not volunteered
        window = s.return_window_days
        if kind in ("refund", "exchange", "dispute"):
            assert (s.today - mine.delivered_on).days <= window
        if kind == "refund_expired":
            assert (s.today - mine.delivered_on).days > window and task["required_info"] == [str(window)]
        if kind == "dispute":
            assert (
                prepared.database.execute("SELECT total_cents FROM orders WHERE order_id = ?", (mine.order_id,)).fetchone()[0]
                > s.dispute_threshold * 100
            )
        if kind == "other_customer":
            other = orders[s.user.facts["other_order_id"]]
            assert other.customer_id != s.user.customer_id and other.order_id in s.user.opening
        if kind == "wrong_order_id":
            wrong = s.user.wrong_order_id
            assert wrong and wrong != mine.order_id and (wrong not in orders or orders[wrong].customer_id != s.user.customer_id)
        if kind == "exchange" and s.user.fallback_variant:
            stock = {p.variant: p.stock for p in s.products if p.name == s.user.facts["item"].rsplit(" (", 1)[0]}
            assert stock[s.user.facts["new_variant"]] == 0 and stock[s.user.fallback_variant] > 0


def test_generation_is_deterministic_and_splits_share_no_names_or_products():
    assert generate_scenario("test", 5) == generate_scenario("test", 5)
    assert generate_scenario("test", 5) != generate_scenario("test", 6)
    for field in ("first_names", "last_names", "shops"):
        assert not set(getattr(POOLS["train"], field)) & set(getattr(POOLS["test"], field))
    seen = {split: [generate_scenario(split, s) for s in range(60)] for split in POOLS}
    names = {split: {c.name for s in ss for c in s.customers} for split, ss in seen.items()}
    products = {split: {p.name for s in ss for p in s.products} for split, ss in seen.items()}
    assert not names["train"] & names["test"] and not products["train"] & products["test"]
    assert {s.kind for s in seen["train"]} == set(KINDS)
    with pytest.raises(ValueError, match="unknown split"):
        generate_scenario("dev", 0)
    with pytest.raises(ValueError, match="unknown scenario kind"):
        generate_scenario("test", 0, "chitchat")


def test_user_scenarios_load_and_fill_placeholders(tmp_path):
    path = tmp_path / "mine.jsonl"
    second = {**USER_SCENARIO, "id": "u2", "gold_actions": [{"name": "escalate_to_human", "arguments": {"order_id": "O-100"}}]}
    second["required_info"] = ["{ticket_id}"]
    path.write_text(json.dumps(USER_SCENARIO) + "\n\n" + json.dumps(second) + "\n")
    loaded = load_scenarios(path)
    assert [s.id for s in loaded] == ["u1", "u2"]
    assert prepare(loaded[0]).task["required_info"] == ["$99.00"] and prepare(loaded[1]).task["required_info"] == ["T-1001"]


def _set(path: str, value):
    def mutate(record):
        keys = path.split(".")
        target = record
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, message",
    [
        (_set("user", KeyError), "line 2: field 'user': Field required"),
        (_set("today", "yesterday"), "line 2: field 'today'"),
        (_set("customers.0.email", "not-an-email"), "line 2: field 'customers.0.email'"),
        (_set("customers.1.email", "ADA@example.com"), "line 2: field 'customers.1.email'"),
        (_set("customers.1.customer_id", "C-1"), "line 2: field 'customers.1.customer_id'"),
        (_set("orders.0.status", "lost"), "line 2: field 'orders.0.status'"),
        (_set("orders.0.customer_id", "C-9"), "line 2: field 'orders.0.customer_id'"),
        (_set("orders.0.items.0.product_id", "P-9"), "line 2: field 'orders.0.items.0.product_id'"),
        (_set("orders.1.items.0.item_id", "I-1"), "line 2: field 'orders.1.items.0.item_id'"),
        (_set("orders.0.delivered_on", None), "line 2: field 'orders.0.delivered_on': required"),
        (_set("products.0.stock", -1), "line 2: field 'products.0.stock'"),
        (_set("user.facts", {"email": "ada@example.com"}), "line 2: field 'user.facts.order_id'"),
        (_set("user.customer_id", "C-7"), "line 2: field 'user.customer_id'"),
        (_set("gold_actions.0.name", "delete_everything"), "line 2: field 'gold_actions.0.name'"),
        (_set("gold_actions.0.arguments", {"order_id": "O-200"}), "line 2: field 'gold_actions.0': refund_order cannot be replayed"),
        (_set("gold_actions.0.arguments", {"order": "O-100"}), "line 2: field 'gold_actions.0'"),
        (lambda r: r.update(gold_actions=[], required_info=["{refund}"]), "line 2: field 'required_info.0': {refund} is used but no gold"),
        (_set("id", "u1"), "line 2: field 'id': 'u1' already used on line 1"),
        (_set("extra", 1), "line 2: field 'extra'"),
    ],
)
def test_bad_user_scenario_lines_name_the_line_and_field(tmp_path, mutate, message):
    bad = {**json.loads(json.dumps(USER_SCENARIO)), "id": "u2"}
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ScenarioFileError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_scenarios(path)


def test_scenario_file_errors_for_json_and_empty_files(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n{not json\n")
    with pytest.raises(ScenarioFileError, match="line 2: not valid JSON"):
        load_scenarios(path)
    path.write_text("\n\n")
    with pytest.raises(ScenarioFileError, match="no scenarios"):
        load_scenarios(path)
    with pytest.raises(FileNotFoundError):
        load_scenarios(tmp_path / "missing.jsonl")
    with pytest.raises(ScenarioError, match="field 'orders.0.customer_id'"):
        prepare(scenario(orders=[{**USER_SCENARIO["orders"][0], "customer_id": "nobody"}]))


def test_scenario_dates_are_dates():
    assert scenario().today == date(2025, 3, 10)
