"""What one broker serves, in kafka-python's ``BrokerVersionData`` shape: the ApiVersions
ranges, the version both sides would speak per API, and a guess at the Kafka release.

kafkalite never needs the release (every request picks its version from the ranges); the
guess is for programs that print or compare ``broker_version`` as kafka-python lets them.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite.errors import IncompatibleBrokerVersionError
from kafkalite.protocol.api import SUPPORTED_VERSIONS, ApiKey

RELEASE_MARKERS: tuple[tuple[int, tuple[int, ...]], ...] = (
    (68, (3, 7)),  # ConsumerGroupHeartbeat (KIP-848)
    (int(ApiKey.DESCRIBE_TRANSACTIONS), (3, 0)),  # KIP-664
    (int(ApiKey.DESCRIBE_CLUSTER), (2, 8)),  # KIP-700
    (47, (2, 4)),  # OffsetDelete (KIP-496)
    (44, (2, 3)),  # IncrementalAlterConfigs (KIP-339)
    (43, (2, 2)),  # ElectLeaders (KIP-183)
    (42, (1, 1)),  # DeleteGroups (KIP-229)
    (37, (1, 0)),  # CreatePartitions (KIP-195)
    (int(ApiKey.INIT_PRODUCER_ID), (0, 11)),  # KIP-98
    (int(ApiKey.API_VERSIONS), (0, 10)),  # KIP-35
)
"""(api key, the Kafka release that introduced it), newest first: the release guess is the
first whose API the broker serves."""


class BrokerVersionData:
    """A broker's ApiVersions answer; see the module docstring."""

    __slots__ = ("api_versions", "broker_version")

    def __init__(self, api_versions: Mapping[int, tuple[int, int]]) -> None:
        self.api_versions: dict[int, tuple[int, int]] = dict(api_versions)
        self.broker_version: tuple[int, ...] = next(
            (release for key, release in RELEASE_MARKERS if key in self.api_versions), (0, 9))

    @property
    def broker_version_str(self) -> str:
        return ".".join(map(str, self.broker_version))

    def api_version(self, operation: int, min_version: int = 0,
                    max_version: float = float("inf")) -> int:
        """The highest version of api key ``operation`` that kafkalite and the broker both
        speak, within [min_version, max_version]; IncompatibleBrokerVersionError if none."""
        ours = SUPPORTED_VERSIONS.get(ApiKey(int(operation)))
        theirs = self.api_versions.get(int(operation))
        if ours is None or theirs is None:
            raise IncompatibleBrokerVersionError(
                f"api key {int(operation)} is not served by both the broker and kafkalite")
        low = max(min_version, ours[0], theirs[0])
        high = min(max_version, ours[1], theirs[1])
        if low > high:
            raise IncompatibleBrokerVersionError(
                f"api key {int(operation)}: no version in kafkalite's {ours}, the broker's "
                f"{theirs} and [{min_version}, {max_version}]")
        return int(high)

    def __repr__(self) -> str:
        return f"BrokerVersionData(broker_version={self.broker_version!r})"
