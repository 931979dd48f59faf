"""The demo's picture: how the partitioner spread the clickstream, and where the orders
topic's leaders were before and after the broker was killed.

matplotlib is an optional extra (``pip install '.[plot]'``), imported only here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalite_demo.clickstream import PARTITIONS, TOPIC, is_eu_partition
from kafkalite_demo.crash import ORDERS, LeaderMoves, Leadership

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.patches import Patch

REGION_COLOURS = {"EU": "tab:blue", "US": "tab:orange"}
KILLED_COLOUR = "tab:red"


def draw(path: Path, per_partition: Counter[int], moves: LeaderMoves | None) -> None:
    """Writes a PNG to ``path``: records per partition, and (after the crash step) a grid
    of each partition's leader and ISR before and after the kill.

    Raises ImportError when matplotlib is not installed, OSError when ``path`` cannot be
    written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 1 if moves is None else 2
    figure, axes = plt.subplots(1, columns, figsize=(7.0 * columns, 4.8), squeeze=False)
    _records_per_partition(axes[0][0], per_partition)
    if moves is not None:
        _leaders(axes[0][1], moves, plt.get_cmap("Set2"))
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    finally:
        plt.close(figure)


def _records_per_partition(axes: Axes, per_partition: Counter[int]) -> None:
    partitions = list(range(PARTITIONS))
    counts = [per_partition.get(p, 0) for p in partitions]
    regions = ["EU" if is_eu_partition(p) else "US" for p in partitions]
    bars = axes.bar([f"p{p}" for p in partitions], counts,
                    color=[REGION_COLOURS[r] for r in regions])
    for bar, count in zip(bars, counts, strict=True):
        axes.annotate(f"{count:,}", (bar.get_x() + bar.get_width() / 2,
                                     bar.get_height()), ha="center", va="bottom", fontsize=8)
    axes.set_ylim(0, max(max(counts) * 1.15, 1))
    axes.set_title(f"{TOPIC}: records per partition (RegionPartitioner)")
    axes.set_xlabel("partition")
    axes.set_ylabel("records")
    handles = [_patch(colour) for colour in REGION_COLOURS.values()]
    axes.legend(handles, [f"{r} users" for r in REGION_COLOURS],
                loc="upper left", fontsize=8)


def _leaders(axes: Axes, moves: LeaderMoves, palette: Colormap) -> None:
    """One column per partition, a row for before and one for after; each cell is coloured
    by its leader and lists the ISR; the killed broker's cells are outlined in red."""
    import matplotlib.patches as patches

    partitions = sorted(moves.before)
    rows = [("before", moves.before), ("after", moves.after)]
    for y, (_, state) in enumerate(rows):
        for x, partition in enumerate(partitions):
            leader, isr = state.get(partition, (-1, ()))
            killed = leader == moves.killed
            axes.add_patch(patches.Rectangle(
                (x, y), 0.94, 0.9, facecolor=palette(leader % 8) if leader >= 0 else "white",
                edgecolor=KILLED_COLOUR if killed else "grey", linewidth=2.5 if killed else 1))
            axes.text(x + 0.47, y + 0.35, f"broker {leader}" if leader >= 0 else "no leader",
                      ha="center", va="center", fontsize=9, weight="bold")
            axes.text(x + 0.47, y + 0.62, "isr " + ",".join(map(str, isr)),
                      ha="center", va="center", fontsize=8)
    axes.set_xlim(0, len(partitions))
    axes.set_ylim(len(rows), 0)
    axes.set_xticks([x + 0.47 for x in range(len(partitions))],
                    [f"p{p}" for p in partitions])
    axes.set_yticks([y + 0.45 for y in range(len(rows))],
                    [f"{name} the kill" for name, _ in rows])
    axes.set_xlabel(f"leaderships before the kill: {_per_broker(moves.before)}\n"
                    f"after: {_per_broker(moves.after)}")
    axes.tick_params(length=0)
    for side in axes.spines.values():
        side.set_visible(False)
    axes.set_title(f"{ORDERS}: leaders and ISR, broker {moves.killed} killed "
                   "(red outline: its leaderships)")


def _per_broker(state: Leadership) -> str:
    counts = Counter(leader for leader, _ in state.values())
    return ", ".join(f"broker {b}: {n}" for b, n in sorted(counts.items()))


def _patch(colour: str) -> Patch:
    import matplotlib.patches as patches

    return patches.Patch(color=colour)
