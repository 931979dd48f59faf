"""The ``kafkalite-server`` process: clean and unclean restarts, CLI errors, dump-log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafkalite.protocol import ApiKey

REPO_ROOT = Path(__file__).resolve().parents[3]


def _create(client, name: str, configs: dict[str, str]) -> None:
    body = {"topics": [{"name": name, "num_partitions": 2, "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "timeout_ms": 5000, "validate_only": False}
    assert client.call(ApiKey.CREATE_TOPICS, 4, body)["topics"][0]["error_code"] == 0


def _produce(client, batch: bytes) -> int:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
            "topic_data": [{"name": "kept", "partition_data": [{"index": 1,
                                                                "records": batch}]}]}
    response = client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0]
    assert response["error_code"] == 0
    return response["base_offset"]


def _values(client, read_records) -> list[bytes | None]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "kept", "partitions": [
                {"partition": 1, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    partition = client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"][0]
    assert partition["error_code"] == 0
    return [value for _o, _k, value, _t in read_records(partition["records"])]


def _retention(client) -> str:
    body = {"resources": [{"resource_type": 2, "resource_name": "kept",
                           "configuration_keys": ["retention.ms"]}],
            "include_synonyms": False, "include_documentation": False}
    return client.call(ApiKey.DESCRIBE_CONFIGS, 3, body)["results"][0]["configs"][0]["value"]


def test_clean_restart_keeps_topics_configs_and_data(broker_process, wire, make_batch,
                                                     read_records):
    client = wire(broker_process.bootstrap_servers)
    _create(client, "kept", {"retention.ms": "86400000"})
    _produce(client, make_batch([b"one", b"two"]))
    assert broker_process.terminate() == 0
    assert (broker_process.data_dir / ".kafka_cleanshutdown").exists()
    broker_process.start()
    client = wire(broker_process.bootstrap_servers)
    assert _values(client, read_records) == [b"one", b"two"]
    assert _retention(client) == "86400000"
    assert _produce(client, make_batch([b"three"])) == 2


def test_unclean_restart_recovers(broker_process, wire, make_batch, read_records):
    client = wire(broker_process.bootstrap_servers)
    _create(client, "kept", {})
    _produce(client, make_batch([b"survives"]))
    producer_id = client.call(ApiKey.INIT_PRODUCER_ID, 1, {
        "transactional_id": None, "transaction_timeout_ms": 1000})["producer_id"]
    broker_process.kill()
    broker_process.start()
    client = wire(broker_process.bootstrap_servers)
    assert _values(client, read_records) == [b"survives"]
    again = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                     "transaction_timeout_ms": 1000})
    assert again["producer_id"] > producer_id


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite_server", *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)


def test_bad_config_is_one_line_naming_the_key(tmp_path):
    for args, key in ((["--set", "num.partitions=zero"], "num.partitions"),
                      (["--set", "no.such.key=1"], "no.such.key")):
        result = _cli("start", "--data-dir", str(tmp_path), "--port", "0", *args)
        assert result.returncode == 2
        assert key in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr
    properties = tmp_path / "broker.properties"
    properties.write_text("# comment\nlog.retention.hours = soon\n")
    result = _cli("start", "--data-dir", str(tmp_path), "--config", str(properties))
    assert result.returncode == 2 and "log.retention.hours" in result.stderr
    result = _cli("start", "--port", "0")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_dump_log_prints_the_batches(broker_process, wire, make_batch):
    client = wire(broker_process.bootstrap_servers)
    _create(client, "kept", {})
    _produce(client, make_batch([b"dumped"], keys=[b"k"]))
    broker_process.terminate()
    segment = broker_process.data_dir / "kept-1" / f"{0:020d}.log"
    result = _cli("dump-log", str(segment), "--deep-iteration")
    assert result.returncode == 0, result.stderr
    assert "dumped" in result.stdout
    index = _cli("dump-log", str(segment.with_suffix(".index")), "--index")
    assert index.returncode == 0, index.stderr
