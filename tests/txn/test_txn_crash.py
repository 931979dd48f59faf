"""A broker killed (SIGKILL) mid-transaction: after the restart every transaction is
either complete or aborted, never half-visible to read_committed."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer
from txn_helpers import TXN_SETTINGS, create_topic, read_all

SETTINGS = {k.replace("_", "."): v for k, v in TXN_SETTINGS.items()}


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 2000, "log_level": 0})


def test_kill_mid_transaction_then_restart(broker_process: Any) -> None:
    broker = broker_process
    broker.kill()
    broker.extra_args = [arg for key, value in SETTINGS.items()
                         for arg in ("--set", f"{key}={value}")]
    broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "crash", 2)
        committed = _producer(bootstrap, "tx-committed")
        committed.init_transactions(15)
        committed.begin_transaction()
        for i in range(4):
            committed.produce("crash", value=f"ok-{i}".encode(), partition=i % 2)
        committed.commit_transaction(15)
        open_txn = _producer(bootstrap, "tx-open")
        open_txn.init_transactions(15)
        open_txn.begin_transaction()
        for i in range(4):
            open_txn.produce("crash", value=f"half-{i}".encode(), partition=i % 2)
        open_txn.flush(15)
        broker.kill()
        del open_txn, committed
        broker.start()
        time.sleep(3)  # the open transaction passes its 2 s timeout: the coordinator aborts
        after = _producer(bootstrap, "tx-after")
        after.init_transactions(15)
        after.begin_transaction()
        after.produce("crash", value=b"after", partition=0)
        after.commit_transaction(15)
        visible = read_all(bootstrap, "crash", "read_committed", 2)
        assert sorted(visible) == sorted([f"ok-{i}".encode() for i in range(4)] + [b"after"])
        assert len(read_all(bootstrap, "crash", "read_uncommitted", 2)) == 9
    finally:
        broker.kill()
