"""The controller's channel to one broker stops for good when it is closed, even when the
cancellation lands as an operation completes (Python 3.11's ``asyncio.wait_for`` swallows
a cancellation then, and a channel that lost it kept re-sending to a broker that left)."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite_server.cluster import broker_channel
from kafkalite_server.cluster.broker_channel import NetworkChannel
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
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


def test_retries_back_off_and_log_the_first_failure_then_a_summary(monkeypatch, caplog):
    async def roundtrip(*args: Any) -> dict[str, Any]:
        return {"error_code": 0}
    monkeypatch.setattr(broker_channel, "roundtrip", roundtrip)
    waits: list[float] = []

    async def scenario() -> None:
        channel = NetworkChannel(BrokerEndpoint(2, "127.0.0.1", 1), 1, security=None,  # type: ignore[arg-type]
                                 loop=asyncio.get_running_loop(), timeout_s=30)
        failures = iter(range(12))

        async def connect() -> Any:
            if next(failures, None) is not None:
                raise ConnectionRefusedError("refused")
            return (None, _Writer(), None)

        async def sleep(seconds: float) -> None:
            waits.append(seconds)
        channel._connect = connect  # type: ignore[method-assign]
        channel._sleep = sleep  # type: ignore[method-assign]
        channel.send(UpdateMetadata(1, 1, (), ()))
        await asyncio.wait_for(channel.drained(), 5)
        channel.close()

    with caplog.at_level("INFO", logger="kafkalite_server.cluster.broker_channel"):
        asyncio.run(scenario())
    assert len(waits) == 12
    assert waits[0] < 0.1 and max(waits) <= 1.2 and waits == sorted(waits[:5]) + waits[5:]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "not delivered: refused" in messages[0]
    assert "delivered after 12 failed attempts" in messages[1]
