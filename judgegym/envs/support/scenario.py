"""CustomerSupport-v0 scenarios: the JSONL schema (`SupportScenario`), its checks, and
`prepare`, which builds a scenario's database and the gold end state the verifier expects.

Generated scenarios (`generate.py`) are `SupportScenario` objects too, so the env, the
simulators and the verifier see one type.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...jsonl import ScenarioError, ScenarioFileError, read_scenarios
from . import db

OrderStatus = Literal["processing", "shipped", "delivered", "cancelled", "refunded"]
ActionName = Literal["refund_order", "exchange_item", "cancel_order", "update_address", "escalate_to_human"]

PLACEHOLDERS = ("{refund}", "{ticket_id}")
"""Placeholders a `required_info` string may use, filled from the gold actions' results: the
refund amount ("$84.50") and the ticket id ("T-1007") of the last action that produced one."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Customer(_Record):
    """A row of ``customers``."""

    customer_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    email: str = Field(min_length=3, pattern=r"^[^@\s]+@[^@\s]+$")
    phone: str = ""
    address: str = Field(min_length=1)


class Product(_Record):
    """A row of ``products``: one variant ("Blue / M") of a named product, its price and stock.
    Exchanges go between variants that share `name`."""

    product_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    variant: str = ""
    price: float = Field(ge=0, description="dollars")
    stock: int = Field(ge=0)


class OrderItem(_Record):
    """One line of an order; `unit_price` defaults to the product's price."""

    item_id: str = Field(min_length=1)
    product_id: str = Field(min_length=1)
    quantity: int = Field(default=1, ge=1)
    unit_price: float | None = Field(default=None, ge=0)


class Order(_Record):
    """An order with its items. Payments are derived: a charge of the total on `placed_on`, and
    a refund for orders that are cancelled or refunded. `shipping_address` defaults to the
    customer's address."""

    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    status: OrderStatus
    placed_on: date
    delivered_on: date | None = None
    shipping_address: str | None = None
    payment_method: str = "card"
    items: list[OrderItem] = Field(min_length=1)


class Ticket(_Record):
    """A support ticket already on file (history)."""

    ticket_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    order_id: str | None = None
    kind: str = "question"
    status: str = "closed"
    created_on: date
    note: str = ""


class User(_Record):
    """The simulated customer: what they want and what only they know.

    `facts` are revealed when the agent asks for them; ``email`` and ``order_id`` are
    required. Keys the rule-based simulator understands: ``email``, ``order_id``, ``name``,
    ``phone``, ``new_address``, ``reason``, ``item``, ``new_variant``; any other key is
    revealed when the agent's message mentions it (underscores read as spaces).
    `wrong_order_id` is given the first time the agent asks for the order id (the right one
    after the agent says it does not match); `fallback_variant` is offered when the agent
    says `new_variant` is out of stock.
    """

    opening: str = Field(min_length=1, description="the customer's first message")
    goal: str = Field(min_length=1, description="what the customer wants, for the LLM simulator")
    persona: str = "polite and to the point"
    facts: dict[str, str]
    customer_id: str | None = None
    wrong_order_id: str | None = None
    fallback_variant: str | None = None


class GoldAction(_Record):
    """One change of the reference solution, as a tool call."""

    name: ActionName
    arguments: dict[str, Any] = Field(default_factory=dict)


class SupportScenario(_Record):
    """One customer-support conversation to play, with everything needed to grade it.

    The verifier replays `gold_actions` on the initial database and compares the agent's
    final database with the result; `required_info` are strings the agent must tell the
    customer (amounts and numbers compared in canonical form; ``{refund}`` / ``{ticket_id}``
    are filled from the gold actions' results).
    """

    id: str = Field(min_length=1)
    kind: str = "custom"
    today: date
    company: str = "the shop"
    return_window_days: int = Field(default=30, ge=0)
    dispute_threshold: float = Field(default=250.0, ge=0)
    customers: list[Customer] = Field(min_length=1)
    products: list[Product] = Field(default_factory=list)
    orders: list[Order] = Field(default_factory=list)
    tickets: list[Ticket] = Field(default_factory=list)
    user: User
    gold_actions: list[GoldAction] = Field(default_factory=list)
    required_info: list[str] = Field(default_factory=list)
    system_prompt: str | None = None


