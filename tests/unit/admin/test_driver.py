"""The admin driver's routing, retry and deadline decisions, on a fake clock and cluster."""

from __future__ import annotations

from typing import Any

import pytest
from fake_clock import FakeClock

from kafkalite.admin.driver import TRANSITIONS, AdminApiDriver, Event, KeyState, Step
from kafkalite.admin.groups import DescribeGroups
from kafkalite.admin.offsets import DeleteRecords, ListOffsets
from kafkalite.admin.topics import CreateTopics, NewTopic
from kafkalite.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolDecodeError,
    TopicAuthorizationFailedError,
    UnknownBrokerIdError,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    NotControllerError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkalite.structs import TopicPartition
from tests.unit.admin.fakes import FakeCluster

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)


def create_topics(names: list[str], clock: FakeClock, timeout: float = 30.0,
                  ) -> AdminApiDriver[str, dict[str, Any]]:
    handler = CreateTopics([NewTopic(n, 1, 1) for n in names], 30000, False)
    return AdminApiDriver(handler, names, deadline=clock() + timeout, clock=clock,
                          retry_backoff_ms=100, retry_backoff_max_ms=1000)


def topic_results(*entries: tuple[str, int]) -> dict[str, Any]:
    return {"topics": [{"name": n, "error_code": c, "error_message": None} for n, c in entries]}


def describe_groups(groups: list[str], clock: FakeClock) -> AdminApiDriver[str, Any]:
    return AdminApiDriver(DescribeGroups(), groups, deadline=clock() + 30, clock=clock)


def group_answer(group: str, code: int = 0) -> dict[str, Any]:
    return {"groups": [{"error_code": code, "group_id": group, "group_state": "Stable",
                        "protocol_type": "consumer", "protocol_data": "range", "members": [],
                        "authorized_operations": -2147483648}]}


def coordinator_answer(node: int, code: int = 0) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "node_id": node, "host": "h",
            "port": 9092}


def test_controller_calls_wait_for_metadata_fetched_during_the_call() -> None:
    clock = FakeClock()
    driver = create_topics(["a"], clock)
    cluster = FakeCluster(controller=2)
    step = driver.poll(cluster)
    assert step.refresh_metadata and not step.requests
    step = driver.poll(cluster.refreshed())
    [sent] = step.requests
    assert (sent.node, sent.keys, sent.request.api_key) == (2, ("a",), ApiKey.CREATE_TOPICS)


def test_not_controller_on_one_topic_routes_it_again_while_the_other_completes() -> None:
    clock = FakeClock()
    driver = create_topics(["a", "b"], clock)
    cluster = FakeCluster(controller=0).refreshed()
    [sent] = driver.poll(cluster).requests
    assert sent.keys == ("a", "b")
    driver.on_response(sent, topic_results(("a", 0), ("b", NotControllerError.errno)))
    assert driver.state("a") is KeyState.DONE
    assert driver.state("b") is KeyState.UNMAPPED
    assert driver.poll(cluster).refresh_metadata  # where did the controller go?
    cluster.controller_id = 1
    cluster.refreshed()
    step = driver.poll(cluster)
    assert not step.requests and step.wake_at == pytest.approx(clock() + 0.1)
    clock.advance(0.1)
    [again] = driver.poll(cluster).requests
    assert (again.node, again.keys) == (1, ("b",))
    driver.on_response(again, topic_results(("b", 0)))
    assert driver.poll(cluster).done
    assert list(driver.result()) == ["a", "b"]


def test_an_error_that_is_the_answer_fails_only_its_key_and_raises_naming_it() -> None:
    clock = FakeClock()
    driver = create_topics(["a", "b"], clock)
    cluster = FakeCluster().refreshed()
    [sent] = driver.poll(cluster).requests
    driver.on_response(sent, topic_results(("a", TopicAlreadyExistsError.errno), ("b", 0)))
    assert driver.poll(cluster).done
    assert driver.state("b") is KeyState.DONE
    with pytest.raises(TopicAlreadyExistsError, match="creating topic 'a'"):
        driver.result()


