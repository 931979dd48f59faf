"""Client quotas: the produce rate of a client throttled by ``producer_byte_rate`` against
its quota, beside an unthrottled client id on the same broker, against one
``python -m kafkalite_server start`` subprocess.

The load is confluent-kafka (librdkafka, acks=1, 64 KB records): it follows the broker's
``throttle_time_ms`` (``throttle_cb`` counts the throttled responses) and the broker mutes
its connection for that time. One line per quota: the rate achieved (MB/s of record
values, from the first send to the last acknowledgement), its ratio to the quota, and the
number of throttled responses with their total throttle time; then the unthrottled
client's rate.

    python -m benchmarks.quotas [--megabytes 8] [--quota-mb 1 --quota-mb 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.broker import broker_subprocess  # noqa: E402
from benchmarks.confluent_load import produce_all  # noqa: E402
from benchmarks.report import add_write_docs, documented  # noqa: E402
from kafkalite.admin import (  # noqa: E402
    AdminClient,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    NewTopic,
)

MB = 1 << 20
RECORD_SIZE = 64 * 1024


def produce(address: str, topic: str, client_id: str, total: int) -> tuple[float, list[Any]]:
    """(MB/s of record values, throttle events) for ``total`` bytes."""
    events: list[Any] = []
    producer = Producer({"bootstrap.servers": address, "client.id": client_id, "acks": 1,
                         "linger.ms": 5, "throttle_cb": events.append})
    count = max(1, total // RECORD_SIZE)
    elapsed = produce_all(producer, topic, [os.urandom(RECORD_SIZE)], count)
    return count * RECORD_SIZE / MB / elapsed, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=8, help="sent per client (8)")
    parser.add_argument("--quota-mb", type=float, action="append",
                        help="producer_byte_rate in MB/s (repeatable; default 1 and 4)")
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.quotas", args.write_docs):
        run(args)


def run(args: argparse.Namespace) -> None:
    quotas = args.quota_mb or [1.0, 4.0]
    with tempfile.TemporaryDirectory() as work, \
            broker_subprocess(Path(work) / "data") as (address, _pid):
        topic = f"quotas-{uuid.uuid4().hex[:8]}"
        with AdminClient(address) as admin:
            admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                wait_for_metadata=True)
            for quota in quotas:
                client_id = f"throttled-{quota:g}"
                entity = ClientQuotaEntity({"client-id": client_id})
                admin.alter_client_quotas([ClientQuotaAlteration(
                    entity, {"producer_byte_rate": round(quota * MB)})])
                rate, events = produce(address, topic, client_id, args.megabytes * MB)
                throttled_s = sum(event.throttle_time for event in events)
                print(f"quota {quota:6.2f} MB/s  achieved {rate:6.2f} MB/s  "
                      f"({rate / quota:4.2f} x quota)  {len(events):3d} throttled "
                      f"responses, {throttled_s:5.1f} s throttle in all")
        rate, events = produce(address, topic, "unthrottled", args.megabytes * MB)
        print(f"no quota            achieved {rate:6.2f} MB/s  "
              f"{len(events):3d} throttled responses")


if __name__ == "__main__":
    main()
