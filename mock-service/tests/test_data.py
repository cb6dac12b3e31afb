"""Generated data: deterministic from the seed, in any order of requests; sizes as configured."""
import json

import pytest

from mock_service.data import DataSet


def dataset(seed=42, customers=100, payload_size=2048, orders=5, max_created=10):
    return DataSet(seed, customers, payload_size, orders, max_created)


def test_same_seed_same_bytes_in_any_order():
    a, b = dataset(), dataset()
    forward = [a.customer(i) + a.orders(i) + a.account(i) for i in range(1, 101)]
    backward = [b.customer(i) + b.orders(i) + b.account(i) for i in range(100, 0, -1)]
    assert forward == backward[::-1]
    assert dataset(seed=43).customer(1) != a.customer(1)


@pytest.mark.parametrize("size", [1024, 2048, 4096, 10240])
def test_customer_payload_is_exactly_the_configured_size(size):
    d = dataset(payload_size=size)
    assert {len(d.customer(i)) for i in range(1, 101)} == {size}
    assert all(json.loads(d.customer(i))["id"] == i for i in (1, 50, 100))


def test_payload_smaller_than_the_record_is_not_padded():
    c = json.loads(dataset(payload_size=0).customer(1))
    assert c["notes"] == ""


def test_orders_per_customer():
    assert json.loads(dataset(orders=0).orders(1)) == []
    assert len(json.loads(dataset(orders=12).orders(1))) == 12


def test_created_and_deleted_are_bounded():
    d = dataset(customers=5, max_created=3)
    ids = [d.create({"firstName": "A", "lastName": "B", "email": "e"})[0] for _ in range(5)]
    assert ids == [6, 7, 8, 9, 10]
    assert [d.exists(i) for i in ids] == [False, False, True, True, True]
    assert d.delete(1) and not d.delete(1) and not d.exists(1)
    assert d.delete(10) and d.customer(10) is None
