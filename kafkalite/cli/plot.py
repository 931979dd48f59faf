"""``groups describe --plot FILE.png``: who owns each partition, and its lag, in one chart.

matplotlib is an optional extra (``pip install kafkalite[plot]``); it is imported only here,
only when a plot is asked for.
"""

from __future__ import annotations

from kafkalite.cli.group_view import GroupView
from kafkalite.cli.options import CliError

UNASSIGNED = "(unassigned)"


def plot_group(view: GroupView, path: str) -> None:
    """Bars of lag per partition, coloured by owning member, with a legend of members."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'kafkalite[plot]'") from None
    if not view.partitions:
        raise CliError(f"group {view.group!r} has no partitions to plot")

    owners = [row.member.member_id if row.member else UNASSIGNED for row in view.partitions]
    palette = plt.get_cmap("tab10")
    colours = {owner: palette(i % 10) for i, owner in enumerate(dict.fromkeys(owners))}
    labels = [f"{row.topic}-{row.partition}" for row in view.partitions]
    lags = [row.lag or 0 for row in view.partitions]

    figure, (axes, strip) = plt.subplots(
        2, 1, sharex=True, gridspec_kw={"height_ratios": [6, 1]},
        figsize=(max(6.0, 0.5 * len(labels) + 2), 5.0))
    bars = axes.bar(labels, lags, color=[colours[o] for o in owners])
    for bar, row in zip(bars, view.partitions, strict=True):
        axes.annotate("-" if row.lag is None else str(row.lag),
                      (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha="center", va="bottom", fontsize=8)
    axes.set_ylim(0, max(max(lags) * 1.15, 1))
    axes.set_title(f"consumer group {view.group!r}: {view.state}, total lag {view.total_lag}")
    axes.set_ylabel("lag (records)")
    strip.bar(labels, [1] * len(labels), width=1.0, color=[colours[o] for o in owners],
              edgecolor="white")
    strip.set_yticks([])
    strip.set_ylabel("owner", rotation=0, ha="right", va="center")
    strip.set_xlabel("partition")
    strip.tick_params(axis="x", labelrotation=45)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    axes.legend(handles, [_short(o) for o in colours], title="owner", fontsize=8)
    figure.tight_layout()
    try:
        figure.savefig(path)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        plt.close(figure)


def _short(member_id: str, width: int = 40) -> str:
    return member_id if len(member_id) <= width else member_id[: width - 1] + "…"
