"""Deterministic customers, orders and accounts, and the in-memory changes made by POST/DELETE.

Every record is generated from (seed, kind, id) alone, so the same seed gives the same bytes in any
order of requests and on any machine. Bodies are serialized once and cached: a request then costs a
dict lookup, not a json.dumps (CPU per request is what the lab measures).

Memory bound: the caches hold at most CACHE_ENTRIES bodies of each kind; created customers at most
max_created (the oldest is forgotten beyond, and answers 404 again); deleted ids at most the number of
generated customers.
"""
from __future__ import annotations

import collections
import datetime
import functools
import json
import random

CACHE_ENTRIES = 4096

_FIRST = ("Ada", "Alan", "Barbara", "Claude", "Donald", "Edsger", "Frances", "Grace", "John",
          "Katherine", "Ken", "Linus", "Margaret", "Niklaus", "Radia", "Shafi", "Tim", "Whitfield")
_LAST = ("Lovelace", "Turing", "Liskov", "Shannon", "Knuth", "Dijkstra", "Allen", "Hopper",
         "McCarthy", "Johnson", "Thompson", "Torvalds", "Hamilton", "Wirth", "Perlman", "Goldwasser",
         "Berners-Lee", "Diffie")
_STREETS = ("Main Street", "High Street", "Station Road", "Church Lane", "Mill Road", "Park Avenue",
            "Bahnhofstrasse", "Rue de la Paix", "Calle Mayor", "Via Roma")
_CITIES = (("London", "GB"), ("Manchester", "GB"), ("Zurich", "CH"), ("Paris", "FR"),
           ("Madrid", "ES"), ("Rome", "IT"), ("Berlin", "DE"), ("Amsterdam", "NL"), ("Dublin", "IE"))
_TIERS = ("gold", "silver", "bronze")
_ORDER_STATUS = ("NEW", "PAID", "SHIPPED", "DELIVERED", "CANCELLED")
_CURRENCIES = ("EUR", "GBP", "CHF", "USD")
_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
          "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua")
_EPOCH = datetime.datetime(2015, 1, 1, tzinfo=datetime.UTC)


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode()


