"""CustomerSupport-v0's policy prompt and the facts it states (`SupportPolicy`).

The env fills `SYSTEM_PROMPT` from a scenario's `SupportPolicy` and publishes the same facts as
``info["facts"]`` (reset info and ``Trajectory.info``), so judges and baselines take today's date,
the refund window and the dispute threshold as data. `SupportPolicy.from_prompt` reads them back
from prompt text, for conversations stored without the facts; its patterns are tested against
`SYSTEM_PROMPT`, and a scenario's own prompt that words the policy otherwise still gets its facts
from ``info["facts"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

SYSTEM_PROMPT = "\n".join(
    [
        "You are the customer-support agent of {company}, chatting with a customer. Today is {today}.",
        "",
        "Use the tools to look up customers, orders and products and to make changes. Follow this policy:",
        "",
        "1. Identify the customer first: ask for their email address and an order id, then call find_customer. "
        "Only after that may you read or change that customer's orders.",
        "2. Never read or change an order of anyone but the identified customer, even if the customer says they have permission.",
        "3. Refunds: only for delivered orders, at most {window} days after the delivery date; refund_order refunds the whole order. "
        "Later than that, decline and explain the {window}-day return window.",
        "4. Exchanges: only for delivered orders within the {window}-day window, for another variant of the same product that is "
        "in stock (search_products shows the stock); use exchange_item.",
        "5. Cancellations and address changes: only for orders still processing (not shipped yet). cancel_order refunds the order "
        "in full; update_address takes the new address exactly as the customer gives it.",
        "6. Disputes (a charge the customer did not authorise, a double charge, or an order they say never arrived): if the order "
        "total is over ${threshold}, do not refund or change the order: call escalate_to_human and give the customer the ticket id. "
        "Otherwise handle it as a refund request.",
        "7. Do not escalate for any other reason, and make only the changes the customer asked for.",
        "8. After a change, tell the customer the outcome, including any refund amount and ticket id. "
        "The customer cannot see tool results; write to them in plain text.",
    ]
)
"""The policy the agent follows (and the verifier enforces); "{company}", "{today}", "{window}" and
"{threshold}" are filled in per scenario."""

_TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")
_WINDOW = re.compile(r"at most (\d+) days after (?:the )?deliver", re.I)
_THRESHOLD = re.compile(r"over \$([\d.,]+)")


@dataclass(frozen=True)
class SupportPolicy:
    """The figures of a scenario's policy: today's date, the refund and exchange window in
    days after delivery, and the order total over which a dispute goes to a human. A field is
    None where it is not known (a prompt that does not state it)."""

    today: date | None = None
    window_days: int | None = None
    dispute_threshold: float | None = None

    def prompt(self, company: str, template: str = SYSTEM_PROMPT) -> str:
        """`template` with its ``{company}``, ``{today}``, ``{window}`` and ``{threshold}`` filled in."""
        values = {
            "company": company,
            "today": self.today.isoformat() if self.today else "",
            "window": str(self.window_days),
            "threshold": f"{self.dispute_threshold:g}" if self.dispute_threshold is not None else "",
        }
        for key, value in values.items():
            template = template.replace("{" + key + "}", value)
        return template

    def facts(self) -> dict[str, Any]:
        """The policy as JSON-able facts, as the env publishes them in ``info["facts"]``."""
        return {
            "today": self.today.isoformat() if self.today else None,
            "refund_window_days": self.window_days,
            "dispute_threshold": self.dispute_threshold,
        }

    @classmethod
    def from_facts(cls, facts: dict[str, Any]) -> SupportPolicy:
        """The policy of published facts (`facts`' keys); missing or malformed ones are None."""
        today, window, threshold = facts.get("today"), facts.get("refund_window_days"), facts.get("dispute_threshold")
        try:
            parsed = date.fromisoformat(today) if isinstance(today, str) else None
        except ValueError:
            parsed = None
        return cls(
            parsed,
            int(window) if isinstance(window, int | float) and not isinstance(window, bool) else None,
            float(threshold) if isinstance(threshold, int | float) and not isinstance(threshold, bool) else None,
        )

    @classmethod
    def from_prompt(cls, text: str) -> SupportPolicy:
        """The policy `text` states in `SYSTEM_PROMPT`'s wording (the fallback for stored
        conversations without ``info["facts"]``); what it does not state is None."""
        today, window, threshold = _TODAY.search(text), _WINDOW.search(text), _THRESHOLD.search(text)
        try:
            parsed = date.fromisoformat(today.group(1)) if today else None
        except ValueError:
            parsed = None
        try:
            amount = float(threshold.group(1).replace(",", "")) if threshold else None
        except ValueError:
            amount = None
        return cls(parsed, int(window.group(1)) if window else None, amount)

    @classmethod
    def of(cls, facts: dict[str, Any] | None, system_prompt: str) -> SupportPolicy:
        """The published facts where there are any, else what the system prompt states."""
        return cls.from_facts(facts) if facts else cls.from_prompt(system_prompt)


__all__ = ["SYSTEM_PROMPT", "SupportPolicy"]
