"""Talking to the cluster on behalf of a command, with the CLI's short failure timeouts.

A command first asks for metadata (:func:`cluster_metadata`): that one step tells an
unreachable broker, and an unknown topic, apart from everything else, within
``--connect-timeout-ms`` instead of the clients' minute-long defaults.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from kafkalite.admin import AdminClient
from kafkalite.cli.options import CliError
from kafkalite.client.client import KafkaClient
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.errors import KafkaTimeoutError


def client_config(args: argparse.Namespace) -> dict[str, Any]:
    """Settings every SDK client the CLI creates shares (kafka-python's names)."""
    return {
        "bootstrap_servers": args.bootstrap_servers,
        "client_id": "kafkalite-cli",
        "request_timeout_ms": max(args.connect_timeout_ms, 1000),
        **args.command_config,
    }


def sdk_config(args: argparse.Namespace, **command_settings: Any) -> dict[str, Any]:
    """A producer's or consumer's settings: the shared ones, the command's, then ``-X``."""
    return {**client_config(args), **command_settings, **dict(args.client_properties)}


def unreachable(args: argparse.Namespace, cause: str | None = None) -> CliError:
    """``cause``: why the connections failed (the client's last error per address)."""
    return CliError(f"no broker reachable at {args.bootstrap_servers} within "
                    f"{args.connect_timeout_ms} ms" + (f": {cause}" if cause else ""))


def cluster_metadata(args: argparse.Namespace, topics: Iterable[str] | None = None, *,
                     auto_create: bool = False) -> ClusterMetadata:
    """The cluster as a broker describes it: every topic when ``topics`` is None.

    Raises :class:`CliError` when no broker answers in time, and when one of ``topics``
    does not exist (unless the broker creates it because ``auto_create`` asks for that).
    """
    wanted = None if topics is None else sorted(set(topics))
    client = KafkaClient(**client_config(args), allow_auto_create_topics=auto_create)
    deadline = time.monotonic() + args.connect_timeout_ms / 1000
    try:
        if wanted is None:
            client.metadata.all_topics = True
        else:
            client.metadata.add_topics(wanted)
        cluster = client.cluster
        while True:
            version = client.metadata.request_update()
            try:
                client.metadata.await_update(version, max(deadline - time.monotonic(), 0))
            except KafkaTimeoutError:
                if cluster.version == 0:
                    raise unreachable(args, client.connection_failures.describe()) from None
            if not _pending_topics(cluster, wanted or ()) or time.monotonic() >= deadline:
                break
        for topic in wanted or ():
            require_topic(cluster, topic)
        return cluster
    finally:
        client.close()


def _pending_topics(cluster: ClusterMetadata, topics: Iterable[str]) -> list[str]:
    """Topics with no answer yet (being created, leader being elected): worth asking again."""
    settled = cluster.unknown_topics() | cluster.invalid_topics() | cluster.unauthorized_topics()
    return [t for t in topics if t not in settled and not cluster.partitions_for_topic(t)]


def require_topic(cluster: ClusterMetadata, topic: str) -> frozenset[int]:
    """The topic's partition ids; CliError naming the topic when it does not exist."""
    if topic in cluster.invalid_topics():
        raise CliError(f"invalid topic name {topic!r}")
    if topic in cluster.unauthorized_topics():
        raise CliError(f"not authorized to access topic {topic!r}")
    partitions = cluster.partitions_for_topic(topic)
    if not partitions:
        raise CliError(f"unknown topic {topic!r}")
    return partitions


@contextmanager
def admin_client(args: argparse.Namespace) -> Iterator[AdminClient]:
    """An AdminClient for one command, once a broker has answered (else a quick CliError)."""
    cluster_metadata(args, [])
    admin = AdminClient(**client_config(args))
    try:
        yield admin
    finally:
        admin.close()
