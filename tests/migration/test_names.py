"""The migration contract's names: every public name of kafka-python's covered modules, every
public method (with every parameter) of its three clients, and the newer names one by one,
used against a running broker where they talk to one."""

from __future__ import annotations

import threading
import time
from typing import Any

import kafka
import pytest

from kafkalite import AsyncConsumerRebalanceListener
from kafkalite.admin import UNSENT_ADMIN_APIS, AdminClient, NewTopic, OffsetSpec, OffsetTimestamp
from kafkalite.consumer import Consumer
from kafkalite.errors import IncompatibleBrokerVersionError, NoError, UnknownTopicOrPartitionError
from kafkalite.producer import Producer
from kafkalite.protocol import ApiKey
from kafkalite.protocol.api import SUPPORTED_VERSIONS
from kafkalite.serializer import DeserializeWrapper, SerializeWrapper
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from tests.migration.api_table import MODULES, _has, _methods, _params, _public_names


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_of_the_kafka_python_module_exists_here(module: str) -> None:
    ours = "kafkalite" + module.removeprefix("kafka")
    missing = [name for name in _public_names(module) if not _has(ours, name)]
    assert not missing, f"{ours} lacks {missing}"


@pytest.mark.parametrize("theirs, ours", [
    (kafka.KafkaProducer, Producer), (kafka.KafkaConsumer, Consumer),
    (kafka.KafkaAdminClient, AdminClient)], ids=["producer", "consumer", "admin"])
def test_every_public_method_exists_and_takes_every_parameter(theirs: type,
                                                              ours: type) -> None:
    mine = _methods(ours)
    problems = []
    for name, func in sorted(_methods(theirs).items()):
        if name not in mine:
            problems.append(f"{name}: missing")
            continue
        if ours is AdminClient and name in UNSENT_ADMIN_APIS:
            continue  # exists, and raises UnsupportedVersionError naming the API
        wanted, _ = _params(func)
        have, flexible = _params(mine[name])
        absent = [p for p in wanted if p not in have]
        if absent and not flexible:
            problems.append(f"{name}: does not take {absent}")
    assert not problems


def test_max_usable_produce_magic_follows_the_release() -> None:
    for release in [(0, 9), (0, 10, 0), (0, 10, 2), (0, 11), (3, 9)]:
        assert Producer.max_usable_produce_magic(release) == \
            kafka.KafkaProducer.max_usable_produce_magic(release)


def test_serializer_wrappers_call_the_function_or_pass_through() -> None:
    assert SerializeWrapper(str.encode).serialize("t", None, "é") == "é".encode()
    assert SerializeWrapper(None).serialize("t", None, b"x") == b"x"
    assert DeserializeWrapper(bytes.decode).deserialize("t", [], b"ok") == "ok"
    assert DeserializeWrapper(None).deserialize("t", [], b"x") == b"x"


def test_kafka_errors_maps_every_code_kafka_python_knows() -> None:
    import kafka.errors

    import kafkalite.errors
    ours = kafkalite.errors.kafka_errors
    assert ours[0] is NoError and ours[3] is UnknownTopicOrPartitionError
    assert {code for code in kafka.errors.kafka_errors if isinstance(code, int)} <= set(ours)


@pytest.fixture
def broker(cluster: EmbeddedCluster) -> str:
    return cluster.bootstrap_servers


def test_get_broker_version_data_describes_what_the_broker_serves(broker: str) -> None:
    with AdminClient(broker) as admin:
        data = admin.get_broker_version_data(0)
    assert data.api_versions[int(ApiKey.FETCH)][1] >= 11
    assert data.broker_version >= (3, 0)  # it serves DescribeTransactions (KIP-664)
    assert data.broker_version_str == ".".join(map(str, data.broker_version))
    fetch = data.api_version(ApiKey.FETCH)
    assert fetch == min(SUPPORTED_VERSIONS[ApiKey.FETCH][1],
                        data.api_versions[int(ApiKey.FETCH)][1])
    assert data.api_version(ApiKey.FETCH, max_version=4) == 4
    with pytest.raises(IncompatibleBrokerVersionError):
        data.api_version(ApiKey.FETCH, min_version=fetch + 1)