def load_scenarios(path: str | Path) -> list[SupportScenario]:
    """Read user scenarios from JSONL, one `SupportScenario` per non-blank line, checking
    references and replaying the gold actions.

    Raises `ScenarioFileError` naming the line and the field, and `FileNotFoundError` if the
    file does not exist.
    """
    return read_scenarios(path, SupportScenario, prepare)


@dataclass(frozen=True)
class PreparedScenario:
    """A scenario ready to play: its initial database (copy it per episode with `db.copy`),
    the initial snapshot (for the final diff) and the grading data (`task`)."""

    scenario: SupportScenario
    database: sqlite3.Connection
    initial: db.Snapshot
    task: dict[str, Any]


def prepare(scenario: SupportScenario) -> PreparedScenario:
    """Check `scenario`, build its database, and replay its gold actions on a copy to get the
    expected end state. Raises `ScenarioError` naming the field at fault."""
    rows = _rows(scenario)
    try:
        database = db.create(rows)
    except sqlite3.IntegrityError as exc:  # duplicate keys and the like that _rows did not name
        raise ScenarioError("<scenario>", f"the database cannot be built: {exc}") from None
    initial = db.snapshot_rows(rows)
    today = scenario.today.isoformat()
    results: dict[str, str] = {}
    expected = initial
    if scenario.gold_actions:
        expected_db = db.copy(database)
        for i, action in enumerate(scenario.gold_actions):
            try:
                result = db.apply_action(expected_db, today, action.name, action.arguments)
            except (db.ActionError, TypeError) as exc:
                raise ScenarioError(f"gold_actions.{i}", f"{action.name} cannot be replayed: {exc}") from None
            results.update({k: str(v) for k, v in result.items() if k in ("refund", "ticket_id")})
        expected = db.snapshot(expected_db)
        expected_db.close()
    required = []
    for i, info in enumerate(scenario.required_info):
        for placeholder in PLACEHOLDERS:
            if placeholder in info:
                key = placeholder.strip("{}")
                if key not in results:
                    raise ScenarioError(f"required_info.{i}", f"{placeholder} is used but no gold action produces a {key}")
                info = info.replace(placeholder, results[key])
        required.append(info)
    user = scenario.user
    task = {
        "kind": scenario.kind,
        "today": today,
        "customer_id": user.customer_id,
        "policy": {"return_window_days": scenario.return_window_days, "dispute_threshold": scenario.dispute_threshold},
        "goal": user.goal,
        "facts": dict(user.facts),
        "wrong_order_id": user.wrong_order_id,
        "fallback_variant": user.fallback_variant,
        "gold_actions": [a.model_dump() for a in scenario.gold_actions],
        "required_info": required,
        "initial_hash": db.digest(initial),
        "expected_hash": db.digest(expected),
        "expected_diff": db.diff(initial, expected),
    }
    return PreparedScenario(scenario=scenario, database=database, initial=initial, task=task)


def _cents(dollars: float) -> int:
    return round(dollars * 100)


