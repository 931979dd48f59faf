"""OffsetFetch v6-9 (KIP-447, KIP-709): ``require_stable`` and several groups at once.

- A transactional offset commit waiting for its transaction's end makes that partition
  answer UNSTABLE_OFFSET_COMMIT (retriable) to a fetch with ``require_stable``; without it
  the offset committed before is answered, and once the transaction commits, the new one.
- v8 asks for several groups in one request; each group is answered on its own (one that
  committed nothing answers no partitions).
- v9 names the asking member; for a classic group it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txn_helpers import TXN_SETTINGS, create_topic

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import UnstableOffsetCommitError
from kafkalite_server.embedded import EmbeddedCluster

TOPIC = "src"
GROUP = "stable-readers"


def _fetch_v7(client: Any, require_stable: bool) -> dict[str, Any]:
    body = {"group_id": GROUP, "require_stable": require_stable,
            "topics": [{"name": TOPIC, "partition_indexes": [0]}]}
    answer = client.call(ApiKey.OFFSET_FETCH, 7, body)
    assert answer["error_code"] == 0, answer
    return dict(answer["topics"][0]["partitions"][0])


def test_an_unfinished_transactional_commit_is_unstable(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any]) -> None:
    bootstrap = cluster_factory(**TXN_SETTINGS).bootstrap_servers
    create_topic(bootstrap, TOPIC)
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    consumer.commit({TopicPartition(TOPIC, 0): 3})
    producer = Producer(bootstrap_servers=bootstrap, transactional_id="stable")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 7},
                                         consumer.group_metadata())
    client = wire(bootstrap)
    unstable = _fetch_v7(client, require_stable=True)
    assert unstable["error_code"] == UnstableOffsetCommitError.errno
    assert unstable["committed_offset"] == -1
    before = _fetch_v7(client, require_stable=False)
    assert (before["error_code"], before["committed_offset"]) == (0, 3)

    producer.commit_transaction()
    after = _fetch_v7(client, require_stable=True)
    assert (after["error_code"], after["committed_offset"]) == (0, 7)
    producer.close()
    consumer.close()


def test_several_groups_in_one_request(cluster_factory: Callable[..., EmbeddedCluster],
                                       wire: Callable[[str], Any]) -> None:
    bootstrap = cluster_factory().bootstrap_servers
    create_topic(bootstrap, TOPIC)
    for group, offset in (("first", 5), ("second", 9)):
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                            enable_auto_commit=False)
        consumer.commit({TopicPartition(TOPIC, 0): offset})
        consumer.close()
    client = wire(bootstrap)
    for version in (8, 9):
        body = {"require_stable": False, "groups": [
            {"group_id": "first", "topics": None},
            {"group_id": "second", "member_id": None, "member_epoch": -1,
             "topics": [{"name": TOPIC, "partition_indexes": [0]}]},
            {"group_id": "never-committed", "topics": None}]}
        answer = client.call(ApiKey.OFFSET_FETCH, version, body)
        found = {group["group_id"]: (group["error_code"], [
            (topic["name"], part["partition_index"], part["committed_offset"])
            for topic in group["topics"] for part in topic["partitions"]])
            for group in answer["groups"]}
        assert found == {"first": (0, [(TOPIC, 0, 5)]), "second": (0, [(TOPIC, 0, 9)]),
                         "never-committed": (0, [])}, version