def _iso(dt: datetime.datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


class DataSet:
    def __init__(self, seed: int, customers: int, payload_size: int, orders_per_customer: int,
                 max_created: int) -> None:
        self.seed = seed
        self.customers = customers
        self.payload_size = payload_size
        self.orders_per_customer = orders_per_customer
        self.max_created = max_created
        self._created: collections.OrderedDict[int, bytes] = collections.OrderedDict()
        self._deleted: set[int] = set()
        self._next_id = customers + 1
        # per-instance caches (a module-level lru_cache would mix data sets of different seeds)
        self._customer = functools.lru_cache(CACHE_ENTRIES)(self._generate_customer)
        self._orders = functools.lru_cache(CACHE_ENTRIES)(self._generate_orders)
        self._account = functools.lru_cache(CACHE_ENTRIES)(self._generate_account)

    # --- queries: the body, or None when the customer does not exist -----------------------------

    def exists(self, cid: int) -> bool:
        if 1 <= cid <= self.customers:
            return cid not in self._deleted
        return cid in self._created

    def customer(self, cid: int) -> bytes | None:
        if 1 <= cid <= self.customers:
            return None if cid in self._deleted else self._customer(cid)
        return self._created.get(cid)

    def orders(self, cid: int) -> bytes | None:
        return self._orders(cid) if self.exists(cid) else None

    def account(self, cid: int) -> bytes | None:
        return self._account(cid) if self.exists(cid) else None

    # --- changes ---------------------------------------------------------------------------------

    def create(self, fields: dict) -> tuple[int, bytes]:
        """Store a new customer from validated POST fields; returns (id, body)."""
        cid = self._next_id
        self._next_id += 1
        rng = self._rng("customer", cid)
        record = {
            "id": cid,
            "firstName": fields["firstName"],
            "lastName": fields["lastName"],
            "email": fields["email"],
            "phone": fields.get("phone") or self._phone(rng),
            "tier": fields.get("tier") or "bronze",
            "createdAt": _iso(datetime.datetime.now(datetime.UTC)),
            "address": fields.get("address") or self._address(rng),
        }
        body = self._padded(record, rng)
        self._created[cid] = body
        while len(self._created) > self.max_created:
            self._created.popitem(last=False)
        return cid, body

    def delete(self, cid: int) -> bool:
        if 1 <= cid <= self.customers:
            if cid in self._deleted:
                return False
            self._deleted.add(cid)
            return True
        return self._created.pop(cid, None) is not None

    # --- generation ------------------------------------------------------------------------------

    def _rng(self, kind: str, cid: int) -> random.Random:
        # str seeds are hashed with SHA-512: stable across runs and Python versions
        return random.Random(f"{self.seed}/{kind}/{cid}")

    @staticmethod
    def _phone(rng: random.Random) -> str:
        return f"+44 20 {rng.randrange(1000, 10000)} {rng.randrange(1000, 10000)}"

    @staticmethod
    def _address(rng: random.Random) -> dict:
        city, country = rng.choice(_CITIES)
        return {"street": f"{rng.randrange(1, 300)} {rng.choice(_STREETS)}", "city": city,
                "zip": f"{rng.randrange(1000, 100000):05d}", "country": country}

    def _padded(self, record: dict, rng: random.Random) -> bytes:
        """Serialize with "notes" filled so the body is exactly payload_size bytes (when it fits)."""
        record["notes"] = ""
        missing = self.payload_size - len(_dumps(record))
        if missing > 0:
            words = []
            length = -1
            while length < missing:
                word = rng.choice(_WORDS)
                words.append(word)
                length += len(word) + 1
            record["notes"] = " ".join(words)[:missing]
        return _dumps(record)

    def _generate_customer(self, cid: int) -> bytes:
        rng = self._rng("customer", cid)
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        record = {
            "id": cid,
            "firstName": first,
            "lastName": last,
            "email": f"{first.lower()}.{last.lower()}{cid}@example.com",
            "phone": self._phone(rng),
            "tier": rng.choice(_TIERS),
            "createdAt": _iso(_EPOCH + datetime.timedelta(seconds=rng.randrange(0, 10 * 365 * 86400))),
            "address": self._address(rng),
        }
        return self._padded(record, rng)

    def _generate_orders(self, cid: int) -> bytes:
        rng = self._rng("orders", cid)
        currency = rng.choice(_CURRENCIES)
        orders = []
        for n in range(1, self.orders_per_customer + 1):
            items = [{"sku": f"SKU-{rng.randrange(10000, 100000)}", "quantity": rng.randrange(1, 6),
                      "unitPrice": round(rng.uniform(1, 500), 2)} for _ in range(rng.randrange(1, 5))]
            orders.append({
                "orderId": f"{cid}-{n}",
                "customerId": cid,
                "placedAt": _iso(_EPOCH + datetime.timedelta(seconds=rng.randrange(0, 10 * 365 * 86400))),
                "status": rng.choice(_ORDER_STATUS),
                "currency": currency,
                "amount": round(sum(i["quantity"] * i["unitPrice"] for i in items), 2),
                "items": items,
            })
        return _dumps(orders)

    def _generate_account(self, cid: int) -> bytes:
        rng = self._rng("account", cid)
        return _dumps({
            "customerId": cid,
            "accountId": f"ACC-{rng.randrange(10**9, 10**10)}",
            "currency": rng.choice(_CURRENCIES),
            "balance": round(rng.uniform(-1000, 50000), 2),
            "creditLimit": rng.choice((0, 1000, 5000, 10000)),
            "status": rng.choice(("ACTIVE", "ACTIVE", "ACTIVE", "FROZEN", "CLOSED")),
        })
