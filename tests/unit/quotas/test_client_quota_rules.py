"""Client quotas, pure: Kafka's precedence of entities, what an alteration may contain, the
DescribeClientQuotas filter, and the throttle time on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import InvalidRequestError
from kafkalite_server.quotas import handler_time
from kafkalite_server.quotas.client_quotas import (
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Name,
    QuotaConfigs,
    QuotaEntity,
    QuotaOp,
    altered,
    applicable,
    entity_from_wire,
    filter_from_wire,
    matching,
)
from kafkalite_server.quotas.client_throttle import (
    ClientThrottles,
    counts_handler_time,
    quota_user,
)
from tests.fake_clock import FakeClock

ALICE, APP = Name("alice"), Name("app")
LEVELS = [QuotaEntity(ALICE, APP), QuotaEntity(ALICE, DEFAULT), QuotaEntity(ALICE, None),
          QuotaEntity(DEFAULT, APP), QuotaEntity(DEFAULT, DEFAULT), QuotaEntity(DEFAULT, None),
          QuotaEntity(None, APP), QuotaEntity(None, DEFAULT)]
"""Kafka's order, most specific first."""


def test_each_entity_level_wins_over_every_level_below_it() -> None:
    for index, entity in enumerate(LEVELS):
        configs = {e: {PRODUCER_BYTE_RATE: float(i + 1)} for i, e in enumerate(LEVELS)
                   if i >= index}
        value, counted = applicable(configs, PRODUCER_BYTE_RATE, "alice", "app")
        assert value == index + 1, entity
        # Counted under the connection's own names, for the types the chosen entity has.
        assert counted == QuotaEntity(None if entity.user is None else ALICE,
                                      None if entity.client_id is None else APP)


def test_each_key_is_resolved_on_its_own_and_no_entity_means_no_quota() -> None:
    configs: QuotaConfigs = {QuotaEntity(None, APP): {"consumer_byte_rate": 5.0},
                             QuotaEntity(DEFAULT, None): {PRODUCER_BYTE_RATE: 7.0}}
    assert applicable(configs, PRODUCER_BYTE_RATE, "bob", "app") == (7.0, QuotaEntity(
        Name("bob"), None))
    assert applicable(configs, "consumer_byte_rate", "bob", "app") == (5.0, QuotaEntity(
        None, APP))
    assert applicable(configs, "request_percentage", "bob", "app") is None


def test_alterations_are_checked_as_kafka_checks_them() -> None:
    assert altered({}, [QuotaOp(PRODUCER_BYTE_RATE, 1024.0, False),
                        QuotaOp("request_percentage", 12.5, False)]) == {
        PRODUCER_BYTE_RATE: 1024.0, "request_percentage": 12.5}
    assert altered({PRODUCER_BYTE_RATE: 1.0}, [QuotaOp(PRODUCER_BYTE_RATE, 0, True)]) == {}
    for ops, message in [
        ([QuotaOp("producer_rate", 1.0, False)], "Invalid configuration key producer_rate"),
        ([QuotaOp(PRODUCER_BYTE_RATE, -1.0, False)], "must be positive"),
        ([QuotaOp(PRODUCER_BYTE_RATE, 0.0, False)], "must be positive"),
        ([QuotaOp(PRODUCER_BYTE_RATE, 1.5, False)], "must be a Long value"),
        ([QuotaOp(PRODUCER_BYTE_RATE, 1.0, False)] * 2, "Duplicate quota key"),
    ]:
        with pytest.raises(InvalidRequestError, match=message):
            altered({}, ops)


def test_entities_need_known_types_each_named_once() -> None:
    assert entity_from_wire([("client-id", None), ("user", "alice")]) == QuotaEntity(
        ALICE, DEFAULT)
    for components, message in [([], "empty"), ([("ip", "1.2.3.4")], "entity type: ip"),
                                ([("user", "a"), ("user", "b")], "Duplicate user")]:
        with pytest.raises(InvalidRequestError, match=message):
            entity_from_wire(components)


def test_describe_filters_match_names_defaults_and_strictness() -> None:
    configs: QuotaConfigs = {e: {PRODUCER_BYTE_RATE: 1.0} for e in LEVELS}
    configs[QuotaEntity(Name("carol"), None)] = {}  # no quota left: never listed

    def found(components: list[tuple[str, int, str | None]], strict: bool) -> list[str]:
        return [str(e) for e, _ in matching(configs, filter_from_wire(components), strict)]

    assert found([("user", 0, "alice")], True) == ["user=alice"]
    assert found([("user", 0, "alice")], False) == [
        "user=alice", "user=alice, client-id=<default>", "user=alice, client-id=app"]
    assert found([("user", 1, None), ("client-id", 2, None)], True) == [
        "user=<default>, client-id=app"]
    assert found([("client-id", 1, None)], True) == ["client-id=<default>"]
    assert len(found([], False)) == len(LEVELS)
    with pytest.raises(InvalidRequestError, match="Duplicate user filter"):
        filter_from_wire([("user", 2, None), ("user", 1, None)])
    with pytest.raises(InvalidRequestError, match="Unexpected match type 7"):
        filter_from_wire([("user", 7, None)])


