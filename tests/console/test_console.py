"""The web console in headless Chromium against a two-broker EmbeddedCluster.

One Debian ``chromium --headless`` (see browser.py) loads each page with a virtual time
budget: the page's script runs, fetches the console's API and renders, and the live pages
take a few samples; then the test reads the rendered DOM and saves a screenshot, in the
test's tmp dir, or in ``$KAFKALITE_CONSOLE_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.admin import AdminClient, NewTopic
from kafkalite.console import BrokerMetrics, ClusterReader
from kafkalite_server import EmbeddedCluster
from tests.console.browser import CHROMIUM, Browser
from tests.console.console_server import Console

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (tests/prerequisites.py)")

TOPIC = "orders"
GROUP = "billing"
RECORDS = 20  # 10 per partition
COMMITTED = {0: 4, 1: 10}  # the group's lag: 6 on partition 0, none on 1


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(2, config={"kafkalite.metrics.listener": "127.0.0.1:0"}) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(TOPIC, 2, 2)])
        admin.wait_for_topics([TOPIC])
        admin.close()
        with Producer(bootstrap_servers=bootstrap) as producer:
            for i in range(RECORDS):
                value = (json.dumps({"order": i}).encode() if i % 2 == 0
                         else msgpack.packb({"order": i}))
                producer.send(TOPIC, value, key=f"customer-{i}".encode(), partition=i // 10,
                              headers=[("source", b"checkout")])
            producer.flush()
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
        consumer.assign([TopicPartition(TOPIC, p) for p in COMMITTED])
        consumer.commit({TopicPartition(TOPIC, p): o for p, o in COMMITTED.items()})
        consumer.close(autocommit=False)
        yield cluster


@pytest.fixture(scope="module")
def reader(cluster: EmbeddedCluster) -> Iterator[ClusterReader]:
    reader = ClusterReader({"bootstrap_servers": cluster.bootstrap_servers})
    yield reader
    reader.close()


@pytest.fixture(scope="module")
def console(reader: ClusterReader) -> Iterator[Console]:
    console = Console(reader, allow_writes=False)
    yield console
    console.stop()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("KAFKALITE_CONSOLE_SCREENSHOTS")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("console-screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    browser = Browser()
    yield browser
    browser.close()


def render(browser: Browser, console: Console, path: str, screenshot: Path) -> str:
    """The page's DOM after 5 s of its (virtual) time; its screenshot saved."""
    dom, png = browser.render(console.url(path))
    screenshot.write_bytes(png)
    assert len(png) > 10_000, "the screenshot is (nearly) blank"
    assert 'data-ready="true"' in dom, f"the page's script did not finish: {dom[-2000:]}"
    assert 'class="error"' not in dom, dom
    return dom


def cells(dom: str, cls: str) -> list[str]:
    return re.findall(rf'<td class="[^"]*\b{cls}\b[^"]*">([^<]*)</td>', dom)


def expected_isrs(cluster: EmbeddedCluster) -> list[str]:
    admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        partitions = admin.describe_topics([TOPIC])[TOPIC].partitions
    finally:
        admin.close()
    return [",".join(map(str, p.isr)) for p in sorted(partitions, key=lambda p: p.partition)]


def test_overview_shows_the_brokers_controller_and_no_unhealthy_partitions(
        browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, "/overview", screenshots / "overview.png")
    assert re.search(r"Brokers</div><div class=\"big\">2<", dom)
    assert "controller" in dom
    assert "No under-replicated partitions." in dom
    assert "No offline partitions." in dom


def test_topics_shows_the_topic_with_its_replicas_and_isr(
        cluster: EmbeddedCluster, browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, "/topics", screenshots / "topics.png")
    assert f'href="/topic?name={TOPIC}"' in dom
    isrs = expected_isrs(cluster)
    assert all(len(isr.split(",")) == 2 for isr in isrs)
    assert cells(dom, "isr") == isrs


def test_a_topic_page_browses_its_messages_decoded(
        cluster: EmbeddedCluster, browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, f"/topic?name={TOPIC}&partition=0&offset=0",
                 screenshots / "topic.png")
    assert f'<span id="topic-name">{TOPIC}</span>' in dom
    assert cells(dom, "isr") == expected_isrs(cluster)
    assert '<span class="tag">json</span>{"order": 0}' in dom
    assert '<span class="tag">msgpack</span>{"order": 1}' in dom
    assert '<span class="tag">utf-8</span>customer-9' in dom
    assert 'source: <span><span class="tag">utf-8</span>checkout' in dom
    assert "showing 10 from 0." in dom
    assert "</table></main>" in dom  # read-only: the records end the page (no write form)


def test_groups_lists_the_group(browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, "/groups", screenshots / "groups.png")
    assert f'href="/group?id={GROUP}"' in dom


