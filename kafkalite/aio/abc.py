"""aiokafka's abstract classes: ``ConsumerRebalanceListener`` and ``AbstractTokenProvider``.

Either listener method may be a plain function or a coroutine; the consumer awaits a
coroutine before it goes on (a revoke before the join, an assignment before the first
fetch), so a listener can commit or seek with the consumer's own coroutines. A token
provider's ``token()`` is a coroutine (SASL OAUTHBEARER), awaited at each login.
"""

from __future__ import annotations

import abc
from typing import Any

from kafkalite.structs import TopicPartition

__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]


class ConsumerRebalanceListener(abc.ABC):
    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Before a rebalance: the partitions this member gives up."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """After a rebalance: the partitions this member now reads."""


class AbstractTokenProvider(abc.ABC):
    @abc.abstractmethod
    async def token(self) -> str:
        """The bearer token to log in with (reuse it until it nears expiry)."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (none by default)."""
        return {}
