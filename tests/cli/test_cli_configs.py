"""``kafkalite configs --entity-type clients|users``: client quotas set and shown as
kafka-configs does, on a standalone broker process, which keeps them across a restart. (The
commands run in this process, through the CLI's ``main``, to keep the test short.)"""

from __future__ import annotations

import contextlib
import json

import pytest

from kafkalite.cli.main import main
from tests.conftest import BrokerProcess


class InProcessCli:
    def __init__(self, broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
        self.broker = broker
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        try:
            code = main(["configs", "-b", self.broker.bootstrap_servers, *args])
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, err
        return out


def test_quotas_are_set_shown_removed_and_kept_across_a_restart(
        broker_process: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    cli = InProcessCli(broker_process, capsys)
    assert cli.ok("--alter", "--entity-type", "users", "--entity-name", "alice",
                  "--add-config", "producer_byte_rate=1048576,request_percentage=50") == \
        "Completed updating config for user-principal 'alice'.\n"
    cli.ok("--alter", "--entity-type", "users", "--entity-name", "alice",
           "--entity-type", "clients", "--entity-default", "--add-config",
           "consumer_byte_rate=2048")
    assert cli.ok("--describe", "--entity-type", "users") == (
        "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0, "
        "request_percentage=50.0\n")
    assert cli.ok("--describe", "--entity-type", "users", "--entity-name", "alice",
                  "--entity-type", "clients", "--entity-default") == (
        "Quota configs for user-principal 'alice', the default client-id are "
        "consumer_byte_rate=2048.0\n")

    broker_process.terminate()
    broker_process.start()
    described = json.loads(cli.ok("--describe", "--entity-type", "users",
                                  "--entity-type", "clients", "--entity-default", "--json"))
    assert described == [{"entity": {"client-id": None, "user": "alice"},
                          "quotas": {"consumer_byte_rate": 2048.0}}]
    cli.ok("--alter", "--entity-type", "users", "--entity-name", "alice",
           "--delete-config", "producer_byte_rate,request_percentage")
    assert cli.ok("--describe", "--entity-type", "users") == ""
    code, _out, err = cli("--alter", "--entity-type", "clients", "--entity-name", "app",
                          "--add-config", "producer_byte_rate=-5")
    assert code == 1 and "must be positive" in err and len(err.strip().splitlines()) == 1


def test_an_entity_must_be_named_in_order_and_fully_to_be_altered(
        capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["--alter", "--entity-type", "clients", "--add-config", "producer_byte_rate=5"],
         "--alter needs --entity-name or --entity-default"),
        (["--alter", "--entity-name", "app", "--entity-type", "clients"],
         "--entity-name must follow the --entity-type it names"),
        (["--alter", "--entity-type", "clients", "--entity-name", "a", "--add-config", "x"],
         "'x' is not KEY=NUMBER"),
    ]:
        with contextlib.suppress(SystemExit):
            assert main(["configs", *argv]) == 2
        assert message in capsys.readouterr().err
