"""The verifier's guard: a marker written while a verification question is out makes a
"yes" stale (Kafka's VerificationGuard), so it cannot open a new transaction. The
question itself is answered by a stand-in that waits for the test's word; everything
else is the real :class:`TransactionVerifier`."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NetworkError,
    NotEnoughReplicasError,
    ProducerFencedError,
)
from kafkalite.records import RecordBatchBuilder, encode_batch
from kafkalite_server.txn.verification import (
    TopicPartition,
    TransactionVerifier,
    _transactional_producer,
    for_produce,
    for_txn_offset_commit,
)

TP = ("t", 0)
OTHER = ("t", 1)


class HeldVerifier(TransactionVerifier):
    """Answers "in the transaction" for every partition once ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__(broker=None, peers=None)  # type: ignore[arg-type]
        self.answer = asyncio.Event()

    async def _ask(self, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        await self.answer.wait()
        return dict.fromkeys(partitions, 0)


def test_a_marker_during_the_question_makes_the_answer_stale() -> None:
    async def scenario() -> dict[TopicPartition, int]:
        verifier = HeldVerifier()
        question = asyncio.ensure_future(verifier.verify("tx", 7, 0, [TP, OTHER]))
        await asyncio.sleep(0)
        verifier.marker_written(TP, 7)
        verifier.marker_written(OTHER, 8)  # another producer's marker changes nothing
        verifier.answer.set()
        answers = await question
        assert verifier._guards == {}
        return answers

    assert asyncio.run(scenario()) == {TP: InvalidTxnStateError.errno, OTHER: 0}


def test_errors_are_mapped_as_kafka_maps_them() -> None:
    assert for_produce(0) is None
    fenced, unreachable = for_produce(ProducerFencedError.errno), for_produce(NetworkError.errno)
    assert fenced is not None and fenced[0] == InvalidProducerEpochError.errno
    assert unreachable is not None and unreachable[0] == NotEnoughReplicasError.errno
    assert for_txn_offset_commit(NetworkError.errno, 90) == 14  # COORDINATOR_LOAD_IN_PROGRESS
    assert for_txn_offset_commit(ProducerFencedError.errno, 47) == 47


def test_only_transactional_data_batches_are_asked_about() -> None:
    """The produce check reads two bytes of the usual single plain batch, and every
    header otherwise (Produce v0-2 may carry several batches)."""
    plain = encode_batch([(None, b"x" * 100, 0, ())] * 3)
    builder = RecordBatchBuilder(producer_id=7, producer_epoch=2, is_transactional=True,
                                 base_sequence=0, batch_size=1 << 20)
    builder.append(0, None, b"v")
    transactional = builder.build()
    assert _transactional_producer(memoryview(bytearray(plain))) is None
    assert _transactional_producer(memoryview(bytearray(transactional))) == (7, 2)
    assert _transactional_producer(memoryview(bytearray(plain + transactional))) == (7, 2)
    assert _transactional_producer(memoryview(bytearray(b"\x00" * 30))) is None  # unreadable
    assert _transactional_producer(None) is None
