"""The controller channel's reconnect backoff: Kafka's ``reconnect.backoff.ms`` doubling
to ``reconnect.backoff.max.ms``, each wait spread by +/-20 %."""

from __future__ import annotations

import random

from kafkalite_server.cluster.backoff import ExponentialBackoff


def test_waits_double_up_to_the_maximum_with_jitter():
    backoff = ExponentialBackoff(50, 1000, rng=random.Random(7))
    waits = [backoff.next_s() for _ in range(8)]
    nominal = [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert all(0.8 * n <= w <= 1.2 * n for w, n in zip(waits, nominal, strict=True)), waits
    assert backoff.failures == 8
    backoff.reset()
    assert 0.04 <= backoff.next_s() <= 0.06
