"""Progress where stderr is a file (a redirected log): whole lines every few seconds."""

from __future__ import annotations

import io

from kafkalite.cli.progress import LOG_INTERVAL_S, Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_per_interval_and_one_at_the_end() -> None:
    log, clock = io.StringIO(), FakeClock()
    with Progress(1000, "producing", enabled=True, stream=log, clock=clock) as progress:
        progress.advance(100)  # before the first interval: nothing yet
        clock.now += LOG_INTERVAL_S
        progress.advance(150)
        clock.now += LOG_INTERVAL_S / 2
        progress.advance(250)  # half an interval later: still the one line
        clock.now += LOG_INTERVAL_S / 2
        progress.advance(500)
    assert log.getvalue().splitlines() == [
        "producing: 250/1,000 (25%)",
        "producing: 1,000/1,000 (100%)",
        "producing: 1,000/1,000 (100%)",
    ]


def test_a_run_of_unknown_length_logs_its_count() -> None:
    log, clock = io.StringIO(), FakeClock()
    with Progress(None, "consuming", enabled=True, stream=log, clock=clock) as progress:
        clock.now += LOG_INTERVAL_S
        progress.advance(12_345)
    assert log.getvalue() == "consuming: 12,345\nconsuming: 12,345\n"


def test_a_command_draws_nothing_where_stderr_is_not_a_terminal() -> None:
    log, clock = io.StringIO(), FakeClock()
    with Progress(10, "producing", stream=log, clock=clock) as progress:
        clock.now += LOG_INTERVAL_S
        progress.advance(10)
    assert log.getvalue() == ""
