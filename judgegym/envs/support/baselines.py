"""Scripted CustomerSupport baselines with no LLM: a floor, a rule-based support agent, and a
ceiling that reads the gold actions.

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

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ORDER_ID = re.compile(r"\b[Oo]-\d{3,}\b")
_TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")
_WINDOW = re.compile(r"at most (\d+) days after the delivery date")
_THRESHOLD = re.compile(r"total is over \$([\d.,]+)")
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


def _tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    result: Any = None
    ok: bool = False


@dataclass
class _Conversation:
    """What an agent can read off the observation: customer turns, own texts, tool calls."""

    system: str
    customer: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    last_role: str = ""

    @classmethod
    def read(cls, observation: list[dict[str, Any]]) -> _Conversation:
        conversation = cls(system=observation[0].get("content") or "")
        pending: dict[str, _Call] = {}
        for message in observation[1:]:
            role, content = message.get("role"), message.get("content") or ""
            if role == "user" and not content.startswith("[format error]"):
                conversation.customer.append(content)
                conversation.last_role = "user"
            elif role == "assistant":
                if content:
                    conversation.agent.append(content)
                    conversation.last_role = "assistant"
                for call in message.get("tool_calls") or []:
                    try:
                        arguments = json.loads(call["function"]["arguments"])
                    except (ValueError, KeyError):
                        arguments = {}
                    pending[call["id"]] = _Call(call["function"]["name"], arguments)
                    conversation.calls.append(pending[call["id"]])
            elif role == "tool" and message.get("tool_call_id") in pending:
                call = pending.pop(message["tool_call_id"])
                call.ok = not content.startswith("Error")
                try:
                    call.result = json.loads(content) if call.ok else content
                except ValueError:
                    call.result = content
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
    (today, the return window and the dispute threshold are read off the system prompt),
    asking for confirmation before each change. Its parsing of what the customer writes is
    regex-based, so unusual phrasings (a bare order number, an address or variant given in
    an unexpected form) trip it up: a realistic middle baseline.
    """

    name = "policy"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        c = _Conversation.read(observation)
        identified = next((call for call in reversed(c.calls) if call.name == "find_customer" and call.ok), None)
        if identified is None:
            return self._identify(c)
        order_id = str(identified.arguments["order_id"]).strip().lstrip("#").upper()
        fetched = c.done("get_order", order_id=order_id)
        if fetched is None:
            return _tool_call("get_order", {"order_id": order_id}, f"call_{len(c.calls)}")
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
                    return _tool_call("find_customer", {"email": emails[-1], "order_id": order_id.upper()}, f"call_{len(c.calls)}")
        if tried and c.last_role == "user":
            return "I couldn't find an account with that email address and order id. Could you double-check both, please?"
        return ASK_IDENTITY

    def _change(self, c: _Conversation, tool: str, arguments: dict[str, Any], proposal: str, outcome: str) -> Action:
        """Propose, wait for a yes, call the tool, report: the shape of every change."""
        done = c.done(tool, **arguments)
        if done is not None:
            return outcome.format(**done.result)
        if c.confirmed():
            return _tool_call(tool, arguments, f"call_{len(c.calls)}")
        return f"{proposal} {CONFIRM}"

    def _refund(self, c: _Conversation, order: dict[str, Any], order_id: str, note: str) -> Action:
        if order["status"] != "delivered":
            return f"I'm sorry, order {order_id} is {order['status']}, so it can't be refunded.{note}"
        today, window = _policy(c.system)[:2]
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
        threshold = _policy(c.system)[2]
        if _cents(order["total"]) <= round(threshold * 100):
            return self._refund(c, order, order_id, note)
        done = c.done("escalate_to_human", order_id=order_id)
        if done is None:
            summary = f"Customer disputes order {order_id} ({order['total']}): {c.customer[0][:300]}"
            return _tool_call("escalate_to_human", {"order_id": order_id, "summary": summary}, f"call_{len(c.calls)}")
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
        today, window = _policy(c.system)[:2]
        if order["status"] != "delivered" or (today - date.fromisoformat(order["delivered_on"])).days > window:
            return f"I'm sorry, order {order_id} can't be exchanged: only orders delivered in the last {window} days can be."
        opening = c.customer[0].casefold()
        item = next((i for i in order["items"] if i["name"].casefold() in opening), order["items"][0])
        wanted = _wanted_variant(c.customer[1:])
        if wanted is None:
            return f"Which variant of the {item['name']} would you like instead (you have {item['variant']})?"
        search = c.done("search_products", query=item["name"])
        if search is None:
            return _tool_call("search_products", {"query": item["name"]}, f"call_{len(c.calls)}")
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


def _policy(system: str) -> tuple[date, int, float]:
    """(today, return window in days, dispute threshold in dollars) from the system prompt."""
    today, window, threshold = _TODAY.search(system), _WINDOW.search(system), _THRESHOLD.search(system)
    return (
        date.fromisoformat(today.group(1)) if today else date.today(),
        int(window.group(1)) if window else 30,
        float(threshold.group(1).replace(",", "")) if threshold else 250.0,
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
    """Identifies the customer, replays the gold actions, then states the required information.

    It reads the gold data in ``info["task"]`` (the customer's email and order id, the gold
    actions, the required information), so it is a ceiling for the verifier and a check of
    the env, not a real agent."""

    name = "oracle"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        done = sum(1 for m in observation if m["role"] == "tool")
        if done == 0:
            facts = task["facts"]
            return _tool_call("find_customer", {"email": facts["email"], "order_id": facts["order_id"]}, "call_identify")
        gold = task["gold_actions"]
        if done <= len(gold):
            action = gold[done - 1]
            return _tool_call(action["name"], action["arguments"], f"call_gold_{done}")
        outcome = "Your request has been processed. " if gold else ""
        return f"{outcome}Here is what you need to know: {'; '.join(task['required_info'])}."


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (OracleAgent, PolicySupportAgent, UnhelpfulAgent)}
"""Scripted baselines of CustomerSupport-v0, by agent spec name."""

__all__ = ["BASELINES", "OracleAgent", "PolicySupportAgent", "UnhelpfulAgent"]
