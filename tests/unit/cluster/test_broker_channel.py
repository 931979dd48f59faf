"""The controller's channel to one broker stops for good when it is closed, even when the
cancellation lands as an operation completes (Python 3.11's ``asyncio.wait_for`` swallows
a cancellation then, and a channel that lost it kept re-sending to a broker that left)."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite_server.cluster import broker_channel
from kafkalite_server.cluster.broker_channel import NetworkChannel
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.messages import UpdateMetadata


class _Writer:
    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_a_channel_closed_as_its_connection_opens_sends_nothing(monkeypatch):
    sent: list[int] = []

    async def roundtrip(*args: Any) -> dict[str, Any]:
        sent.append(args[3])
        return {"error_code": 0}
    monkeypatch.setattr(broker_channel, "roundtrip", roundtrip)

    async def scenario() -> bool:
        opened: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        channel = NetworkChannel(BrokerEndpoint(2, "127.0.0.1", 1), 1, security=None,  # type: ignore[arg-type]
                                 loop=asyncio.get_running_loop(), timeout_s=30)

        async def connect() -> Any:
            return await opened
        channel._connect = connect  # type: ignore[method-assign]
        channel.send(UpdateMetadata(1, 1, (), ()))
        for _ in range(5):  # the channel is now waiting for its connection
            await asyncio.sleep(0)
        opened.set_result((None, _Writer(), None))
        channel.close()  # in the same loop turn as the connection completing
        assert channel._task is not None
        done, _pending = await asyncio.wait([channel._task], timeout=2)
        return bool(done)

    assert asyncio.run(scenario()), "the closed channel's task is still running"
    assert sent == []