def test_a_rate_over_the_quota_earns_the_time_that_brings_it_back() -> None:
    clock = FakeClock()
    configs: QuotaConfigs = {QuotaEntity(None, DEFAULT): {PRODUCER_BYTE_RATE: 1000.0}}
    throttles = ClientThrottles(lambda: configs, now=clock)
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "a", 1000) == 0  # 1000 B/s: at the quota
    # 3000 B over one window: 2000 B too many, 2 s at 1000 B/s.
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "a", 2000) == 2000
    # Each default client id has its own meter; a client id without a quota none at all.
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "b", 1000) == 0
    clock.advance(2.0)  # 3000 B over 2 s: still 1000 B too many, 1 s at 1000 B/s
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "a", 0) == 1000
    clock.advance(1.0)
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "a", 0) == 0
    assert throttles.rate(PRODUCER_BYTE_RATE, "u", "a") == pytest.approx(1000.0)


def test_the_throttle_is_capped_at_the_measured_span_and_lands_in_the_response() -> None:
    clock = FakeClock()
    configs: QuotaConfigs = {QuotaEntity(Name("alice"), None): {PRODUCER_BYTE_RATE: 1.0}}
    throttles = ClientThrottles(lambda: configs, now=clock)
    response = {"throttle_time_ms": 0, "responses": []}
    assert throttles.throttle(ApiKey.PRODUCE, {}, response, 10**6, "User:alice", None) == 11000
    assert response["throttle_time_ms"] == 11000
    # An acks=0 Produce has no response, and earns its throttle (a muted connection) too.
    assert throttles.throttle(ApiKey.PRODUCE, {}, None, 10**6, "User:alice", None) == 11000
    # A follower's fetch is replication, not a client's consumption.
    assert throttles.throttle(ApiKey.FETCH, {"replica_id": 1}, {}, 0, "User:alice", "x") == 0
    assert quota_user("User:ANONYMOUS") == "ANONYMOUS"
    # quota.window.size.seconds=2, quota.window.num=3: a 6 s span, so at most 6 s.
    shorter = ClientThrottles(lambda: configs, 2.0, 3, now=clock)
    assert shorter.record(PRODUCER_BYTE_RATE, "alice", "x", 10**6) == 6000


def test_a_handlers_time_counts_its_steps_not_its_waits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(handler_time, "perf_counter", clock)

    async def handler() -> str:
        clock.advance(2)
        await asyncio.sleep(0)   # meanwhile the loop serves others: not this request's time
        clock.advance(3)
        return "answer"

    async def others() -> None:
        clock.advance(100)

    async def run() -> tuple[str, float]:
        timed = handler_time.TimedCall(handler())
        other = asyncio.get_running_loop().create_task(others())
        result = await timed
        await other
        return result, timed.seconds

    assert asyncio.run(run()) == ("answer", 5)


def test_a_timed_handler_is_cancelled_and_fails_as_it_would_untimed() -> None:
    seen: list[str] = []

    async def waiting() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad request")

    async def run() -> None:
        async def timed_waiting() -> None:
            await handler_time.TimedCall(waiting())

        task = asyncio.get_running_loop().create_task(timed_waiting())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(ValueError, match="bad request"):
            await handler_time.TimedCall(failing())

    asyncio.run(run())
    assert seen == ["cancelled"]


def test_request_percentage_counts_handler_time_on_every_clients_request() -> None:
    clock = FakeClock()
    configs: QuotaConfigs = {QuotaEntity(None, DEFAULT): {REQUEST_PERCENTAGE: 10.0}}
    throttles = ClientThrottles(lambda: configs, now=clock)
    assert throttles.times_requests
    response = {"throttle_time_ms": 0}
    # 0.5 s of handler time in one second: 50% of a thread, 40 points over 10%: 4 s.
    assert throttles.throttle(ApiKey.METADATA, {}, response, 100, "User:u", "c", 0.5) == 4000
    assert response["throttle_time_ms"] == 4000
    assert not counts_handler_time(ApiKey.API_VERSIONS, {})
    assert not counts_handler_time(ApiKey.FETCH, {"replica_id": 2})
    assert counts_handler_time(ApiKey.FETCH, {"replica_id": -1})
    assert not ClientThrottles(lambda: {}).times_requests