def test_group_calls_look_up_the_coordinator_first_then_batch_per_coordinator() -> None:
    clock = FakeClock()
    driver = describe_groups(["g1", "g2", "g3"], clock)
    cluster = FakeCluster()
    lookups = driver.poll(cluster).requests
    assert [(r.node, r.keys, r.lookup, r.request.api_key) for r in lookups] == [
        (0, ("g1",), True, ApiKey.FIND_COORDINATOR), (0, ("g2",), True, ApiKey.FIND_COORDINATOR),
        (0, ("g3",), True, ApiKey.FIND_COORDINATOR)]
    assert lookups[0].request.body["key"] == "g1"
    for request, node in zip(lookups, (1, 2, 1), strict=True):
        driver.on_response(request, coordinator_answer(node))
    sent = driver.poll(cluster).requests
    assert sorted((r.node, r.keys) for r in sent) == [(1, ("g1", "g3")), (2, ("g2",))]
    assert all(not r.lookup and r.request.api_key == ApiKey.DESCRIBE_GROUPS for r in sent)


def test_a_loading_coordinator_is_asked_again_after_a_backoff_a_moved_one_looked_up_again(
        ) -> None:
    clock = FakeClock()
    driver = describe_groups(["loading", "moved"], clock)
    cluster = FakeCluster()
    for request in driver.poll(cluster).requests:
        driver.on_response(request, coordinator_answer(1))
    [sent] = driver.poll(cluster).requests
    driver.on_response(sent, {"groups": [
        group_answer("loading", CoordinatorLoadInProgressError.errno)["groups"][0],
        group_answer("moved", NotCoordinatorError.errno)["groups"][0]]})
    assert driver.state("loading") is KeyState.MAPPED
    assert driver.state("moved") is KeyState.UNMAPPED
    step = driver.poll(cluster)
    assert step.refresh_metadata and not step.requests
    clock.advance(0.1)
    requests = driver.poll(cluster.refreshed()).requests
    assert sorted((r.lookup, r.keys, r.node) for r in requests) == [
        (False, ("loading",), 1), (True, ("moved",), 0)]


def test_a_coordinator_lookup_that_fails_retriably_is_retried_one_that_is_refused_fails(
        ) -> None:
    clock = FakeClock()
    driver = describe_groups(["g", "secret"], clock)
    cluster = FakeCluster()
    first, second = driver.poll(cluster).requests
    driver.on_response(first, coordinator_answer(-1, code=15))  # COORDINATOR_NOT_AVAILABLE
    driver.on_response(second, coordinator_answer(-1, code=30))  # GROUP_AUTHORIZATION_FAILED
    assert driver.state("g") is KeyState.UNMAPPED
    assert driver.state("secret") is KeyState.FAILED
    clock.advance(0.1)
    [again] = driver.poll(cluster).requests
    assert again.lookup and again.keys == ("g",)


def test_a_coordinator_missing_from_metadata_waits_for_a_refresh() -> None:
    clock = FakeClock()
    driver = describe_groups(["g"], clock)
    cluster = FakeCluster(brokers=[0])
    [lookup] = driver.poll(cluster).requests
    driver.on_response(lookup, coordinator_answer(7))
    step = driver.poll(cluster)
    assert step.refresh_metadata and not step.requests
    cluster.brokers.append(7)
    [sent] = driver.poll(cluster.refreshed()).requests
    assert sent.node == 7


def test_backoff_doubles_up_to_its_maximum() -> None:
    clock = FakeClock()
    driver = describe_groups(["g"], clock)
    cluster = FakeCluster()
    waits = []
    for _ in range(6):
        step = driver.poll(cluster)
        if step.wake_at is not None:
            waits.append(round(step.wake_at - clock(), 3))
            clock.now = step.wake_at
            step = driver.poll(cluster)
        [lookup] = step.requests
        driver.on_response(lookup, coordinator_answer(-1, code=14))  # still loading
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.0]


def test_at_the_deadline_every_unfinished_key_fails_naming_its_last_error() -> None:
    clock = FakeClock()
    driver = create_topics(["a"], clock, timeout=2.0)
    cluster = FakeCluster().refreshed()
    while True:
        step = driver.poll(cluster)
        if step.done:
            break
        if step.refresh_metadata:
            cluster.refreshed()
        for request in step.requests:
            driver.on_response(request, topic_results(("a", NotControllerError.errno)))
        if step.wake_at is not None:
            clock.now = step.wake_at
    with pytest.raises(KafkaTimeoutError, match=r"CreateTopics for 'a' did not finish within "
                       r"2000 ms .*creating topic 'a'") as caught:
        driver.result()
    assert isinstance(caught.value.__cause__, NotControllerError)


def undecodable() -> KafkaConnectionError:
    error = KafkaConnectionError("node 0: undecodable response")
    error.__cause__ = ProtocolDecodeError("short")
    return error


