"""Share-group test helpers: a group's configs, its description and its share-partition
start offsets, as a client or an operator sees them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kafkalite.admin import AdminClient, ConfigResource
from kafkalite.protocol import ApiKey
from tests.conftest import WireClient
from tests.polling import until


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs on the GROUP resource (``share_auto_offset_reset=...``)."""
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        resource = ConfigResource("group", group, configs={
            name.replace("_", "."): value for name, value in configs.items()})
        outcome = admin.incremental_alter_configs([resource], raise_on_unknown=False)
    assert outcome == {"group": {group: "OK"}}, outcome


def at_coordinator(bootstrap: str, group: str) -> WireClient:
    """A connection to the group's coordinator."""
    found = WireClient(bootstrap).find_coordinator(group)
    assert found["error_code"] == 0, found
    return WireClient(f"{found['host']}:{found['port']}")


def describe(bootstrap: str, group: str) -> dict[str, Any]:
    client = at_coordinator(bootstrap, group)
    try:
        return client.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, {
            "group_ids": [group], "include_authorized_operations": False})["groups"][0]
    finally:
        client.close()


def wait_assigned(bootstrap: str, group: str, members: int, timeout: float = 60.0) -> None:
    """Until ``members`` members are in the group, each with an assignment."""
    def assigned() -> bool:
        described = describe(bootstrap, group)
        return described["error_code"] == 0 and len(described["members"]) == members and all(
            m["assignment"]["topic_partitions"] for m in described["members"])
    until(assigned, f"{members} assigned members in {group}", timeout,
          tolerate=(OSError, AssertionError))


def start_offset(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    """The share-partition start offset (SPSO) the share coordinator keeps."""
    client = at_coordinator(bootstrap, group)
    try:
        answer = client.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, {"groups": [
            {"group_id": group, "topics": [{"topic_name": topic, "partitions": [partition]}]}]})
    finally:
        client.close()
    described = answer["groups"][0]
    assert described["error_code"] == 0, described
    found = described["topics"][0]["partitions"][0]
    assert found["error_code"] == 0, found
    return int(found["start_offset"])


class ClientAssignments:
    """How many partitions each librdkafka share consumer holds, as its own statistics
    say (``cgrp.assignment_size``): the coordinator's view (ShareGroupDescribe) runs ahead
    of a member's until its next heartbeat."""

    def __init__(self, consumers: int) -> None:
        self.sizes = [-1] * consumers

    def config(self, index: int) -> dict[str, Any]:
        """The settings that make consumer ``index`` report its assignment."""
        def keep(stats: str) -> None:
            self.sizes[index] = json.loads(stats).get("cgrp", {}).get("assignment_size", -1)
        callback: Callable[[str], None] = keep
        return {"statistics.interval.ms": 200, "stats_cb": callback}