def _rows(s: SupportScenario) -> dict[str, list[tuple[Any, ...]]]:
    """The scenario's tables as row tuples (ids normalised), checking every reference."""
    customers = _unique(s.customers, "customers", "customer_id")
    products = _unique(s.products, "products", "product_id")
    _unique(s.orders, "orders", "order_id")
    _unique(s.tickets, "tickets", "ticket_id")
    emails: dict[str, int] = {}
    for i, c in enumerate(s.customers):
        email = db.normalize_email(c.email)
        if email in emails:
            raise ScenarioError(f"customers.{i}.email", f"{c.email!r} is also customer {emails[email]}'s email")
        emails[email] = i
    user = s.user
    for key in ("email", "order_id"):
        if not user.facts.get(key, "").strip():
            raise ScenarioError(f"user.facts.{key}", "required (the customer identifies with email and order id)")
    if user.customer_id is not None and db.normalize_id(user.customer_id) not in customers:
        raise ScenarioError("user.customer_id", f"no customer {user.customer_id!r}")
    address = {db.normalize_id(c.customer_id): c.address for c in s.customers}
    rows: dict[str, list[tuple[Any, ...]]] = {
        "customers": [(db.normalize_id(c.customer_id), c.name, db.normalize_email(c.email), c.phone, c.address) for c in s.customers],
        "products": [(db.normalize_id(p.product_id), p.name, p.variant, _cents(p.price), p.stock) for p in s.products],
        "orders": [],
        "order_items": [],
        "payments": [],
        "tickets": [],
    }
    item_ids: set[str] = set()
    for i, order in enumerate(s.orders):
        order_id, customer_id = db.normalize_id(order.order_id), db.normalize_id(order.customer_id)
        if customer_id not in customers:
            raise ScenarioError(f"orders.{i}.customer_id", f"no customer {order.customer_id!r}")
        if order.status == "delivered" and order.delivered_on is None:
            raise ScenarioError(f"orders.{i}.delivered_on", "required for a delivered order")
        if order.delivered_on is not None and order.delivered_on < order.placed_on:
            raise ScenarioError(f"orders.{i}.delivered_on", "is before placed_on")
        total = 0
        for j, item in enumerate(order.items):
            item_id, product_id = db.normalize_id(item.item_id), db.normalize_id(item.product_id)
            if item_id in item_ids:
                raise ScenarioError(f"orders.{i}.items.{j}.item_id", f"{item.item_id!r} is used twice")
            item_ids.add(item_id)
            if product_id not in products:
                raise ScenarioError(f"orders.{i}.items.{j}.product_id", f"no product {item.product_id!r}")
            price = _cents(item.unit_price if item.unit_price is not None else s.products[products[product_id]].price)
            total += price * item.quantity
            rows["order_items"].append((item_id, order_id, product_id, item.quantity, price))
        delivered = order.delivered_on.isoformat() if order.delivered_on else None
        shipping = db.normalize_address(order.shipping_address or address[customer_id])
        rows["orders"].append(
            (order_id, customer_id, order.status, order.placed_on.isoformat(), delivered, shipping, order.payment_method, total)
        )
        rows["payments"].append((f"PAY-{1001 + len(rows['payments'])}", order_id, "charge", total, order.placed_on.isoformat()))
        if order.status in ("cancelled", "refunded"):
            rows["payments"].append(
                (f"PAY-{1001 + len(rows['payments'])}", order_id, "refund", total, delivered or order.placed_on.isoformat())
            )
    order_ids = {row[0] for row in rows["orders"]}
    for i, t in enumerate(s.tickets):
        if db.normalize_id(t.customer_id) not in customers:
            raise ScenarioError(f"tickets.{i}.customer_id", f"no customer {t.customer_id!r}")
        if t.order_id is not None and db.normalize_id(t.order_id) not in order_ids:
            raise ScenarioError(f"tickets.{i}.order_id", f"no order {t.order_id!r}")
        order_id = db.normalize_id(t.order_id) if t.order_id else None
        rows["tickets"].append(
            (db.normalize_id(t.ticket_id), db.normalize_id(t.customer_id), order_id, t.kind, t.status, t.created_on.isoformat(), t.note)
        )
    return rows


def _unique(records: list[Any], table: str, key: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, record in enumerate(records):
        value = db.normalize_id(getattr(record, key))
        if value in index:
            raise ScenarioError(f"{table}.{i}.{key}", f"{getattr(record, key)!r} is also {table}.{index[value]}")
        index[value] = i
    return index


__all__ = [
    "Customer",
    "GoldAction",
    "Order",
    "OrderItem",
    "PreparedScenario",
    "Product",
    "ScenarioError",
    "ScenarioFileError",
    "SupportScenario",
    "Ticket",
    "User",
    "load_scenarios",
    "prepare",
]
