"""Scripted CustomerSupport baselines with no LLM: a floor, a rule-based support agent, and a
ceiling (a careful agent that knows the gold actions).

All are stateless: each turn is derived from the conversation (and, for the oracle, the
reset info), so one agent can play many episodes at once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ...agents.base import Action, Agent
from ...formats.chat import FORMAT_ERROR_PREFIX, tool_call_turn, tool_exchanges
from ...formats.support import SupportPolicy
from ...judges.facts import fact_present

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ORDER_ID = re.compile(r"\b[Oo]-\d{3,}\b")
_YES = re.compile(r"\b(?:yes|go ahead|please do|sure|that's fine|ok(?:ay)?)\b", re.IGNORECASE)
_ADDRESS = re.compile(r"\d+ [A-Z][\w'-]*(?: [A-Z][\w'-]*)*, [A-Z][\w' -]* \d{4,6}")
_VARIANT = (re.compile(r"\bthe (.+?) variant\b"), re.compile(r"in (.+?)\?$"))
_INTENTS = (
    ("dispute", re.compile(r"never (?:arrived|received|got)|charged twice|double charge|did ?n[o']t authori[sz]e|unauthori[sz]ed|dispute")),
    ("cancel", re.compile(r"\bcancel")),
    ("exchange", re.compile(r"exchange|swap|different (?:size|colou?r|variant|version)|another version")),
    ("address", re.compile(r"address|moved")),
    ("refund", re.compile(r"refund|money back|return")),
    ("info", re.compile(r"status|where is|how much|total")),
)
ASK_IDENTITY = "To help you, I first need to verify your account. Could you please give me your email address and the order id?"
CONFIRM = "Shall I go ahead?"


@dataclass
class _Call:
    """A tool call with its result, parsed from JSON where it is (`tool_exchanges` pairs them)."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    ok: bool = False


@dataclass
class _Conversation:
    """What an agent can read off the observation: customer turns, own texts, tool calls."""

    system: str
    policy: SupportPolicy = field(default_factory=SupportPolicy)
    customer: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    last_role: str = ""

    @classmethod
    def read(cls, observation: list[dict[str, Any]], info: dict[str, Any]) -> _Conversation:
        system = observation[0].get("content") or ""
        conversation = cls(system=system, policy=SupportPolicy.of(info.get("facts"), system))
        for message in observation[1:]:
            role, content = message.get("role"), message.get("content") or ""
            if role == "user" and not content.startswith(FORMAT_ERROR_PREFIX):
                conversation.customer.append(content)
                conversation.last_role = "user"
            elif role == "assistant" and content:
                conversation.agent.append(content)
                conversation.last_role = "assistant"
        for exchange in tool_exchanges(observation[1:]):
            call = _Call(exchange.name, exchange.arguments, exchange.result, exchange.ok)
            if exchange.ok:
                try:
                    call.result = json.loads(exchange.result or "")
                except ValueError:
                    pass
            conversation.calls.append(call)
        return conversation

    def done(self, name: str, **arguments: Any) -> _Call | None:
        """The last successful call of `name` with these arguments (a subset), if any."""
        for call in reversed(self.calls):
            if call.ok and call.name == name and all(call.arguments.get(k) == v for k, v in arguments.items()):
                return call
        return None

    def confirmed(self) -> bool:
        """Whether the agent's last text asked for confirmation and the customer agreed."""
        return bool(self.agent) and self.agent[-1].endswith(CONFIRM) and self.last_role == "user" and bool(_YES.search(self.customer[-1]))