def test_reset_group_offsets_takes_specs_timestamps_and_plain_offsets(broker: str) -> None:
    tps = [TopicPartition("resets", p) for p in range(4)]
    with AdminClient(broker) as admin, Producer(bootstrap_servers=broker) as producer:
        admin.create_topics([NewTopic("resets", 4, 1)], wait_for_metadata=True)
        for tp in tps:
            for i in range(4):  # timestamps 1000, 2000, 3000, 4000
                producer.send("resets", b"%d" % i, partition=tp.partition,
                              timestamp_ms=1000 * (i + 1))
        producer.flush()
        reset = admin.reset_group_offsets("resetters", {
            tps[0]: OffsetSpec.EARLIEST, tps[1]: OffsetTimestamp(2500),
            tps[2]: 2, tps[3]: 99})
        assert {tp.partition: r["offset"] for tp, r in reset.items()} == \
            {0: 0, 1: 2, 2: 2, 3: 4}  # a plain int is an offset, clamped to the end
        assert all(r["error"] is NoError for r in reset.values())
        past_the_end = admin.reset_group_offsets("resetters", {tps[0]: OffsetTimestamp(10**12)})
        assert past_the_end[tps[0]]["offset"] == 4
        with pytest.raises(TypeError, match="resets-0"):
            admin.reset_group_offsets("resetters", {tps[0]: "earliest"})  # type: ignore[dict-item]
    assert repr(OffsetTimestamp(5)) == "OffsetTimestamp(5)"


class RecordingAsyncListener(AsyncConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition], str]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked), threading.current_thread().name))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned), threading.current_thread().name))


def test_an_async_rebalance_listener_is_awaited_inside_poll(broker: str) -> None:
    with AdminClient(broker) as admin:
        admin.create_topics([NewTopic("rebalanced", 2, 1)], wait_for_metadata=True)
    listener = RecordingAsyncListener()
    consumer = Consumer(bootstrap_servers=broker, group_id="async-listeners")
    consumer.subscribe(["rebalanced"], listener=listener)
    deadline = time.monotonic() + 30
    while not listener.calls and time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    consumer.close()
    assigned = {TopicPartition("rebalanced", 0), TopicPartition("rebalanced", 1)}
    here = threading.current_thread().name
    assert listener.calls[0] == ("assigned", assigned, here)
    assert listener.calls[-1] == ("revoked", assigned, here)


def test_client_rack_is_sent_as_fetch_rack_id(broker: str) -> None:
    consumer: Any = Consumer(bootstrap_servers=broker, client_rack="rack-b")
    try:
        request = consumer._fetcher._request([(TopicPartition("t", 0), 0)])
    finally:
        consumer.close()
    from kafkalite.protocol.api import APIS
    schema = APIS[ApiKey.FETCH].request
    assert schema.decode(schema.encode(request, 11), 0, 11)[0]["rack_id"] == "rack-b"


class RecordingLostListener(RecordingAsyncListener):
    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", set(lost), threading.current_thread().name))


def test_partitions_are_lost_not_revoked_after_max_poll_interval(broker: str) -> None:
    with AdminClient(broker) as admin:
        admin.create_topics([NewTopic("evicted", 1, 1)], wait_for_metadata=True)
    listener = RecordingLostListener()
    consumer = Consumer(bootstrap_servers=broker, group_id="slow-pollers",
                        max_poll_interval_ms=1000, session_timeout_ms=6000,
                        heartbeat_interval_ms=200)
    consumer.subscribe(["evicted"], listener=listener)
    deadline = time.monotonic() + 30
    while not listener.calls and time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    time.sleep(2.5)  # past max_poll_interval_ms: the member leaves the group
    while len(listener.calls) < 3 and time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    consumer.close()
    tp = {TopicPartition("evicted", 0)}
    assert [(kind, parts) for kind, parts, _ in listener.calls[:3]] == \
        [("assigned", tp), ("lost", tp), ("assigned", tp)]
