"""Client quotas in each coordination backend (in memory, the standalone broker's local
store, a real ZooKeeper): written in Kafka's nodes next to what they do not own (a user's
SCRAM credentials), announced in ``/config/changes``, and read by another session that
follows the notifications."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.quotas.client_quota_store import ClientQuotaStore
from kafkalite_server.quotas.client_quotas import (
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    Name,
    QuotaEntity,
    QuotaOp,
)

ODD_USER = Name("CN=app, O=acme/west")
"""A certificate principal's name: URL-encoded in its node's name."""


def test_quotas_are_kept_in_kafkas_nodes_and_followed_by_another_session(
        connect: Callable[..., Coordination]) -> None:
    writer_session, reader_session = connect(), connect()
    writer_session.ensure_path("/config/users")
    writer_session.create("/config/users/alice", json.dumps(
        {"version": 1, "config": {"SCRAM-SHA-256": "salt=c2FsdA==,iterations=4096"}}).encode())
    alice_default = QuotaEntity(Name("alice"), DEFAULT)
    changes = {QuotaEntity(Name("alice")): {PRODUCER_BYTE_RATE: 1024.0},
               alice_default: {CONSUMER_BYTE_RATE: 2048.0},
               QuotaEntity(client_id=DEFAULT): {"request_percentage": 12.5},
               QuotaEntity(ODD_USER): {PRODUCER_BYTE_RATE: 5.0}}

    async def scenario() -> ClientQuotaStore:
        loop = asyncio.get_running_loop()
        workers = []
        stores = []
        for name, session in (("writer", writer_session), ("reader", reader_session)):
            worker = StoreWorker(name)
            worker.bind(loop, threaded=session.calls_block)
            workers.append(worker)
            stores.append(ClientQuotaStore(lambda s=session: s, worker))
        writer, reader = stores
        try:
            await exchange(writer, reader)
        finally:
            for worker in workers:
                worker.close()
        return reader

    async def exchange(writer: ClientQuotaStore, reader: ClientQuotaStore) -> None:
        loop = asyncio.get_running_loop()
        await reader.load()
        following = loop.create_task(reader.follow_changes())
        try:
            await writer.alter({entity: [QuotaOp(key, value, False)
                                         for key, value in quotas.items()]
                                for entity, quotas in changes.items()})
            for _ in range(200):
                if reader.quotas == changes:
                    break
                await asyncio.sleep(0.05)
            assert reader.quotas == changes
            # Every key removed: no quotas left.
            await writer.alter({alice_default: [QuotaOp(CONSUMER_BYTE_RATE, 0, True)]})
            for _ in range(200):
                if alice_default not in reader.quotas:
                    break
                await asyncio.sleep(0.05)
            assert alice_default not in reader.quotas
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
        # The reader, no longer following, changes alice after the writer did: its change
        # applies to the node as stored, not to what it last read.
        alice = QuotaEntity(Name("alice"))
        await writer.alter({alice: [QuotaOp(PRODUCER_BYTE_RATE, 4096, False)]})
        await reader.alter({alice: [QuotaOp("request_percentage", 30.0, False)]})
        assert reader.quotas[alice] == {PRODUCER_BYTE_RATE: 4096.0, "request_percentage": 30.0}

    asyncio.run(scenario())

    def config(path: str) -> dict[str, str]:
        return dict(json.loads(writer_session.get(path)[0])["config"])

    assert config("/config/users/alice") == {
        "SCRAM-SHA-256": "salt=c2FsdA==,iterations=4096", PRODUCER_BYTE_RATE: "4096",
        "request_percentage": "30.0"}
    assert config("/config/users/alice/clients/<default>") == {}
    assert config("/config/clients/<default>") == {"request_percentage": "12.5"}
    assert config("/config/users/CN%3Dapp%2C%20O%3Dacme%2Fwest") == {PRODUCER_BYTE_RATE: "5"}
    notices = {json.loads(writer_session.get(f"/config/changes/{name}")[0])["entity_path"]
               for name in writer_session.children("/config/changes")}
    assert notices == {"users/alice", "users/alice/clients/<default>", "clients/<default>",
                       "users/CN%3Dapp%2C%20O%3Dacme%2Fwest"}
