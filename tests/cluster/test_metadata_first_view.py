"""A broker that has registered but not yet received the controller's first UpdateMetadata
holds a Metadata request until that view arrives, instead of answering with no brokers and
no controller (an answer that left librdkafka's admin client waiting for a controller past
its own timeout: CreateTopics on a freshly started cluster went unanswered)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from test_cluster_processes import Cluster, wait_until

from kafkalite.protocol import ApiKey


def test_metadata_waits_for_the_controllers_first_view(tmp_path: Path, zookeeper: Any,
                                                        chroot: str,
                                                        broker_process_type: type,
                                                        wire: Any) -> None:
    cluster = Cluster(tmp_path, zookeeper.connect + chroot, broker_process_type)
    try:
        controller = cluster.start(1)
        wait_until(lambda: cluster.controller()[0] == 1, "broker 1 to be the controller")
        # Paused, the controller cannot send the newcomer its first UpdateMetadata.
        os.kill(controller.process.pid, signal.SIGSTOP)
        try:
            newcomer = cluster.start(2)
            answers: list[dict[str, Any]] = []
            client = wire(newcomer.bootstrap_servers)
            asking = threading.Thread(target=lambda: answers.append(client.call(
                ApiKey.METADATA, 8, {"topics": None, "allow_auto_topic_creation": False})))
            asking.start()
            asking.join(1.0)
            assert not answers, f"answered before the controller's view: {answers}"
        finally:
            os.kill(controller.process.pid, signal.SIGCONT)
        asking.join(30)
        assert answers, "no Metadata answer after the controller resumed"
        answer = answers[0]
        assert answer["controller_id"] == 1
        assert sorted(b["node_id"] for b in answer["brokers"]) == [1, 2]
    finally:
        cluster.close()