def test_a_group_page_shows_its_lag_and_charts_it(
        browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, f"/group?id={GROUP}", screenshots / "group.png")
    lag = {p: RECORDS // 2 - committed for p, committed in COMMITTED.items()}
    assert f'<span id="total-lag">{sum(lag.values())}</span>' in dom
    assert cells(dom, "lag") == [str(lag[p]) for p in sorted(lag)]
    assert dom.count("<polyline") == 1 + len(lag)  # the total and each partition


def test_throughput_charts_the_growth_of_end_offsets(
        cluster: EmbeddedCluster, browser: Browser, console: Console, screenshots: Path) -> None:
    dom = render(browser, console, "/throughput", screenshots / "throughput.png")
    assert "<polyline" in dom  # two samples or more were taken: a rate was charted
    assert f'{TOPIC}</a></td><td class="num ">{RECORDS}</td>' in dom  # its end offsets


def test_throughput_also_charts_the_brokers_metrics_when_given(
        cluster: EmbeddedCluster, reader: ClusterReader, browser: Browser,
        screenshots: Path) -> None:
    urls = [f"http://127.0.0.1:{broker.metrics.port}/metrics"
            for broker in cluster.brokers if broker.metrics is not None]
    dead = "http://127.0.0.1:1/metrics"
    console = Console(reader, allow_writes=False, metrics=BrokerMetrics([*urls, dead]))
    try:
        dom = render(browser, console, "/throughput", screenshots / "throughput-metrics.png")
    finally:
        console.stop()
    assert len(urls) == 2
    assert "Bytes per second, from the brokers' metrics" in dom
    assert dom.count("<polyline") == 2 + 2  # messages/s (all, orders); bytes in, out
    assert f'<td>{TOPIC}</td><td class="num messages-in">{RECORDS}</td>' in dom
    assert f"Not answering: {dead}" in dom


def post(url: str, body: Any, content_type: str = "application/json") -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_a_read_only_console_refuses_to_write(console: Console) -> None:
    status, body = post(console.url(f"/api/topics/{TOPIC}/records"), {"value": "test"})
    assert (status, body) == (403, {"error": "the console is read-only: start it with "
                                             "--allow-writes"})


def test_a_request_naming_another_host_is_refused(reader: ClusterReader) -> None:
    """A page whose DNS name was rebound to 127.0.0.1 sends its own name as Host."""
    console = Console(reader, allow_writes=True)
    try:
        url = console.url(f"/api/topics/{TOPIC}/records")
        request = urllib.request.Request(url, data=b'{"value": "rebound"}', method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Host": "attacker.example:8080"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 421
        with urllib.request.urlopen(console.url("/api/settings"), timeout=30) as answer:
            assert answer.status == 200  # the loopback address itself is served
    finally:
        console.stop()


def test_with_writes_allowed_a_test_record_is_produced(
        cluster: EmbeddedCluster, reader: ClusterReader) -> None:
    console = Console(reader, allow_writes=True)
    try:
        url = console.url(f"/api/topics/{TOPIC}/records")
        assert post(url, {"value": "hello"}, "text/plain")[0] == 415  # no cross-site form post
        assert post(url, {"nope": 1})[0] == 400
        status, body = post(url, {"value": "hello console"})
    finally:
        console.stop()
    assert status == 200
    messages = reader.messages(TOPIC, body["partition"], body["offset"], 1)
    assert [r["value"] for r in messages["records"]] == [
        {"as": "utf-8", "text": "hello console"}]


def test_an_unknown_group_is_a_404_naming_it(console: Console) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(console.url("/api/groups/no-such-group"), timeout=30)
    assert raised.value.code == 404
    assert json.load(raised.value) == {"error": "consumer group 'no-such-group' does not exist"}


def test_the_cli_serves_the_console_on_loopback(cluster: EmbeddedCluster) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    metrics = cluster.brokers[0].metrics
    assert metrics is not None
    metrics_url = f"http://127.0.0.1:{metrics.port}/metrics"
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkalite.cli", "console", "-b", cluster.bootstrap_servers,
         "--port", str(port), "--metrics-url", metrics_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert banner.startswith(f"kafkalite console on http://127.0.0.1:{port} (read-only)")
        overview: dict[str, Any] = {}
        deadline = time.monotonic() + 20
        while not overview:
            assert time.monotonic() < deadline, "the console did not answer within 20 s"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/overview",
                                            timeout=10) as response:
                    overview = json.load(response)
            except urllib.error.URLError:
                time.sleep(0.1)
        assert [b["broker_id"] for b in overview["brokers"]] == [0, 1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/settings",
                                    timeout=10) as response:
            assert json.load(response)["metrics_urls"] == [metrics_url]
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize(("path", "named"), [
    ("/api/topics/no-such-topic", "no-such-topic"),
    (f"/api/topics/{TOPIC}/messages?partition=7", f"topic '{TOPIC}' has no partition 7"),
])
def test_an_unknown_topic_or_partition_is_a_404_naming_it(console: Console, path: str,
                                                            named: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(console.url(path), timeout=30)
    assert raised.value.code == 404
    assert named in json.load(raised.value)["error"]


@pytest.mark.parametrize(("arguments", "code", "message"), [
    (["--port", "70000"], 2, "argument --port: '70000' is not a TCP port (1-65535)"),
    (["-b", "127.0.0.1:1", "--connect-timeout-ms", "1000"], 1,
     "kafkalite: no broker reachable at 127.0.0.1:1 within 1000 ms"),
])
def test_the_cli_refuses_in_one_line(arguments: list[str], code: int, message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "kafkalite.cli", "console", *arguments],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == code
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
