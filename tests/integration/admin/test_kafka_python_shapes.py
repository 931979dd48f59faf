"""kafka-python 3.0's admin shapes against a real broker: the programs of the issue run
unchanged (``[g['group_id'] for g in admin.list_groups()]``, dict-form ``create_topics``,
``list_group_offsets('billing-v3')``), and the results answer both ways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.admin import ConfigResource, GroupDescription, GroupListing, NewTopic
from kafkalite.errors import TopicAlreadyExistsError
from kafkalite_server import EmbeddedCluster
from tests.polling import until


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers) as client:
        yield client


@pytest.fixture
def billing(cluster: EmbeddedCluster, admin: AdminClient) -> Iterator[Consumer]:
    """Group ``billing-v3``, one member, having read and committed 4 records of ``invoices``."""
    admin.create_topics([NewTopic("invoices", 2, 1)], wait_for_metadata=True)
    with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        for n in range(4):
            producer.send("invoices", b"invoice %d" % n, partition=n % 2).get(timeout=10)
    consumer = Consumer("invoices", bootstrap_servers=cluster.bootstrap_servers,
                        group_id="billing-v3", client_id="billing-worker",
                        auto_offset_reset="earliest", enable_auto_commit=False)
    read: list[object] = []

    def read_all() -> bool:
        read.extend(r for rs in consumer.poll(timeout_ms=200).values() for r in rs)
        return len(read) >= 4

    until(read_all, "the group to read the 4 invoices")
    consumer.commit()
    yield consumer
    consumer.close()


def test_list_groups_subscripts_like_kafka_python_3(admin: AdminClient,
                                                     billing: Consumer) -> None:
    assert [g["group_id"] for g in admin.list_groups()] == ["billing-v3"]
    [listing] = admin.list_groups()
    assert isinstance(listing, GroupListing) and listing.group_id == "billing-v3"
    assert (listing["protocol_type"], listing["group_state"], listing["group_type"]) == (
        "consumer", "Stable", "classic")


def test_types_filter_means_the_group_type_as_in_kafka_python_3(admin: AdminClient,
                                                                  billing: Consumer) -> None:
    assert [g.group_id for g in admin.list_groups(types_filter=["classic"])] == ["billing-v3"]
    assert admin.list_groups(types_filter=["consumer"]) == []  # no KIP-848 groups here


def test_describe_groups_subscripts_like_kafka_python_3(admin: AdminClient,
                                                        billing: Consumer) -> None:
    group = admin.describe_groups(["billing-v3"])["billing-v3"]
    assert isinstance(group, GroupDescription)
    assert (group["group_id"], group["group_state"], group["protocol_type"],
            group["error"]) == ("billing-v3", "Stable", "consumer", None)
    [member] = group["members"]
    assert (member["client_id"], member["member_id"]) == ("billing-worker", member.member_id)
    assert sorted(member.assignment) == [TopicPartition("invoices", 0),
                                         TopicPartition("invoices", 1)]
    assert member["member_metadata"].topics == ["invoices"]
    assert sorted(member["member_assignment"].partitions) == [("invoices", [0, 1])]


def test_list_group_offsets_takes_one_group_id_as_a_string(admin: AdminClient,
                                                           billing: Consumer) -> None:
    expected = {TopicPartition("invoices", 0): 2, TopicPartition("invoices", 1): 2}
    one = admin.list_group_offsets("billing-v3")
    assert list(one) == ["billing-v3"]
    assert {tp: meta.offset for tp, meta in one["billing-v3"].items()} == expected
    several = admin.list_group_offsets(["billing-v3", "never-ran"])
    assert several["never-ran"] == {} and several["billing-v3"] == one["billing-v3"]


def test_create_topics_takes_the_dict_form_and_names_and_returns_3_0s_shape(
        admin: AdminClient) -> None:
    created = admin.create_topics({"ledger": {"num_partitions": 3, "replication_factor": 1,
                                              "configs": {"retention.ms": "3600000"}}},
                                  wait_for_metadata=True)
    assert created == {"topics": [{"name": "ledger", "error_code": 0, "error_message": None}]}
    described = admin.describe_topics(["ledger"])["ledger"]
    assert len(described.partitions) == 3
    ledger = ConfigResource("topic", "ledger")
    assert admin.describe_configs([ledger])[ledger]["retention.ms"] == "3600000"
    named = admin.create_topics(["scratch-a", "scratch-b"])
    assert [t["name"] for t in named["topics"]] == ["scratch-a", "scratch-b"]
    with pytest.raises(TopicAlreadyExistsError, match="creating topic 'scratch-a'"):
        admin.create_topics(["scratch-a"])
    kept = admin.create_topics(["scratch-a"], raise_errors=False)
    assert kept["topics"][0]["error_code"] == TopicAlreadyExistsError.errno
    assert admin.delete_topics(["scratch-b"]) == {"topics": [{"name": "scratch-b",
                                                              "error_code": 0}]}


def test_create_partitions_takes_a_total_count(admin: AdminClient) -> None:
    admin.create_topics(["growing"], wait_for_metadata=True)
    admin.create_partitions({"growing": 3})
    assert len(admin.describe_topics(["growing"])["growing"].partitions) == 3
    admin.create_partitions({"growing": {"count": 4, "assignments": [[0]]}})
    assert len(admin.describe_topics(["growing"])["growing"].partitions) == 4

