"""The long randomized fault run: the scenarios of ``tests/faults`` over and over, with
random victims, timings and repetition counts, for a given number of minutes.

One ZooKeeper server (Debian's package) serves every run; each run starts a fresh
three-broker cluster in its own directory and ZooKeeper chroot. Runs go round the scenarios
in a shuffled order, each with a new seed and 1-3 rounds of its fault. At the end the table
(scenario, runs, acked, lost, duplicated, re-sent by the client, divergent, other
anomalies, unavailable seconds, runs that errored) is printed and written into
``docs/reliability.md`` between its ``long-run`` markers. The negative control's losses are
expected, and records re-sent by a client after it gave up on them are the client's (see
``tests/faults/checker.py``); any other non-zero anomaly column is a bug.

    python -m benchmarks.faults --minutes 30 [--seed 1] [--only F1,F3] [--no-docs]
        [--delivery-timeout-ms 30000]

``--delivery-timeout-ms`` sets how long the writers' clients keep a record before failing
it; below a scenario's outage (F3 with 11500) it shows what librdkafka does with records it
gives up on (the "re-sent by client" column).
"""

from __future__ import annotations

import argparse
import datetime
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "tests" / "faults"))
from catalog import SCENARIOS  # noqa: E402
from cluster import ZooKeeperServer  # noqa: E402
from scenarios import run_scenario  # noqa: E402
from workload import DELIVERY_TIMEOUT_MS  # noqa: E402

from benchmarks.report import replace_between_markers  # noqa: E402

DOCS = REPO_ROOT / "docs" / "reliability.md"


@dataclass
class Row:
    runs: int = 0
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    resent: int = 0
    divergent: int = 0
    other: int = 0
    unavailable_s: float = 0.0
    errors: int = 0


def run(minutes: float, seed: int, only: list[str],
        delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS) -> tuple[dict[str, Row], list[str]]:
    rng = random.Random(seed)
    names = only or list(SCENARIOS)
    rows = {name: Row() for name in names}
    problems: list[str] = []
    deadline = time.monotonic() + minutes * 60
    work = Path(tempfile.mkdtemp(prefix="kafkalite-faults-"))
    zookeeper = ZooKeeperServer(work / "zookeeper").start()
    try:
        order: list[str] = []
        while time.monotonic() < deadline:
            if not order:
                order = rng.sample(names, len(names))
            name = order.pop()
            run_seed, rounds = rng.randrange(1 << 30), rng.randint(1, 3)
            root = work / f"{name}-{run_seed}"
            row = rows[name]
            row.runs += 1
            try:
                outcome = run_scenario(SCENARIOS[name], root, zookeeper, seed=run_seed,
                                       rounds=rounds, delivery_timeout_ms=delivery_timeout_ms)
            except Exception as exc:
                row.errors += 1
                problems.append(f"{name} seed={run_seed} rounds={rounds}: error "
                                f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                traceback.print_exc()
                continue
            report = outcome.report
            row.acked += report.acked
            row.lost += len(report.lost)
            row.duplicated += len(report.duplicated)
            row.resent += len(report.resent)
            row.divergent += len(report.divergent)
            row.other += (len(report.reordered) + len(report.inconsistent_offsets)
                          + len(report.offsets_backwards))
            row.unavailable_s += report.unavailable_s
            verdict = ("ok" if report.ok != SCENARIOS[name].expect_loss
                       or (SCENARIOS[name].expect_loss and report.lost) else "VIOLATION")
            if verdict != "ok":
                problems.append(f"{name} seed={run_seed} rounds={rounds}: {report.summary()}")
            print(f"{name:11} seed={run_seed:<10} rounds={rounds} {outcome.seconds:5.1f}s "
                  f"{verdict}: {report.summary()}", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        zookeeper.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows, problems


def table(rows: dict[str, Row]) -> str:
    lines = ["| Scenario | What | Runs | Acked | Lost | Duplicated | Re-sent by client | "
             "Divergent | Other anomalies | Unavailable s | Errored runs |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        scenario = SCENARIOS[name]
        lost = f"{row.lost} (expected)" if scenario.expect_loss else str(row.lost)
        lines.append(f"| {name} | {scenario.title} | {row.runs} | {row.acked} | {lost} | "
                     f"{row.duplicated} | {row.resent} | {row.divergent} | {row.other} | "
                     f"{row.unavailable_s:.1f} | {row.errors} |")
    return "\n".join(lines)


def write_docs(text: str, minutes: float, seed: int, delivery_timeout_ms: int) -> None:
    stamp = datetime.date.today().isoformat()
    timeout = ("" if delivery_timeout_ms == DELIVERY_TIMEOUT_MS
               else f" --delivery-timeout-ms {delivery_timeout_ms}")
    replace_between_markers(
        DOCS, "long-run table",
        f"\n`python -m benchmarks.faults --minutes {minutes:g} --seed {seed}{timeout}`, "
        f"{stamp}, three brokers, two cores:\n\n{text}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--delivery-timeout-ms", type=int, default=DELIVERY_TIMEOUT_MS,
                        help="how long the writers' clients keep trying a record")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    unknown = [name for name in only if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {list(SCENARIOS)}")
    # A SIGTERM unwinds like Ctrl-C, so ZooKeeper and the brokers are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows, problems = run(args.minutes, args.seed, only, args.delivery_timeout_ms)
    text = table(rows)
    print(text)
    for problem in problems:
        print("problem:", problem)
    if not args.no_docs:
        write_docs(text, args.minutes, args.seed, args.delivery_timeout_ms)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
