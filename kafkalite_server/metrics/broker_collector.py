"""One broker's metrics as Prometheus families, named as Kafka's JMX-exporter rules (the
ones Strimzi's dashboards use) name them: ``kafka.server<type=ReplicaManager,
name=UnderReplicatedPartitions>`` is ``kafka_server_replicamanager_underreplicatedpartitions``,
a ``...PerSec`` meter's count is a ``..._total`` counter, a timer's percentiles are
``quantile``-labelled samples.

prometheus_client calls :meth:`BrokerCollector.collect` on its HTTP thread; the broker's
state belongs to the event loop, so the families are built there (a loop callback) and
handed back. Building them reads counters and walks the partitions hosted here: no I/O.
Only the consumer lag needs the leaders' high watermarks: the HTTP thread first waits (up
to SCRAPE_TIMEOUT_S) for the loop to refresh them (see :mod:`.consumer_lag`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kafkalite_server.cluster.messages import NO_LEADER
from kafkalite_server.metrics.consumer_lag import ConsumerLag
from kafkalite_server.metrics.latency import QUANTILES

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_S = 10.0
"""How long a scrape waits for the event loop before the endpoint answers an error."""

NOT_RUNNING, STARTING, RUNNING, SHUTTING_DOWN = 0, 1, 3, 7
"""Kafka's BrokerState values (``kafka_server_kafkaserver_brokerstate``)."""