@pytest.mark.parametrize(("failure", "state"), [
    (KafkaConnectionError("node 0: connection reset"), KeyState.UNMAPPED),
    (TopicAuthorizationFailedError("no"), KeyState.FAILED),
    (undecodable(), KeyState.FAILED),
])
def test_a_lost_connection_routes_again_a_refusal_or_a_garbled_answer_fails(
        failure: Exception, state: KeyState) -> None:
    clock = FakeClock()
    driver = create_topics(["a"], clock)
    cluster = FakeCluster().refreshed()
    [sent] = driver.poll(cluster).requests
    driver.on_failure(sent, failure)
    assert driver.state("a") is state
    if state is KeyState.UNMAPPED:
        assert driver.poll(cluster).refresh_metadata  # a lost broker: learn what changed
    else:
        with pytest.raises(type(failure)):
            driver.result()


def test_partition_leaders_come_from_fresh_metadata_and_unknown_partitions_fail() -> None:
    clock = FakeClock()
    missing = TopicPartition("gone", 0)
    beyond = TopicPartition("orders", 5)
    handler = ListOffsets(dict.fromkeys([T0, T1, missing, beyond], -1))
    driver = AdminApiDriver(handler, [T0, T1, missing, beyond], deadline=clock() + 30,
                            clock=clock)
    cluster = FakeCluster(leaders={T0: 1, T1: None})
    assert driver.poll(cluster).refresh_metadata
    step = driver.poll(cluster.refreshed())
    assert [(r.node, r.keys) for r in step.requests] == [(1, (T0,))]
    assert driver.state(T1) is KeyState.UNMAPPED  # electing: wait for a leader
    assert driver.state(missing) is KeyState.FAILED
    assert driver.state(beyond) is KeyState.FAILED
    with pytest.raises(UnknownTopicOrPartitionError, match="topic 'gone'"):
        driver.result()


def test_a_broker_the_caller_named_keeps_its_answer() -> None:
    clock = FakeClock()
    driver = AdminApiDriver(DeleteRecords({T0: 3}, 1000, leader=2), [T0],
                            deadline=clock() + 30, clock=clock)
    [sent] = driver.poll(FakeCluster()).requests
    assert sent.node == 2
    driver.on_response(sent, {"topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "low_watermark": -1,
         "error_code": NotLeaderOrFollowerError.errno}]}]})
    assert driver.state(T0) is KeyState.FAILED
    with pytest.raises(NotLeaderOrFollowerError, match="deleting records of orders-0"):
        driver.result()


def test_a_broker_the_caller_named_that_metadata_lacks_fails_after_one_refresh() -> None:
    clock = FakeClock()
    driver = AdminApiDriver(DeleteRecords({T0: 3}, 1000, leader=9), [T0],
                            deadline=clock() + 30, clock=clock)
    cluster = FakeCluster()
    step = driver.poll(cluster)
    assert step.refresh_metadata and not step.requests
    assert driver.poll(cluster.refreshed()).done
    with pytest.raises(UnknownBrokerIdError, match="broker 9 is not in the cluster metadata"):
        driver.result()


def test_a_key_the_answer_leaves_out_is_asked_again() -> None:
    clock = FakeClock()
    driver = create_topics(["a", "b"], clock)
    cluster = FakeCluster().refreshed()
    [sent] = driver.poll(cluster).requests
    driver.on_response(sent, topic_results(("a", 0)))
    assert driver.state("b") is KeyState.MAPPED
    clock.advance(0.1)
    [again] = driver.poll(cluster).requests
    assert again.keys == ("b",)


def test_a_step_with_nothing_to_send_says_when_to_look_again() -> None:
    clock = FakeClock()
    driver = describe_groups(["g"], clock)
    cluster = FakeCluster()
    [lookup] = driver.poll(cluster).requests
    driver.on_response(lookup, coordinator_answer(-1, code=14))
    assert driver.poll(cluster) == Step([], wake_at=clock() + 0.1)


def test_no_call_without_keys_sends_anything() -> None:
    clock = FakeClock()
    driver = create_topics([], clock)
    assert driver.poll(FakeCluster()).done
    assert driver.result() == {}


def test_every_state_but_the_terminal_ones_can_fail_at_the_deadline() -> None:
    for state in KeyState:
        if state in (KeyState.DONE, KeyState.FAILED):
            assert not any(s is state for s, _ in TRANSITIONS)
        else:
            assert TRANSITIONS[(state, Event.FAILED)] is KeyState.FAILED


def test_an_impossible_move_is_a_bug_that_raises() -> None:
    clock = FakeClock()
    driver = create_topics(["a"], clock)
    with pytest.raises(AssertionError, match="cannot go from unmapped on completed"):
        driver._move("a", Event.COMPLETED)
