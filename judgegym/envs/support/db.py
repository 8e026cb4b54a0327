"""The CustomerSupport-v0 store: an in-memory SQLite database, its canonical snapshot, and the
actions that change it (shared by the agent's tools and the replay of gold actions).

Money is stored in integer cents. Every statement is parameterised; ids are normalised
(``" #o-12345 "`` -> ``"O-12345"``) before they reach SQL.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

SCHEMA = """
CREATE TABLE customers (
    customer_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    phone TEXT NOT NULL,
    address TEXT NOT NULL
);
CREATE TABLE products (
    product_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    variant TEXT NOT NULL,
    price_cents INTEGER NOT NULL,
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE orders (
    order_id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(customer_id),
    status TEXT NOT NULL,
    placed_on TEXT NOT NULL,
    delivered_on TEXT,
    shipping_address TEXT NOT NULL,
    payment_method TEXT NOT NULL,
    total_cents INTEGER NOT NULL
);
CREATE TABLE order_items (
    item_id TEXT PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    product_id TEXT NOT NULL REFERENCES products(product_id),
    quantity INTEGER NOT NULL,
    unit_price_cents INTEGER NOT NULL
);
CREATE TABLE payments (
    payment_id TEXT PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    kind TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    created_on TEXT NOT NULL
);
CREATE TABLE tickets (
    ticket_id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(customer_id),
    order_id TEXT REFERENCES orders(order_id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    created_on TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT ''
);
"""

TABLES: dict[str, tuple[str, ...]] = {
    "customers": ("customer_id", "name", "email", "phone", "address"),
    "products": ("product_id", "name", "variant", "price_cents", "stock"),
    "orders": ("order_id", "customer_id", "status", "placed_on", "delivered_on", "shipping_address", "payment_method", "total_cents"),
    "order_items": ("item_id", "order_id", "product_id", "quantity", "unit_price_cents"),
    "payments": ("payment_id", "order_id", "kind", "amount_cents", "created_on"),
    "tickets": ("ticket_id", "customer_id", "order_id", "kind", "status", "created_on"),
}
"""Table -> the columns a snapshot compares (the first is the primary key). ``tickets.note``
(free text the agent writes when escalating) is stored but not compared."""

ACTIONS: tuple[str, ...] = ("refund_order", "exchange_item", "cancel_order", "update_address", "escalate_to_human")
"""The changes an agent (and a scenario's gold action list) can make, by tool name."""

Snapshot = dict[str, dict[str, tuple[Any, ...]]]
"""table -> primary key -> row (values in `TABLES` column order): the canonical content of a
database, rows in key order."""

Diff = dict[str, dict[str, dict[str, list[Any]]]]
"""table -> primary key -> column -> [old, new]; an added row has old None in every column,
a removed row new None."""

_ID_NUMBER = re.compile(r"(\d+)$")


class ActionError(Exception):
    """An action the store refuses (unknown id, wrong order status, out of stock); the message
    is meant for the agent."""


def normalize_id(value: str) -> str:
    """An id as stored: whitespace and '#' dropped, upper case (``"#o-123 "`` -> ``"O-123"``)."""
    return "".join(value.split()).replace("#", "").upper()


def normalize_email(value: str) -> str:
    """An email as stored: stripped and lower case."""
    return value.strip().lower()


def normalize_address(value: str) -> str:
    """An address as stored: runs of whitespace collapsed, stripped (otherwise verbatim)."""
    return " ".join(value.split())


def money(cents: int) -> str:
    """Cents as dollars: 8450 -> "$84.50"."""
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def connect() -> sqlite3.Connection:
    """An empty in-memory database (usable from any thread, one at a time)."""
    return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@functools.cache
def _empty() -> sqlite3.Connection:
    conn = connect()
    conn.executescript(SCHEMA)
    return conn


def create(rows: dict[str, Iterable[tuple[Any, ...]]]) -> sqlite3.Connection:
    """A new in-memory database with the schema and `rows` (table -> tuples in `TABLES` column
    order; tickets may carry a trailing note)."""
    conn = copy(_empty())  # copying the empty schema is faster than running the DDL again
    with _transaction(conn):
        for table, values in rows.items():
            columns = TABLES[table]
            values = list(values)
            if table == "tickets" and values and len(values[0]) == len(columns) + 1:
                columns = (*columns, "note")
            placeholders = ", ".join("?" * len(columns))
            conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})", values)
    return conn


def copy(source: sqlite3.Connection) -> sqlite3.Connection:
    """A private copy of `source` (SQLite's backup API: tens of microseconds for our sizes)."""
    target = connect()
    source.backup(target)
    return target


def snapshot(conn: sqlite3.Connection) -> Snapshot:
    """Every compared column of every table, keyed by primary key (see `TABLES`)."""
    result: Snapshot = {}
    for table, columns in TABLES.items():
        cursor = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {columns[0]}")
        result[table] = {row[0]: row for row in cursor}
    return result


def snapshot_rows(rows: dict[str, Iterable[tuple[Any, ...]]]) -> Snapshot:
    """The snapshot of ``create(rows)`` without reading the database back (SQLite orders text
    keys by their UTF-8 bytes, which is code point order, as Python sorts)."""
    result: Snapshot = {}
    for table, columns in TABLES.items():
        width = len(columns)
        result[table] = {row[0]: tuple(row[:width]) for row in sorted(rows.get(table, ()), key=lambda row: row[0])}
    return result


def digest(state: Snapshot) -> str:
    """sha256 of the snapshot's canonical JSON (tables in `TABLES` order, rows in key order):
    equal databases, equal digests."""
    canonical = [[table, list(state.get(table, {}).values())] for table in TABLES]
    return hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode()).hexdigest()