class BrokerCollector(Collector):
    def __init__(self, broker: Broker, loop: asyncio.AbstractEventLoop) -> None:
        self._broker = broker
        self._loop = loop
        self.consumer_lag = ConsumerLag(broker)

    def collect(self) -> Iterable[Metric]:
        """The families, built on the broker's loop (called from the HTTP thread)."""
        refresh = asyncio.run_coroutine_threadsafe(self.consumer_lag.refresh(), self._loop)
        try:
            refresh.result(SCRAPE_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:  # the lag of the last refresh is shown
            refresh.cancel()
            log.info("consumer lag: the leaders' high watermarks were not refreshed: %r", exc)
        result: concurrent.futures.Future[list[Metric]] = concurrent.futures.Future()

        def build() -> None:
            try:
                result.set_result(self.families())
            except Exception as exc:
                result.set_exception(exc)

        self._loop.call_soon_threadsafe(build)
        return result.result(SCRAPE_TIMEOUT_S)

    def families(self) -> list[Metric]:
        """Every family, read from the broker's state now (on the loop)."""
        return [*self._replica_manager(), *self._controller(), *self._topic_traffic(),
                *self._requests(), *self._logs(), self._broker_state(), *self._purgatories(),
                self._fetcher_lag(), *self.consumer_lag.families()]

    def _replica_manager(self) -> list[Metric]:
        manager = self._broker.replica_manager
        partitions = list(manager.partitions.values())
        leaders = [p for p in partitions if p.is_leader]
        under = sum(len(p.isr) < len(p.replicas) for p in leaders)
        offline = sum(p.log.offline for p in partitions)
        counters = manager.counters
        return [
            _gauge("kafka_server_replicamanager_partitioncount",
                   "Partitions hosted by this broker.", len(partitions)),
            _gauge("kafka_server_replicamanager_leadercount",
                   "Partitions this broker leads.", len(leaders)),
            _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                   "Partitions led here whose ISR is smaller than their replica set.", under),
            _gauge("kafka_server_replicamanager_offlinereplicacount",
                   "Replicas here whose log directory failed.", offline),
            _counter("kafka_server_replicamanager_isrshrinks",
                     "ISR shrinks of partitions led here.", {(): counters.isr_shrinks}),
            _counter("kafka_server_replicamanager_isrexpands",
                     "ISR expansions of partitions led here.", {(): counters.isr_expands}),
        ]

    def _controller(self) -> list[Metric]:
        """As in Kafka, only the active controller reports the cluster-wide counts."""
        cache = self._broker.metadata_cache
        active = cache.controller_id == self._broker.node_id
        offline = topics = partitions = 0
        if active:
            for topic in cache.topic_names():
                states = cache.partitions_of(topic) or []
                topics += 1
                partitions += len(states)
                offline += sum(state.leader == NO_LEADER for state in states)
        return [
            _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                   "1 on the broker the cluster's metadata names the controller.", int(active)),
            _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                   "Partitions without a leader (reported by the active controller).", offline),
            _gauge("kafka_controller_kafkacontroller_globaltopiccount",
                   "Topics in the cluster (reported by the active controller).", topics),
            _gauge("kafka_controller_kafkacontroller_globalpartitioncount",
                   "Partitions in the cluster (reported by the active controller).",
                   partitions),
        ]

    def _topic_traffic(self) -> list[Metric]:
        counters = self._broker.replica_manager.counters
        return [
            _per_topic("kafka_server_brokertopicmetrics_messagesin",
                       "Records appended to partitions led here.", counters.messages_in),
            _per_topic("kafka_server_brokertopicmetrics_bytesin",
                       "Bytes of record batches appended to partitions led here.",
                       counters.bytes_in),
            _per_topic("kafka_server_brokertopicmetrics_bytesout",
                       "Bytes of records returned to consumer fetches.", counters.bytes_out),
            _per_topic("kafka_server_brokertopicmetrics_failedproducerequests",
                       "Partition appends refused or failed.", counters.failed_produce),
        ]

    def _requests(self) -> list[Metric]:
        counters = self._broker.request_counters
        requests = _counter("kafka_network_requestmetrics_requests",
                            "Requests handled, by API and version.",
                            {(name, str(version)): count
                             for (name, version), count in counters.requests.items()},
                            ("request", "version"))
        total_time = Metric("kafka_network_requestmetrics_totaltimems",
                            "Time from a decoded request to its encoded response, in ms.",
                            "summary")
        for name, histogram in counters.latency.items():
            for label, q in QUANTILES:
                total_time.add_sample(total_time.name, {"request": name, "quantile": label},
                                      histogram.quantile(q))
            total_time.add_sample(f"{total_time.name}_count", {"request": name},
                                  histogram.count)
            total_time.add_sample(f"{total_time.name}_sum", {"request": name},
                                  histogram.sum_ms)
        return [requests, total_time]

    def _logs(self) -> list[Metric]:
        families = {
            "size": Metric("kafka_log_log_size", "Bytes of the partition's log here.", "gauge"),
            "logstartoffset": Metric("kafka_log_log_logstartoffset",
                                     "The partition's log start offset here.", "gauge"),
            "logendoffset": Metric("kafka_log_log_logendoffset",
                                   "The partition's log end offset here.", "gauge"),
        }
        for (topic, index), partition in self._broker.replica_manager.partitions.items():
            log_ = partition.log
            if log_.offline:
                continue
            labels = {"topic": topic, "partition": str(index)}
            for key, value in (("size", log_.size_in_bytes),
                               ("logstartoffset", log_.log_start_offset),
                               ("logendoffset", log_.log_end_offset)):
                family = families[key]
                family.add_sample(family.name, labels, value)
        return list(families.values())

    def _broker_state(self) -> Metric:
        broker = self._broker
        if not broker.accepting:
            state = SHUTTING_DOWN
        elif broker.metadata_cache.has_first_update:
            state = RUNNING
        else:
            state = STARTING
        return _gauge("kafka_server_kafkaserver_brokerstate",
                      "Kafka's BrokerState: 1 starting, 3 running, 7 shutting down.", state)

    def _purgatories(self) -> list[Metric]:
        manager = self._broker.replica_manager
        family = Metric("kafka_server_delayedoperationpurgatory_purgatorysize",
                        "Requests parked in a purgatory (once per partition they watch).",
                        "gauge")
        for operation, purgatory in (("Produce", manager.produce_purgatory),
                                     ("Fetch", manager.fetch_purgatory)):
            family.add_sample(family.name, {"delayedoperation": operation}, purgatory.watched)
        return [family]

    def _fetcher_lag(self) -> Metric:
        lags = [p.offset_lag for p in self._broker.replica_manager.partitions.values()
                if not p.is_leader and not p.log.offline]
        family = Metric("kafka_server_replicafetchermanager_maxlag",
                        "Records the most lagging follower replica here is behind its leader.",
                        "gauge")
        family.add_sample(family.name, {"clientid": "Replica"}, max(lags, default=0))
        return family


def _gauge(name: str, documentation: str, value: float) -> Metric:
    family = Metric(name, documentation, "gauge")
    family.add_sample(name, {}, value)
    return family


def _counter(name: str, documentation: str, values: Mapping[tuple[str, ...], float],
             label_names: tuple[str, ...] = ()) -> Metric:
    family = Metric(name, documentation, "counter")
    for label_values, value in values.items():
        family.add_sample(f"{name}_total", dict(zip(label_names, label_values, strict=True)),
                          value)
    return family


def _per_topic(name: str, documentation: str, by_topic: Mapping[str, int]) -> Metric:
    """One series per topic plus the all-topics series (no ``topic`` label), as Kafka's
    per-topic and all-topics BrokerTopicMetrics beans export."""
    values: dict[tuple[str, ...], float] = {(topic,): count for topic, count in by_topic.items()}
    family = _counter(name, documentation, values, ("topic",))
    family.add_sample(f"{name}_total", {}, sum(by_topic.values()))
    return family
