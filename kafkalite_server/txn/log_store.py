"""The transaction coordinator's :class:`~kafkalite_server.txn.coordinator.TxnStore` on
``__transaction_state``: one record batch per state change, appended through the
coordinator runtime. The append returns at once; every answer and every marker waits for
the ISR (the runtime's ``committed``, Kafka's acks=all append) before it goes out."""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.records import encode_batch
from kafkalite_server.coordinator.runtime import CoordinatorRuntime
from kafkalite_server.txn.log_records import TxnLogValue, encode_key, encode_value


class TxnLogStore:
    def __init__(self, runtime: CoordinatorRuntime, now_ms: Callable[[], int]) -> None:
        self._runtime = runtime
        self._now_ms = now_ms

    def write(self, partition: int, transactional_id: str, value: TxnLogValue | None) -> None:
        self._runtime.append(partition, encode_batch([(
            encode_key(transactional_id), None if value is None else encode_value(value),
            self._now_ms(), ())]))
