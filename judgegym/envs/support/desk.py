"""The support desk: the agent's tools over one episode's database, with the identification
rule enforced and policy violations recorded.

Reading or changing an order (or listing orders) is allowed only for a customer identified
with `find_customer` (email plus one of their order ids). Anything else is refused with an
error the agent reads and recorded in `SupportDesk.violations`, without revealing whether
the order exists. A refund outside the return window is carried out but recorded.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Annotated, Any

from pydantic import Field

from ...tools import Tool, ToolError, ToolSet
from . import db
from .scenario import SupportScenario

Id = Annotated[str, Field(min_length=1, max_length=64)]
Email = Annotated[str, Field(min_length=3, max_length=254)]

MAX_VIOLATIONS = 50
"""Violations kept per episode (the count keeps growing past it)."""


class SupportDesk:
    """Tools bound to the current episode (see `start`); `toolset` is built once and reused."""

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None
        self.today = date(2025, 1, 1)
        self.window = 30
        self.identified: list[str] = []
        """Customer ids identified so far, in order."""
        self.violations: list[dict[str, str]] = []
        """Policy violations: ``{"rule", "tool", "order_id"}`` (or ``"email"``), in order."""
        self.violation_count = 0
        methods = (
            self.find_customer,
            self.list_orders,
            self.get_order,
            self.search_products,
            self.refund_order,
            self.exchange_item,
            self.cancel_order,
            self.update_address,
            self.escalate_to_human,
        )
        self.toolset = ToolSet([Tool.from_function(m) for m in methods])

    def start(self, conn: sqlite3.Connection, scenario: SupportScenario) -> None:
        """Serve a new episode on `conn` (the episode's own copy of the database)."""
        if self.conn is not None:
            self.conn.close()
        self.conn = conn
        self.today = scenario.today
        self.window = scenario.return_window_days
        self.identified = []
        self.violations = []
        self.violation_count = 0

    # -- tools --------------------------------------------------------------------------

    def find_customer(self, email: Email, order_id: Id) -> dict[str, Any]:
        """Identify the customer you are talking to.

        Both details must come from the customer and belong together; afterwards you may read
        and change this customer's orders.

        Args:
            email: The customer's email address.
            order_id: The id of one of the customer's orders, e.g. "O-12345".
        """
        conn = self._conn()
        row = conn.execute(
            "SELECT c.customer_id, c.name, c.email, c.phone, c.address FROM customers c JOIN orders o USING (customer_id) "
            "WHERE c.email = ? AND o.order_id = ?",
            (db.normalize_email(email), db.normalize_id(order_id)),
        ).fetchone()
        if row is None:
            raise ToolError("no customer matches this email together with this order id. Ask the customer to check both.")
        if row[0] not in self.identified:
            self.identified.append(row[0])
        return dict(zip(("customer_id", "name", "email", "phone", "address"), row, strict=True))

    def list_orders(self, email: Email) -> list[dict[str, Any]]:
        """List the orders of an identified customer (newest first).

        Args:
            email: The identified customer's email address.
        """
        conn = self._conn()
        row = conn.execute("SELECT customer_id FROM customers WHERE email = ?", (db.normalize_email(email),)).fetchone()
        if not self.identified:
            self._violate("unidentified", "list_orders", email=email)
            raise ToolError("identify the customer with find_customer(email, order_id) before looking at their orders.")
        if row is None or row[0] not in self.identified:
            if row is not None:
                self._violate("other_customer", "list_orders", email=email)
            raise ToolError("this email is not the identified customer's; you may only access the identified customer's orders.")
        orders = conn.execute(
            "SELECT order_id, status, placed_on, total_cents FROM orders WHERE customer_id = ? ORDER BY placed_on DESC, order_id",
            (row[0],),
        )
        return [{"order_id": o, "status": s, "placed_on": p, "total": db.money(t)} for o, s, p, t in orders]

    def get_order(self, order_id: Id) -> dict[str, Any]:
        """Read an order of the identified customer: status, dates, address, items, payments.

        Args:
            order_id: The order id, e.g. "O-12345".
        """
        order = self._owned(order_id, "get_order")
        conn = self._conn()
        items = conn.execute(
            "SELECT i.item_id, i.product_id, p.name, p.variant, i.quantity, i.unit_price_cents "
            "FROM order_items i JOIN products p USING (product_id) WHERE i.order_id = ? ORDER BY i.item_id",
            (order["order_id"],),
        )
        payments = conn.execute(
            "SELECT kind, amount_cents, created_on FROM payments WHERE order_id = ? ORDER BY payment_id", (order["order_id"],)
        )
        return {
            "order_id": order["order_id"],
            "status": order["status"],
            "placed_on": order["placed_on"],
            "delivered_on": order["delivered_on"],
            "shipping_address": order["shipping_address"],
            "payment_method": order["payment_method"],
            "total": db.money(order["total_cents"]),
            "items": [
                {"item_id": i, "product_id": p, "name": n, "variant": v, "quantity": q, "unit_price": db.money(c)}
                for i, p, n, v, q, c in items
            ],
            "payments": [{"kind": k, "amount": db.money(a), "date": d} for k, a, d in payments],
        }

    def search_products(self, query: Annotated[str, Field(min_length=1, max_length=200)]) -> list[dict[str, Any]] | str:
        """Search the product catalogue (public: no identification needed).

        Lists every variant whose name and variant contain all the query's words, with its
        price and the units in stock.

        Args:
            query: Words of the product name or variant, e.g. "rain jacket navy".
        """
        words = query.casefold().split()
        rows = self._conn().execute("SELECT product_id, name, variant, price_cents, stock FROM products ORDER BY product_id")
        hits = [
            {"product_id": p, "name": n, "variant": v, "price": db.money(c), "in_stock": s}
            for p, n, v, c, s in rows
            if all(w in f"{n} {v}".casefold() for w in words)
        ]
        return hits[:20] or f"No products match {query!r}."

    def refund_order(self, order_id: Id) -> dict[str, Any]:
        """Refund a delivered order of the identified customer in full.

        The money goes back to the original payment method. Policy: only within the return
        window, counted from the delivery date.

        Args:
            order_id: The order id.
        """
        order = self._owned(order_id, "refund_order")
        if order["status"] == "delivered" and order["delivered_on"]:
            days = (self.today - date.fromisoformat(order["delivered_on"])).days
            if days > self.window:
                self._violate("refund_outside_window", "refund_order", order_id=order["order_id"])
        return self._act(db.refund_order, order["order_id"])

    def exchange_item(self, order_id: Id, item_id: Id, new_product_id: Id) -> dict[str, Any]:
        """Exchange one item of a delivered order for another variant of the same product.

        The new variant must be in stock; the price paid is kept. Opens an exchange ticket.

        Args:
            order_id: The order id.
            item_id: The item to exchange, as listed by get_order, e.g. "I-1042".
            new_product_id: The variant wanted instead, as listed by search_products, e.g. "P-117".
        """
        order = self._owned(order_id, "exchange_item")
        return self._act(db.exchange_item, order["order_id"], item_id, new_product_id)

    def cancel_order(self, order_id: Id) -> dict[str, Any]:
        """Cancel an order that is still processing (not shipped) and refund it in full.

        Args:
            order_id: The order id.
        """
        order = self._owned(order_id, "cancel_order")
        return self._act(db.cancel_order, order["order_id"])

    def update_address(self, order_id: Id, address: Annotated[str, Field(min_length=1, max_length=300)]) -> dict[str, Any]:
        """Change the shipping address of an order that is still processing (not shipped).

        Args:
            order_id: The order id.
            address: The new address, exactly as the customer gives it.
        """
        order = self._owned(order_id, "update_address")
        return self._act(db.update_address, order["order_id"], address)

    def escalate_to_human(self, order_id: Id, summary: Annotated[str, Field(max_length=2000)] = "") -> dict[str, Any]:
        """Hand the case to a human agent: opens an escalation ticket and returns its id.

        Policy: only for disputes about an order whose total is over the threshold.

        Args:
            order_id: The order id.
            summary: A short description of the case for the human agent.
        """
        order = self._owned(order_id, "escalate_to_human")
        return self._act(db.escalate_to_human, order["order_id"], summary)

    # -- internals ----------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self.conn is None:
            raise RuntimeError("the desk has no episode; call start() first")
        return self.conn

    def _owned(self, order_id: str, tool: str) -> dict[str, Any]:
        """The order, if it belongs to an identified customer; else a refusal (and a violation)."""
        if not self.identified:
            self._violate("unidentified", tool, order_id=order_id)
            raise ToolError("identify the customer with find_customer(email, order_id) before reading or changing any order.")
        order = db.order_row(self._conn(), db.normalize_id(order_id))
        if order is None or order["customer_id"] not in self.identified:
            if order is not None:
                self._violate("other_customer", tool, order_id=order_id)
            raise ToolError(f"{order_id!r} is not an order of the identified customer; you may only access their orders.")
        return order

    def _act(self, action: Any, *arguments: str) -> dict[str, Any]:
        try:
            return action(self._conn(), self.today.isoformat(), *arguments)
        except db.ActionError as exc:
            raise ToolError(str(exc)) from None

    def _violate(self, rule: str, tool: str, **detail: str) -> None:
        self.violation_count += 1
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append({"rule": rule, "tool": tool, **{k: v[:64] for k, v in detail.items()}})


__all__ = ["SupportDesk"]