def diff(before: Snapshot, after: Snapshot) -> Diff:
    """What changed from `before` to `after`, column by column (see `Diff`)."""
    result: Diff = {}
    for table in TABLES:
        old_rows, new_rows = before.get(table, {}), after.get(table, {})
        changes: dict[str, dict[str, list[Any]]] = {}
        for key in sorted(old_rows.keys() | new_rows.keys()):
            old, new = old_rows.get(key), new_rows.get(key)
            if old == new:
                continue
            changes[key] = {
                column: [None if old is None else old[i], None if new is None else new[i]]
                for i, column in enumerate(TABLES[table])
                if old is None or new is None or old[i] != new[i]
            }
        if changes:
            result[table] = changes
    return result


def diff_mismatches(actual: Diff, expected: Diff) -> list[str]:
    """Rows ("table/key") whose change differs between two diffs of the same initial database."""
    keys = {(t, k) for d in (actual, expected) for t, rows in d.items() for k in rows}
    return sorted(f"{t}/{k}" for t, k in keys if actual.get(t, {}).get(k) != expected.get(t, {}).get(k))


# -- actions ----------------------------------------------------------------------------


def order_row(conn: sqlite3.Connection, order_id: str) -> dict[str, Any] | None:
    """The order with this (normalised) id as a dict, or None."""
    row = conn.execute(f"SELECT {', '.join(TABLES['orders'])} FROM orders WHERE order_id = ?", (order_id,)).fetchone()
    return dict(zip(TABLES["orders"], row, strict=True)) if row else None


def _order(conn: sqlite3.Connection, order_id: str) -> dict[str, Any]:
    order = order_row(conn, normalize_id(order_id))
    if order is None:
        raise ActionError(f"no order with id {order_id!r}")
    return order


def _next_id(conn: sqlite3.Connection, table: str, prefix: str, start: int) -> str:
    key = TABLES[table][0]
    numbers = [int(m.group(1)) for (value,) in conn.execute(f"SELECT {key} FROM {table}") if (m := _ID_NUMBER.search(value))]
    return f"{prefix}{max(numbers, default=start - 1) + 1}"


def _refund(conn: sqlite3.Connection, order: dict[str, Any], status: str, ticket_kind: str, today: str) -> dict[str, Any]:
    payment_id = _next_id(conn, "payments", "PAY-", 1001)
    ticket_id = _next_id(conn, "tickets", "T-", 1001)
    with _transaction(conn):
        conn.execute("UPDATE orders SET status = ? WHERE order_id = ?", (status, order["order_id"]))
        conn.execute(
            "INSERT INTO payments (payment_id, order_id, kind, amount_cents, created_on) VALUES (?, ?, 'refund', ?, ?)",
            (payment_id, order["order_id"], order["total_cents"], today),
        )
        conn.execute(
            "INSERT INTO tickets (ticket_id, customer_id, order_id, kind, status, created_on) VALUES (?, ?, ?, ?, 'closed', ?)",
            (ticket_id, order["customer_id"], order["order_id"], ticket_kind, today),
        )
    return {"order_id": order["order_id"], "status": status, "refund": money(order["total_cents"]), "ticket_id": ticket_id}


def refund_order(conn: sqlite3.Connection, today: str, order_id: str) -> dict[str, Any]:
    """Refund a delivered order in full: status "refunded", a refund payment, a closed ticket.

    The return window is policy, not a store rule: it is checked by the tool, not here."""
    order = _order(conn, order_id)
    if order["status"] != "delivered":
        raise ActionError(f"order {order['order_id']} is {order['status']}; only delivered orders can be refunded")
    return _refund(conn, order, "refunded", "refund", today)


