"""Procedural CustomerSupport-v0 scenarios: a small shop (10-20 customers with 1-3 orders each,
a catalogue of product variants, past tickets), one customer with a request of a given kind,
and the gold actions and information that resolve it.

Train and test draw names, products and shop names from disjoint pools.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

from .db import money
from .scenario import Customer, GoldAction, Order, OrderItem, Product, SupportScenario, Ticket, User

KINDS: tuple[str, ...] = (
    "refund",
    "refund_expired",
    "exchange",
    "address_change",
    "cancellation",
    "other_customer",
    "dispute",
    "info",
    "wrong_order_id",
)
"""Scenario kinds, drawn uniformly (see docs/customersupport.md)."""


@dataclass(frozen=True)
class _Family:
    name: str
    variants: tuple[str, ...]
    price: tuple[int, int]  # dollars, inclusive range


@dataclass(frozen=True)
class _Pool:
    first_names: tuple[str, ...]
    last_names: tuple[str, ...]
    families: tuple[_Family, ...]
    expensive: tuple[_Family, ...]
    shops: tuple[str, ...]


_SIZES = ("S", "M", "L", "XL")
_SHOE_SIZES = ("EU 39", "EU 40", "EU 41", "EU 42", "EU 43", "EU 44")

POOLS: dict[str, _Pool] = {
    "train": _Pool(
        first_names=tuple(
            (
                "Amelia Benjamin Chloe Daniel Elena Felix Grace Hugo Isla Jonas Kira Liam Maya Noah Olivia Pablo "
                "Quinn Rosa Samuel Tara Umar Vera Wesley Ximena Yusuf Zoe Adrian Bianca Caleb Daria Emil Freya "
                "Gabriel Hana Ivan Julia"
            ).split()
        ),
        last_names=tuple(
            (
                "Anderson Brooks Castillo Dubois Eriksen Fischer Garcia Hoffman Ibrahim Jensen Kowalski Lambert "
                "Moreau Nakamura Okafor Petrov Quinlan Rossi Schmidt Tanaka Ulrich Varga Whitaker Yamamoto Zielinski "
                "Abbott Bergstrom Costa Delgado Evans"
            ).split()
        ),
        families=(
            _Family("Trailblazer Running Shoes", tuple(f"{c} / {s}" for c in ("Black", "Coral") for s in _SHOE_SIZES[1:5]), (79, 139)),
            _Family("Summit Rain Jacket", tuple(f"{c} / {s}" for c in ("Navy", "Olive") for s in _SIZES), (89, 179)),
            _Family("Aero Wireless Earbuds", ("Black", "White", "Sage"), (49, 129)),
            _Family("Brewmaster Coffee Grinder", ("Matte Black", "Steel"), (59, 119)),
            _Family("Cloudrest Pillow", ("Soft", "Medium", "Firm"), (29, 69)),
            _Family("Nomad Backpack 28L", ("Charcoal", "Rust", "Forest"), (69, 119)),
            _Family("Lumen Desk Lamp", ("Brass", "White", "Black"), (39, 89)),
            _Family("Pulse Fitness Tracker", tuple(f"{c} / {s}" for c in ("Graphite", "Rose") for s in ("S", "L")), (59, 149)),
            _Family("Harbor Linen Shirt", tuple(f"{c} / {s}" for c in ("White", "Sand") for s in _SIZES), (39, 79)),
            _Family("Glacier Water Bottle", ("Ice Blue", "Black", "Mint"), (19, 39)),
            _Family("Orbit Bluetooth Speaker", ("Black", "Red", "Teal"), (49, 149)),
            _Family("Cascade Yoga Mat", ("4 mm / Plum", "6 mm / Plum", "4 mm / Grey", "6 mm / Grey"), (29, 79)),
            _Family("Ridge Hiking Boots", tuple(f"Brown / {s}" for s in _SHOE_SIZES), (119, 199)),
            _Family("Echo Mechanical Keyboard", ("Red switches", "Brown switches", "Blue switches"), (79, 159)),
        ),
        expensive=(
            _Family("Vista 27-inch Monitor", ("Black", "Silver"), (329, 449)),
            _Family("Atlas Standing Desk", ("Oak / 140 cm", "Oak / 160 cm", "White / 140 cm"), (449, 699)),
            _Family("Zenith Espresso Machine", ("Steel", "Black"), (489, 799)),
            _Family("Nimbus Robot Vacuum", ("White", "Black"), (349, 599)),
        ),
        shops=("Northwind Outfitters", "Bluepeak Supply", "Juniper & Co.", "Kestrel Goods", "Marlow Home"),
    ),
    "test": _Pool(
        first_names=tuple(
            (
                "Aria Bruno Celine Dmitri Esme Farid Giulia Henrik Ines Jasper Keiko Lorenzo Mila Nikolai Oona Pedro "
                "Rania Stefan Thea Ulla Viktor Wanda Yara Zane Anouk Bastian Carmen Diego Eira Florin Greta Hiro Ilse "
                "Joaquin Kaja Leon"
            ).split()
        ),
        last_names=tuple(
            (
                "Achterberg Baptiste Cervantes Dimitriou Engel Fontaine Gallagher Haugen Iversen Jovanovic Kaur "
                "Lindqvist Mendoza Novak Oyelaran Pereira Rahman Sato Takahashi Uddin Vasquez Weber Xu Yilmaz Zhou "
                "Albrecht Bianchi Chowdhury Dalton Esposito"
            ).split()
        ),
        families=(
            _Family("Stride Walking Shoes", tuple(f"{c} / {s}" for c in ("Grey", "Navy") for s in _SHOE_SIZES[:4]), (69, 129)),
            _Family("Tundra Parka", tuple(f"{c} / {s}" for c in ("Black", "Khaki") for s in _SIZES), (149, 229)),
            _Family("Sonic Over-Ear Headphones", ("Black", "Cream", "Blue"), (79, 199)),
            _Family("Kettle Pro Electric Kettle", ("Steel", "Matte White"), (39, 89)),
            _Family("Dreamweave Duvet", ("Single", "Double", "King"), (59, 139)),
            _Family("Voyager Duffel Bag", ("Black", "Tan", "Navy"), (59, 109)),
            _Family("Beacon Floor Lamp", ("Black", "Walnut"), (69, 139)),
            _Family("Tempo Smartwatch", tuple(f"{c} / {s}" for c in ("Midnight", "Silver") for s in ("41 mm", "45 mm")), (129, 229)),
            _Family("Meadow Cotton Hoodie", tuple(f"{c} / {s}" for c in ("Heather", "Moss") for s in _SIZES), (45, 85)),
            _Family("Frost Insulated Tumbler", ("Lilac", "Black", "Sand"), (19, 35)),
            _Family("Wave Soundbar", ("Black", "White"), (99, 229)),
            _Family("Balance Foam Roller", ("Soft", "Firm"), (19, 45)),
            _Family("Canyon Trail Sandals", tuple(f"Olive / {s}" for s in _SHOE_SIZES), (49, 89)),
            _Family("Quill Ergonomic Mouse", ("Graphite", "Pale Grey", "Left-handed"), (39, 99)),
        ),
        expensive=(
            _Family("Horizon 32-inch Monitor", ("Black", "White"), (359, 549)),
            _Family("Summit Folding Treadmill", ("Grey", "Black"), (599, 899)),
            _Family("Barista Pro Espresso Machine", ("Brushed Steel", "Black"), (449, 749)),
            _Family("Aurora Air Purifier", ("Large", "Extra Large"), (329, 499)),
        ),
        shops=("Halcyon Outfitters", "Copperfield Supply", "Larkspur & Co.", "Tidewater Goods", "Fernhill Home"),
    ),
}
"""Name, product and shop pools per split; no entry is shared between splits."""

_STREETS = ("Elm Street", "Harbour Road", "Maple Avenue", "Station Lane", "Church Road", "Mill Street", "Park Crescent", "Kings Way")
_CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Greenville", "Oakridge", "Brookfield", "Westport", "Ashford")
_DOMAINS = ("example.com", "mailbox.test", "inbox.example", "post.test")
_PAYMENT = ("visa ending 4242", "mastercard ending 1881", "paypal", "amex ending 3005", "gift card")
_PERSONAS = (
    "polite and patient",
    "in a hurry; writes short messages",
    "chatty; adds small talk",
    "a bit frustrated but cooperative",
    "careful and asks the agent to repeat important details",
)
_RELATIONS = (("roommate", "she"), ("brother", "he"), ("neighbour", "he"), ("sister", "she"), ("colleague", "she"))
_REFUND_REASONS = (
    "It stopped working after a few days.",
    "It is not what I expected from the description.",
    "It does not fit and I don't need it any more.",
    "The colour looks quite different from the photos.",
)
_DISPUTES = (
    "I was charged for my order but the package never arrived, and I want my money back!",
    "I've been charged twice for my order and I did not authorise the second charge. Please refund me.",
    "My card was charged for an order I never received. This is unacceptable, I want a refund.",
)


def generate_scenario(split: str, seed: int, kind: str | None = None, *, n_customers: tuple[int, int] = (10, 20)) -> SupportScenario:
    """The scenario for (`split`, `seed`): deterministic, and a new one for every seed. `kind`
    forces the request kind (default: drawn uniformly from `KINDS`)."""
    if split not in POOLS:
        raise ValueError(f"unknown split {split!r}; choose one of {sorted(POOLS)}")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown scenario kind {kind!r}; choose from {list(KINDS)}")
    rng = random.Random(f"customersupport/{split}/{seed}")
    chosen = kind or rng.choice(KINDS)
    shop = _Shop(rng, POOLS[split], n_customers)
    scenario_id = f"{split}-{seed}" if kind is None else f"{split}-{seed}-{kind}"
    return shop.scenario(scenario_id, chosen)


class _Shop:
    """The shop's database as it is generated, plus the request of one customer."""

    def __init__(self, rng: random.Random, pool: _Pool, n_customers: tuple[int, int]):
        self.rng = rng
        self.pool = pool
        self.today = date(2025, 1, 1) + timedelta(days=rng.randrange(365))
        self.window = rng.choice((14, 30, 30, 45))
        self.threshold = rng.choice((150, 200, 250, 300))
        self.company = rng.choice(pool.shops)
        self.products: list[Product] = []
        self.families: dict[str, list[Product]] = {}
        for family in [*rng.sample(pool.families, 7), *rng.sample(pool.expensive, 2)]:
            price = rng.randint(*family.price) - rng.choice((0.01, 0.01, 0.5, 0.0))
            variants = rng.sample(family.variants, min(len(family.variants), rng.randint(2, 4)))
            for variant in variants:
                product = Product(
                    product_id=f"P-{101 + len(self.products)}",
                    name=family.name,
                    variant=variant,
                    price=price,
                    stock=rng.choice((0, 3, 5, 8, 12, 20)),
                )
                self.products.append(product)
                self.families.setdefault(family.name, []).append(product)
        self.cheap = [p for p in self.products if p.price < 250]
        self.customers: list[Customer] = []
        self.orders: list[Order] = []
        self.tickets: list[Ticket] = []
        self._order_ids: set[str] = set()
        self._items = 0
        names: dict[tuple[str, str], None] = {}
        wanted = min(rng.randint(*n_customers), len(pool.first_names) * len(pool.last_names))
        while len(names) < wanted:
            names[rng.choice(pool.first_names), rng.choice(pool.last_names)] = None
        for first, last in names:
            customer = Customer(
                customer_id=f"C-{1001 + len(self.customers)}",
                name=f"{first} {last}",
                email=f"{first}.{last}{rng.randint(1, 99)}@{rng.choice(_DOMAINS)}".lower(),
                phone=f"555-01{rng.randint(0, 99):02d}-{rng.randint(0, 9999):04d}",
                address=self._address(),
            )
            self.customers.append(customer)
            for _ in range(rng.randint(1, 3)):
                self._order(customer, rng.choice(("processing", "shipped", "delivered", "delivered", "delivered", "cancelled")))
        for _ in range(rng.randint(1, 8)):
            order = rng.choice(self.orders)
            self.tickets.append(
                Ticket(
                    ticket_id=f"T-{1001 + len(self.tickets)}",
                    customer_id=order.customer_id,
                    order_id=order.order_id,
                    kind=rng.choice(("question", "refund", "exchange")),
                    status="closed",
                    created_on=order.placed_on + timedelta(days=rng.randint(1, 5)),
                )
            )

    # -- building blocks ------------------------------------------------------------------

    def _address(self) -> str:
        rng = self.rng
        return f"{rng.randint(1, 250)} {rng.choice(_STREETS)}, {rng.choice(_CITIES)} {rng.randint(10000, 99999)}"

    def _order_id(self) -> str:
        while (order_id := f"O-{self.rng.randint(10000, 99999)}") in self._order_ids:
            pass
        self._order_ids.add(order_id)
        return order_id

    def _order(
        self,
        customer: Customer,
        status: str,
        *,
        products: list[Product] | None = None,
        delivered_days_ago: int | None = None,
    ) -> Order:
        rng = self.rng
        if status == "processing":
            placed, delivered = self.today - timedelta(days=rng.randint(0, 2)), None
        elif status == "shipped":
            placed, delivered = self.today - timedelta(days=rng.randint(3, 6)), None
        else:
            ago = delivered_days_ago if delivered_days_ago is not None else rng.randint(2, 120)
            delivered = self.today - timedelta(days=ago)
            placed = delivered - timedelta(days=rng.randint(2, 6))
        chosen = products or rng.sample(self.cheap, rng.choice((1, 1, 2, 3)))
        items = []
        for product in chosen:
            self._items += 1
            items.append(
                OrderItem(
                    item_id=f"I-{1000 + self._items}", product_id=product.product_id, quantity=1 if products else rng.choice((1, 1, 1, 2))
                )
            )
        order = Order(
            order_id=self._order_id(),
            customer_id=customer.customer_id,
            status=status,  # type: ignore[arg-type]
            placed_on=placed,
            delivered_on=delivered,
            payment_method=rng.choice(_PAYMENT),
            items=items,
        )
        self.orders.append(order)
        return order

    def _total(self, order: Order) -> str:
        prices = {p.product_id: p.price for p in self.products}
        return money(sum(round(prices[i.product_id] * 100) * i.quantity for i in order.items))

    def _recent(self) -> int:
        return self.rng.randint(1, max(1, self.window - 2))

    # -- requests -------------------------------------------------------------------------

    def scenario(self, scenario_id: str, kind: str) -> SupportScenario:
        rng = self.rng
        customer = rng.choice(self.customers)
        facts = {"email": customer.email, "name": customer.name}
        base = kind if kind != "wrong_order_id" else rng.choice(("refund", "cancellation", "address_change"))
        request = self._request(base, customer, facts)
        user = User(
            opening=request.opening,
            goal=request.goal,
            persona=rng.choice(_PERSONAS),
            facts=facts,
            customer_id=customer.customer_id,
            fallback_variant=request.fallback_variant,
        )
        if kind == "wrong_order_id":
            user.wrong_order_id = self._wrong_id(facts["order_id"], customer)
            user.goal += f" You first give the order id {user.wrong_order_id} by mistake; give the right one when told it does not match."
        return SupportScenario(
            id=scenario_id,
            kind=kind,
            today=self.today,
            company=self.company,
            return_window_days=self.window,
            dispute_threshold=self.threshold,
            customers=self.customers,
            products=self.products,
            orders=self.orders,
            tickets=self.tickets,
            user=user,
            gold_actions=request.gold,
            required_info=request.required,
        )

    def _wrong_id(self, right: str, customer: Customer) -> str:
        others = [o.order_id for o in self.orders if o.customer_id != customer.customer_id]
        if others and self.rng.random() < 0.5:
            return self.rng.choice(others)  # a real order, of someone else
        digits = list(right[2:])
        while (wrong := "O-" + "".join(digits)) in self._order_ids or wrong == right:
            self.rng.shuffle(digits)
            if len(set(digits)) == 1:
                digits = list(str(self.rng.randint(10000, 99999)))
        return wrong

    def _request(self, kind: str, customer: Customer, facts: dict[str, str]) -> _Request:
        rng = self.rng
        if kind in ("refund", "refund_expired"):
            ago = self._recent() if kind == "refund" else self.window + rng.randint(3, 60)
            order = self._order(customer, "delivered", delivered_days_ago=ago)
            facts.update(order_id=order.order_id, reason=rng.choice(_REFUND_REASONS))
            product = self._product(order.items[0].product_id).name
            opening = rng.choice(
                (
                    f"Hi, I'd like to return the {product} I ordered and get a refund.",
                    f"Hello. I want my money back for an order, the {product} isn't working out for me.",
                    "Hi there, can I get a refund for an order I received?",
                )
            )
            if kind == "refund":
                return _Request(
                    opening,
                    f"Get a full refund for order {order.order_id} (the {product}).",
                    [GoldAction(name="refund_order", arguments={"order_id": order.order_id})],
                    ["{refund}"],
                )
            return _Request(
                opening,
                f"Get a refund for order {order.order_id}. It was delivered {ago} days ago; if the agent says it is too late, accept it.",
                [],
                [str(self.window)],
            )
        if kind == "exchange":
            return self._exchange(customer, facts)
        if kind == "address_change":
            order = self._order(customer, "processing")
            new_address = self._address()
            facts.update(order_id=order.order_id, new_address=new_address)
            return _Request(
                rng.choice(
                    (
                        "Hi, I just moved. Can you change the delivery address on my order? It hasn't shipped yet.",
                        "Hello, I need to update the shipping address for an order I placed recently.",
                    )
                ),
                f"Change the shipping address of order {order.order_id} to {new_address}.",
                [GoldAction(name="update_address", arguments={"order_id": order.order_id, "address": new_address})],
                [new_address],
            )
        if kind == "cancellation":
            order = self._order(customer, "processing")
            facts.update(order_id=order.order_id, reason="I ordered it by mistake.")
            return _Request(
                rng.choice(
                    (
                        "Hi, please cancel my order, I don't need it any more.",
                        "Hello, I'd like to cancel an order I placed a couple of days ago.",
                    )
                ),
                f"Cancel order {order.order_id} and get the money back.",
                [GoldAction(name="cancel_order", arguments={"order_id": order.order_id})],
                ["{refund}"],
            )
        if kind == "other_customer":
            order = self._order(customer, "processing")
            other = rng.choice([c for c in self.customers if c.customer_id != customer.customer_id])
            theirs = self._order(other, "delivered", delivered_days_ago=self._recent())
            relation, pronoun = rng.choice(_RELATIONS)
            facts.update(order_id=order.order_id, other_order_id=theirs.order_id)
            return _Request(
                f"Hi! Two things: please cancel my order that hasn't shipped yet, and also refund my {relation}'s order "
                f"{theirs.order_id}. {pronoun.capitalize()} asked me to take care of it.",
                f"Cancel your own order {order.order_id}, and get your {relation}'s order {theirs.order_id} refunded "
                f"(you do not know {pronoun} email). If the agent refuses the second part, accept it.",
                [GoldAction(name="cancel_order", arguments={"order_id": order.order_id})],
                ["{refund}"],
            )
        if kind == "dispute":
            expensive = [p for p in self.products if p.price > self.threshold]
            order = self._order(customer, "delivered", products=[rng.choice(expensive)], delivered_days_ago=self._recent())
            facts.update(order_id=order.order_id)
            return _Request(
                rng.choice(_DISPUTES),
                f"Get your money back for order {order.order_id} ({self._total(order)}), which you dispute. "
                "Accept an escalation to a human agent with a ticket id.",
                [GoldAction(name="escalate_to_human", arguments={"order_id": order.order_id, "summary": "disputed charge"})],
                ["{ticket_id}"],
            )
        if kind == "info":
            status = rng.choice(("shipped", "delivered"))
            order = self._order(customer, status, delivered_days_ago=self._recent() if status == "delivered" else None)
            facts.update(order_id=order.order_id)
            return _Request(
                rng.choice(
                    (
                        "Hi, could you tell me the status of my order and how much I paid for it?",
                        "Hello, where is my order at the moment, and what was the total I was charged?",
                    )
                ),
                f"Learn the status ({status}) and the total ({self._total(order)}) of order {order.order_id}.",
                [],
                [status, self._total(order)],
            )
        raise ValueError(f"unknown scenario kind {kind!r}")

    def _exchange(self, customer: Customer, facts: dict[str, str]) -> _Request:
        rng = self.rng
        families = [f for f in self.families.values() if len(f) >= 3 and f[0].price < 250] or [
            f for f in self.families.values() if len(f) >= 2 and f[0].price < 250
        ]
        if not families:  # every cheap family drew a single variant: add one
            family = self.families[self.cheap[0].name]
            extra = {"product_id": f"P-{101 + len(self.products)}", "variant": family[0].variant + " (Large)"}
            family.append(family[0].model_copy(update=extra))
            self.products.append(family[-1])
            families = [family]
        family = rng.choice(families)
        owned, wanted, *rest = rng.sample(family, len(family))
        owned.stock = rng.choice((0, 3, 5))
        wanted.stock = rng.choice((2, 4, 7))
        fallback = None
        if rest and rng.random() < 0.5:  # the first wish is sold out; the customer names a second
            fallback, wanted = wanted, rest[0]
            wanted.stock = 0
        order = self._order(customer, "delivered", products=[owned], delivered_days_ago=self._recent())
        target = fallback or wanted
        facts.update(order_id=order.order_id, item=f"{owned.name} ({owned.variant})", new_variant=wanted.variant)
        return _Request(
            rng.choice(
                (
                    f"Hi, I'd like to exchange the {owned.name} I bought for a different variant.",
                    f"Hello, the {owned.name} I received isn't the right one for me. Can I swap it for another version?",
                )
            ),
            f"Exchange the {owned.name} ({owned.variant}) in order {order.order_id} for the {wanted.variant} variant"
            + (f", or {fallback.variant} if that one is out of stock." if fallback else "."),
            [
                GoldAction(
                    name="exchange_item",
                    arguments={"order_id": order.order_id, "item_id": order.items[0].item_id, "new_product_id": target.product_id},
                )
            ],
            ["{ticket_id}"],
            fallback_variant=fallback.variant if fallback else None,
        )

    def _product(self, product_id: str) -> Product:
        return next(p for p in self.products if p.product_id == product_id)


@dataclass
class _Request:
    opening: str
    goal: str
    gold: list[GoldAction]
    required: list[str]
    fallback_variant: str | None = None


__all__ = ["KINDS", "POOLS", "generate_scenario"]
