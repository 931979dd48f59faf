"""The throughput page's second source: the brokers' own Prometheus endpoints
(``kafkalite.metrics.listener``, or Kafka's JMX exporter with the usual rules), when the
console is given their URLs with ``--metrics-url``.

Each sample reads every endpoint and adds up the all-topics counters of messages and bytes
in and out, and the messages in per topic; the page charts their growth per second. An
endpoint that does not answer is reported by URL, and the others are still counted.
"""

from __future__ import annotations

import time
import urllib.request
from collections import defaultdict
from typing import Any

SCRAPE_TIMEOUT_S = 5.0
COUNTERS = {
    "messages_in": "kafka_server_brokertopicmetrics_messagesin_total",
    "bytes_in": "kafka_server_brokertopicmetrics_bytesin_total",
    "bytes_out": "kafka_server_brokertopicmetrics_bytesout_total",
}
"""What a sample sums over the brokers, by the name the page knows it by."""


class BrokerMetrics:
    def __init__(self, urls: list[str]) -> None:
        from prometheus_client.parser import text_string_to_metric_families

        self.urls = urls
        self._parse = text_string_to_metric_families

    def sample(self) -> dict[str, Any]:
        """``{"time_ms", "messages_in", "bytes_in", "bytes_out", "topics": {topic: messages
        in}, "failed": {url: reason}}``, the counters summed over the brokers that answered."""
        totals: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        topics: dict[str, float] = defaultdict(float)
        failed = {}
        names = {name: key for key, name in COUNTERS.items()}
        for url in self.urls:
            try:
                with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as answer:
                    text = answer.read().decode()
                families = list(self._parse(text))
            except (OSError, ValueError) as exc:
                failed[url] = str(exc)
                continue
            for family in families:
                for sample in family.samples:
                    key = names.get(sample.name)
                    if key is None:
                        continue
                    topic = sample.labels.get("topic")
                    if topic is None:
                        totals[key] += sample.value
                    elif key == "messages_in":
                        topics[topic] += sample.value
        return {"time_ms": int(time.time() * 1000), **totals,
                "topics": dict(sorted(topics.items())), "failed": failed}