class PolicySupportAgent(Agent):
    """A rule-based support agent that never reads the gold data.

    It asks for the email and order id, identifies the customer with `find_customer`, reads
    that order, classifies the opening message by keywords (dispute, cancel, exchange,
    address change, refund, information) and applies the written policy to the order
    (today, the return window and the dispute threshold come from the env's ``info["facts"]``),
    asking for confirmation before each change. Its parsing of what the customer writes is
    regex-based, so unusual phrasings (a bare order number, an address or variant given in
    an unexpected form) trip it up: a realistic middle baseline.
    """

    name = "policy"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        c = _Conversation.read(observation, info)
        identified = next((call for call in reversed(c.calls) if call.name == "find_customer" and call.ok), None)
        if identified is None:
            return self._identify(c)
        order_id = str(identified.arguments["order_id"]).strip().lstrip("#").upper()
        fetched = c.done("get_order", order_id=order_id)
        if fetched is None:
            return tool_call_turn("get_order", {"order_id": order_id}, first_id=len(c.calls))
        order: dict[str, Any] = fetched.result
        opening = c.customer[0].casefold() if c.customer else ""
        intent = next((name for name, pattern in _INTENTS if pattern.search(opening)), "info")
        others = [o for o in dict.fromkeys(_ORDER_ID.findall(" ".join(c.customer))) if o.upper() != order_id]
        note = f" I can't act on order {others[0]}: only its account holder can request changes to it." if others else ""
        return getattr(self, f"_{intent}")(c, order, order_id, note)

    # -- steps --------------------------------------------------------------------------

    def _identify(self, c: _Conversation) -> Action:
        said = " ".join(c.customer)
        emails = _EMAIL.findall(said)
        tried = {(call.arguments.get("email"), call.arguments.get("order_id")) for call in c.calls if call.name == "find_customer"}
        if emails:
            for order_id in reversed(_ORDER_ID.findall(said)):
                if (emails[-1], order_id.upper()) not in tried:
                    return tool_call_turn("find_customer", {"email": emails[-1], "order_id": order_id.upper()}, first_id=len(c.calls))
        if tried and c.last_role == "user":
            return "I couldn't find an account with that email address and order id. Could you double-check both, please?"
        return ASK_IDENTITY

    def _change(self, c: _Conversation, tool: str, arguments: dict[str, Any], proposal: str, outcome: str) -> Action:
        """Propose, wait for a yes, call the tool, report: the shape of every change."""
        done = c.done(tool, **arguments)
        if done is not None:
            return outcome.format(**done.result)
        if c.confirmed():
            return tool_call_turn(tool, arguments, first_id=len(c.calls))
        return f"{proposal} {CONFIRM}"

    def _refund(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        if order["status"] != "delivered":
            return f"I'm sorry, order {order_id} is {order['status']}, so it can't be refunded.{note}"
        today, window = _policy(c.policy)[:2]
        days = (today - date.fromisoformat(order["delivered_on"])).days
        if days > window:
            return (
                f"I'm sorry, order {order_id} was delivered on {order['delivered_on']}, {days} days ago. That is outside our "
                f"{window}-day return window, so I can't refund it.{note}"
            )
        return self._change(
            c,
            "refund_order",
            {"order_id": order_id},
            f"Order {order_id} is within the return window. I can refund the full {order['total']} to your original payment method.{note}",
            "Done: your refund of {refund} for order {order_id} has been processed (ticket {ticket_id})." + note,
        )

    def _dispute(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        threshold = _policy(c.policy)[2]
        if _cents(order["total"]) <= round(threshold * 100):
            return self._refund(c, order, order_id, note)
        done = c.done("escalate_to_human", order_id=order_id)
        if done is None:
            summary = f"Customer disputes order {order_id} ({order['total']}): {c.customer[0][:300]}"
            return tool_call_turn("escalate_to_human", {"order_id": order_id, "summary": summary}, first_id=len(c.calls))
        return (
            f"I'm sorry about this. Disputes over ${threshold:g} are handled by a specialist, so I have escalated your case to a human "
            f"agent. Your ticket id is {done.result['ticket_id']}; they will contact you.{note}"
        )

    def _cancel(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        if order["status"] != "processing":
            return f"I'm sorry, order {order_id} is already {order['status']}, so it can no longer be cancelled.{note}"
        return self._change(
            c,
            "cancel_order",
            {"order_id": order_id},
            f"I can cancel order {order_id} and refund the full {order['total']}.{note}",
            "Done: order {order_id} is cancelled and {refund} will be refunded (ticket {ticket_id})." + note,
        )

    def _address(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        if order["status"] != "processing":
            return f"I'm sorry, order {order_id} is already {order['status']}, so its address can no longer be changed.{note}"
        found = [m.group() for text in c.customer[1:] for m in _ADDRESS.finditer(text)]
        if not found:
            return f"Order {order_id} has not shipped yet, so I can change its address. What is the new shipping address?"
        return self._change(
            c,
            "update_address",
            {"order_id": order_id, "address": found[-1]},
            f"I will change the shipping address of order {order_id} to {found[-1]}.",
            "Done: order {order_id} will now be shipped to {shipping_address}." + note,
        )

    def _exchange(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        today, window = _policy(c.policy)[:2]
        if order["status"] != "delivered" or (today - date.fromisoformat(order["delivered_on"])).days > window:
            return f"I'm sorry, order {order_id} can't be exchanged: only orders delivered in the last {window} days can be."
        opening = c.customer[0].casefold()
        item = next((i for i in order["items"] if i["name"].casefold() in opening), order["items"][0])
        wanted = _wanted_variant(c.customer[1:])
        if wanted is None:
            return f"Which variant of the {item['name']} would you like instead (you have {item['variant']})?"
        search = c.done("search_products", query=item["name"])
        if search is None:
            return tool_call_turn("search_products", {"query": item["name"]}, first_id=len(c.calls))
        variants = search.result if isinstance(search.result, list) else []
        match = next((p for p in variants if p["variant"].casefold() == wanted.casefold()), None)
        if match is None:
            options = ", ".join(p["variant"] for p in variants if p["in_stock"] > 0 and p["product_id"] != item["product_id"])
            return f"I couldn't find a {item['name']} in {wanted}. Available variants: {options or 'none'}. Which one would you like?"
        if match["in_stock"] <= 0:
            options = ", ".join(p["variant"] for p in variants if p["in_stock"] > 0 and p["product_id"] != item["product_id"])
            return f"I'm sorry, the {match['variant']} variant is out of stock. In stock: {options or 'nothing else'}. Which one?"
        return self._change(
            c,
            "exchange_item",
            {"order_id": order_id, "item_id": item["item_id"], "new_product_id": match["product_id"]},
            f"I can exchange your {item['name']} ({item['variant']}) for the {match['variant']} variant.",
            "Done: your exchange is confirmed, the {new_product} is on its way. Your ticket id is {ticket_id}." + note,
        )

    def _info(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        delivered = f" on {order['delivered_on']}" if order["delivered_on"] else ""
        return f"Order {order_id} is {order['status']}{delivered}. Its total was {order['total']}.{note}"


def _policy(policy: SupportPolicy) -> tuple[date, int, float]:
    """(today, return window in days, dispute threshold in dollars) of the scenario's policy,
    with a default for what neither the env's facts nor the prompt states."""
    return (
        policy.today or date.today(),
        policy.window_days if policy.window_days is not None else 30,
        policy.dispute_threshold if policy.dispute_threshold is not None else 250.0,
    )


def _cents(amount: str) -> int:
    return round(float(amount.replace("$", "").replace(",", "")) * 100)


def _wanted_variant(customer_turns: list[str]) -> str | None:
    for text in reversed(customer_turns):
        for pattern in _VARIANT:
            match = pattern.search(text)
            if match:
                return match.group(1).strip()
    return None


class UnhelpfulAgent(Agent):
    """Replies politely without doing anything: the floor."""

    name = "unhelpful"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        return "Thanks for reaching out! Please check our website for more details."


class OracleAgent(Agent):
    """A perfect support agent that happens to know the gold data in ``info["task"]``: the ceiling.

    It follows the policy as a careful agent would: asks for the email address and order id
    and identifies the customer with what they gave (when that does not match, it says so
    and asks again), reads the orders the request is about (and, for an exchange, searches
    the catalogue; when the customer names orders beyond those, it lists the customer's
    orders to tell which are theirs), proposes the gold actions and waits for the customer's
    yes, carries them out, then reports the outcome (refund amounts, ticket ids) and the
    required information. The gold data tells it what the customer will say and which
    changes are right; it never skips a step a real agent needs."""

    name = "oracle"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        c = _Conversation.read(observation, info)
        identified = next((call for call in reversed(c.calls) if call.name == "find_customer" and call.ok), None)
        if identified is None:
            return _identify_as_told(c, task)
        gold: list[dict[str, Any]] = task["gold_actions"]
        orders = list(dict.fromkeys(str(a["arguments"]["order_id"]) for a in gold)) or [task["facts"]["order_id"]]
        lookups = [("get_order", {"order_id": order_id}) for order_id in orders]
        lookups += [("search_products", {"query": name}) for name in _exchanged_names(c, gold)]
        others = _other_orders(c, [*orders, task["facts"]["order_id"], task.get("wrong_order_id") or ""])
        if others:
            lookups.append(("list_orders", {"email": identified.arguments["email"]}))
        for name, arguments in lookups:
            if not _attempted(c, name, arguments):
                return tool_call_turn(name, arguments, first_id=len(c.calls))
        pending = [a for a in gold if not _attempted(c, a["name"], a["arguments"])]
        if pending and not c.confirmed():
            return _proposal(c, pending, task["facts"])
        if pending:
            return tool_call_turn(pending[0]["name"], pending[0]["arguments"], first_id=len(c.calls))
        return _outcome(c, gold, task["required_info"], others)


def _identify_as_told(c: _Conversation, task: dict[str, Any]) -> Action:
    """Ask for the email and order id, then try what the customer gave (the wrong order id
    first, if they give it); say so when it does not match."""
    said = " ".join(c.customer)
    email = task["facts"]["email"]
    candidates = [i for i in (task.get("wrong_order_id"), task["facts"]["order_id"]) if i]
    positions = {i: max((m.start() for m in _id_pattern(i).finditer(said)), default=-1) for i in candidates}
    order_id = max(candidates, key=lambda i: positions[i]) if max(positions.values()) >= 0 else None
    if email.casefold() not in said.casefold() or order_id is None:
        return ASK_IDENTITY
    if not _attempted(c, "find_customer", {"email": email, "order_id": order_id}):
        return tool_call_turn("find_customer", {"email": email, "order_id": order_id}, first_id=len(c.calls))
    return "I couldn't find an account with that email address and order id. Could you double-check the order id, please?"


def _id_pattern(order_id: str) -> re.Pattern[str]:
    """An order id as a customer may write it: in full ("O-55669") or its number ("55669")."""
    number = order_id.rpartition("-")[2]
    return re.compile(rf"(?<![\w-])(?:{re.escape(order_id)}|{re.escape(number)})(?![\w-])", re.IGNORECASE)


def _attempted(c: _Conversation, name: str, arguments: dict[str, Any]) -> bool:
    return any(call.name == name and call.arguments == arguments for call in c.calls)


def _exchanged_names(c: _Conversation, gold: list[dict[str, Any]]) -> list[str]:
    """Product names of the items the gold exchanges, read off the orders fetched."""
    names = []
    for action in gold:
        if action["name"] == "exchange_item":
            order = c.done("get_order", order_id=action["arguments"]["order_id"])
            items = order.result["items"] if order is not None else []
            names += [i["name"] for i in items if i["item_id"] == action["arguments"]["item_id"]]
    return list(dict.fromkeys(names))


def _other_orders(c: _Conversation, known: list[str]) -> list[str]:
    """Order ids the customer wrote that the request does not otherwise involve."""
    known_ids = {k.upper() for k in known}
    return [o for o in dict.fromkeys(m.upper() for m in _ORDER_ID.findall(" ".join(c.customer))) if o not in known_ids]


def _proposal(c: _Conversation, pending: list[dict[str, Any]], facts: dict[str, str]) -> str:
    """The changes about to be made, ending with `CONFIRM`."""
    plans, notes = [], []
    for action in pending:
        arguments = action["arguments"]
        order_id = arguments["order_id"]
        fetched = c.done("get_order", order_id=order_id)
        order = fetched.result if fetched is not None else {"items": [], "total": "the total"}
        if action["name"] == "refund_order":
            plans.append(f"refund order {order_id} in full ({order['total']}) to your original payment method")
        elif action["name"] == "cancel_order":
            plans.append(f"cancel order {order_id} and refund its full {order['total']}")
        elif action["name"] == "update_address":
            plans.append(f"change the shipping address of order {order_id} to {arguments['address']}")
        elif action["name"] == "escalate_to_human":
            plans.append(f"pass your case about order {order_id} to a human agent")
        else:
            item = next((i for i in order["items"] if i["item_id"] == arguments["item_id"]), {"name": "item", "variant": ""})
            found = c.done("search_products", query=item["name"])
            variants = found.result if found is not None and isinstance(found.result, list) else []
            new = next((p["variant"] for p in variants if p["product_id"] == arguments["new_product_id"]), arguments["new_product_id"])
            wish = facts.get("new_variant", "")
            sold_out = any(p["variant"].casefold() == wish.casefold() and p["in_stock"] <= 0 for p in variants)
            if sold_out and wish.casefold() != new.casefold() and new.casefold() not in " ".join(c.customer).casefold():
                notes.append(f"I'm sorry, the {wish} variant is out of stock, but the {new} variant is in stock.")
            plans.append(f"exchange the {item['name']} ({item['variant']}) in order {order_id} for the {new} variant")
    return " ".join([*notes, f"I can {'; and '.join(plans)}.", CONFIRM])


_OUTCOMES = {
    "refund_order": "Order {order_id} is refunded: {refund} goes back to your original payment method (ticket {ticket_id}).",
    "cancel_order": "Order {order_id} is cancelled and {refund} will be refunded (ticket {ticket_id}).",
    "update_address": "The shipping address of order {order_id} has been changed to {shipping_address}.",
    "exchange_item": "Your exchange is confirmed: the {new_product} is on its way (ticket {ticket_id}).",
    "escalate_to_human": "I have escalated your case about order {order_id} to a human agent, who will contact you. "
    "Your ticket id is {ticket_id}.",
}
"""How the oracle reports each change, filled from the tool's result."""


def _outcome(c: _Conversation, gold: list[dict[str, Any]], required: list[str], others: list[str]) -> str:
    """What was done, with refund amounts and ticket ids, then any required information not
    yet said, and a refusal for orders that are not the customer's."""
    sentences = []
    for action in gold:
        done = c.done(action["name"], **action["arguments"])
        if done is None:
            continue
        sentences.append(_OUTCOMES[action["name"]].format(**done.result))
    listed = c.done("list_orders")
    theirs = {str(o["order_id"]).upper() for o in listed.result} if listed is not None and isinstance(listed.result, list) else set()
    sentences += [f"I can't act on order {o}: only its account holder can request changes to it." for o in others if o not in theirs]
    said = "\n".join([*c.agent, *sentences])
    untold = [fact for fact in required if not fact_present(fact, said)]
    if untold:
        sentences.append(f"Here is what you need to know: {'; '.join(untold)}.")
    return " ".join(sentences) or "I have looked into your request; nothing needs to change."


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (OracleAgent, PolicySupportAgent, UnhelpfulAgent)}
"""Scripted baselines of CustomerSupport-v0, by agent spec name."""

__all__ = ["BASELINES", "OracleAgent", "PolicySupportAgent", "UnhelpfulAgent"]