def cancel_order(conn: sqlite3.Connection, today: str, order_id: str) -> dict[str, Any]:
    """Cancel an order that is still processing and refund it in full."""
    order = _order(conn, order_id)
    if order["status"] != "processing":
        raise ActionError(f"order {order['order_id']} is {order['status']}; only orders still processing can be cancelled")
    return _refund(conn, order, "cancelled", "cancellation", today)


def update_address(conn: sqlite3.Connection, today: str, order_id: str, address: str) -> dict[str, Any]:
    """Change the shipping address of an order that is still processing."""
    order = _order(conn, order_id)
    if order["status"] != "processing":
        raise ActionError(f"order {order['order_id']} is {order['status']}; only orders still processing can get a new address")
    address = normalize_address(address)
    if not address:
        raise ActionError("the new address is empty")
    conn.execute("UPDATE orders SET shipping_address = ? WHERE order_id = ?", (address, order["order_id"]))
    return {"order_id": order["order_id"], "shipping_address": address}


def exchange_item(conn: sqlite3.Connection, today: str, order_id: str, item_id: str, new_product_id: str) -> dict[str, Any]:
    """Swap one item of a delivered order for another variant of the same product that is in
    stock (the price paid is kept): the item points at the new product, its stock drops by
    the quantity, and an open exchange ticket is created."""
    order = _order(conn, order_id)
    if order["status"] != "delivered":
        raise ActionError(f"order {order['order_id']} is {order['status']}; only delivered orders can be exchanged")
    item = conn.execute(
        "SELECT i.item_id, i.quantity, p.product_id, p.name FROM order_items i JOIN products p USING (product_id) "
        "WHERE i.item_id = ? AND i.order_id = ?",
        (normalize_id(item_id), order["order_id"]),
    ).fetchone()
    if item is None:
        raise ActionError(f"order {order['order_id']} has no item {item_id!r}")
    item_key, quantity, old_product, name = item
    new = conn.execute(
        "SELECT product_id, name, variant, stock FROM products WHERE product_id = ?", (normalize_id(new_product_id),)
    ).fetchone()
    if new is None:
        raise ActionError(f"no product with id {new_product_id!r}")
    new_key, new_name, variant, stock = new
    if new_key == old_product:
        raise ActionError(f"item {item_key} already is product {new_key}")
    if new_name != name:
        raise ActionError(f"{new_key} is a {new_name}, not a variant of {name}; exchanges stay within the same product")
    if stock < quantity:
        raise ActionError(f"{new_key} ({new_name}, {variant}) is out of stock")
    ticket_id = _next_id(conn, "tickets", "T-", 1001)
    with _transaction(conn):
        conn.execute("UPDATE order_items SET product_id = ? WHERE item_id = ?", (new_key, item_key))
        conn.execute("UPDATE products SET stock = stock - ? WHERE product_id = ?", (quantity, new_key))
        conn.execute(
            "INSERT INTO tickets (ticket_id, customer_id, order_id, kind, status, created_on) VALUES (?, ?, ?, 'exchange', 'open', ?)",
            (ticket_id, order["customer_id"], order["order_id"], today),
        )
    return {"order_id": order["order_id"], "item_id": item_key, "new_product": f"{new_name} ({variant})", "ticket_id": ticket_id}


def escalate_to_human(conn: sqlite3.Connection, today: str, order_id: str, summary: str = "") -> dict[str, Any]:
    """Open an escalation ticket for a human agent about an order (the order is unchanged)."""
    order = _order(conn, order_id)
    ticket_id = _next_id(conn, "tickets", "T-", 1001)
    conn.execute(
        "INSERT INTO tickets (ticket_id, customer_id, order_id, kind, status, created_on, note) "
        "VALUES (?, ?, ?, 'escalation', 'open', ?, ?)",
        (ticket_id, order["customer_id"], order["order_id"], today, summary),
    )
    return {"order_id": order["order_id"], "ticket_id": ticket_id}


ACTION_FUNCTIONS = {
    "refund_order": refund_order,
    "exchange_item": exchange_item,
    "cancel_order": cancel_order,
    "update_address": update_address,
    "escalate_to_human": escalate_to_human,
}


def apply_action(conn: sqlite3.Connection, today: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one action by tool name (as a gold action replays); raises `ActionError` if refused
    and `TypeError` for wrong arguments."""
    if name not in ACTION_FUNCTIONS:
        raise ActionError(f"unknown action {name!r}; actions are {', '.join(ACTIONS)}")
    return ACTION_FUNCTIONS[name](conn, today, **arguments)


__all__ = [
    "ACTIONS",
    "TABLES",
    "ActionError",
    "Diff",
    "Snapshot",
    "apply_action",
    "copy",
    "create",
    "diff",
    "diff_mismatches",
    "digest",
    "money",
    "normalize_address",
    "normalize_email",
    "normalize_id",
    "snapshot",
    "snapshot_rows",
]
