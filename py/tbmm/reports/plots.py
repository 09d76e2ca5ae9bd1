"""The three panels of the paper's Fig. 3 as PNGs: O-Eval vs cost, per entry, per suite.

Figures are built on `matplotlib.figure.Figure` with the Agg canvas (no pyplot, so no
global state and no display needed) and returned with their data for tests. Output is
deterministic: fixed fonts (DejaVu Sans, then the CJK font of `tbmm.reports.fonts` for the
characters DejaVu lacks, e.g. a Chinese entry name), fixed sizes and DPI, fixed PNG metadata.

Every bar carries its value as a label; a bar of 0 is drawn as an outlined stub (a bar of
width 0 is invisible) labelled 0.00, and a suite an entry has no score on is labelled n/a.

Cost axis policy: the x-axis is logarithmic, so a cost of 0 or an unknown cost cannot be
placed. Such entries are drawn at a floor one decade below the cheapest known positive
cost ($0.01 when there is none), with their own marker and a legend entry that names the
floor. A cost of 0 is a known cost and may be on the Pareto front; an unknown cost never
is.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tbmm.reports import fonts
from tbmm.reports.leaderboard import EntryRow, Leaderboard, Stat

DPI = 120
PNG_METADATA = {"Software": "tbmm", "Title": "TB-MathModel leaderboard"}
RC = {
    "font.family": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 11,
    "axes.labelsize": 9.5,
    "svg.hashsalt": "tbmm",
}
ZERO_STUB = 0.8  # width (O-Eval percentage points) of the outlined stub drawn for a 0 bar


def rc() -> dict[str, object]:
    """RC with the CJK font appended to the family list when one is installed."""
    cjk = fonts.matplotlib_family()
    return {**RC, "font.family": [*RC["font.family"], cjk]} if cjk else dict(RC)


SUITE_COLOURS = {"CUMCM": "#d9534f", "MCM": "#337ab7"}
ENTRY_COLOUR = "#4a7ab7"


@dataclass
class Plot:
    """One figure with its file stem, title and the notes a reader needs (e.g. the cost floor)."""

    name: str
    title: str
    figure: Figure
    notes: list[str] = field(default_factory=list)


def plain(s: str) -> str:
    """Text shown as is: an even number of "$" would otherwise switch matplotlib to mathtext."""
    return s.replace("$", r"\$")


def _pct(q: Fraction | None) -> float | None:
    return None if q is None else float(q * 100)


def _std_pct(st: Stat | None) -> float | None:
    return None if st is None or st.std is None else float(st.std) * 100


def _fig(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _rows_height(n_rows: float) -> float:
    """Figure height (in) for horizontal bars: legible at any number of entries."""
    return max(3.2, round(0.42 * n_rows + 1.8, 2))


def cost_floor(entries: list[EntryRow]) -> float:
    """Where zero/unknown costs are drawn on the log axis: a decade below the cheapest known."""
    pos = [float(x.cost) for x in entries if x.cost is not None and x.cost > 0]
    if not pos:
        return 0.01
    return 10 ** (math.floor(math.log10(min(pos))) - 1)


LABEL_PT = 7.0


def _place_labels(ax: Axes, labels: list[tuple[float, float, str]]) -> None:
    """Annotate points top-down, pushing a label below any close label already placed.

    Close = within 0.8 decade on the cost axis (labels run to the right) and one label
    height apart; heights are converted to data units with the axes' current transform.
    """
    line_pt = LABEL_PT * 1.3
    y0 = ax.transData.transform((1.0, 0.0))[1]
    y1 = ax.transData.transform((1.0, 1.0))[1]
    per_unit_pt = (y1 - y0) * 72 / ax.figure.dpi  # points per O-Eval percentage point
    dy = line_pt / per_unit_pt
    placed: list[tuple[float, float]] = []
    for x, y, text in sorted(labels, key=lambda t: (-t[1], t[0], t[2])):
        want = y + 0.3 * dy
        close = sorted((py for px, py in placed if abs(math.log10(px / x)) < 0.8), reverse=True)
        for py in close:
            if abs(want - py) < dy:
                want = py - dy
        placed.append((x, want))
        ax.annotate(
            plain(text),
            (x, y),
            xytext=(5, (want - y) * per_unit_pt),
            textcoords="offset points",
            fontsize=LABEL_PT,
            va="bottom" if want >= y else "center",
        )


def plot_cost(lb: Leaderboard) -> Plot:
    """O-Eval (%) vs cost per full run on a log x-axis, with the Pareto front."""
    title = "O-Eval vs cost per full run"
    fig = _fig(7.5, 5.0)
    ax = fig.add_subplot()
    ents = [x for x in lb.entries if x.o_eval.mean is not None]
    floor = cost_floor(ents)
    notes: list[str] = []
    labels: list[tuple[float, float, str]] = []

    def x_of(e: EntryRow) -> float:
        return float(e.cost) if e.cost is not None and e.cost > 0 else floor

    groups = [
        ("cost known", [e for e in ents if e.cost is not None and e.cost > 0], "o", ENTRY_COLOUR),
        (f"cost $0 (drawn at ${floor:g})", [e for e in ents if e.cost == 0], "s", "#5cb85c"),
        (
            f"cost unknown (drawn at ${floor:g}; not on the front)",
            [e for e in ents if e.cost is None],
            "X",
            "#999999",
        ),
    ]
    for label, group, marker, colour in groups:
        if not group:
            continue
        ax.scatter(
            [x_of(e) for e in group],
            [_pct(e.o_eval.mean) for e in group],
            marker=marker,
            s=46,
            color=colour,
            edgecolors="black",
            linewidths=0.5,
            label=plain(label),
            zorder=3,
        )
        labels += [(x_of(e), _pct(e.o_eval.mean) or 0.0, e.shown) for e in group]
        if "drawn at" in label:
            notes.append(f"{len(group)} entr{'y' if len(group) == 1 else 'ies'} with {label}.")
    front = [e for e in ents if e.pareto]
    front.sort(key=lambda e: (e.cost or Fraction(0), -(e.o_eval.mean or 0)))
    if front:
        ax.plot(
            [x_of(e) for e in front],
            [_pct(e.o_eval.mean) for e in front],
            drawstyle="steps-post",
            color="#f0ad4e",
            linewidth=1.6,
            label="Pareto front",
            zorder=2,
        )
    ax.set_xscale("log")
    xs = [x_of(e) for e in ents] or [floor]
    ax.set_xlim(min(xs) / 2.5, max(xs) * 2.5)
    ax.set_ylim(0, 105)
    ax.set_xlabel("Cost per full run (US$, log scale)")
    ax.set_ylabel("O-Eval (%)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    _place_labels(ax, labels)
    if ents:
        ax.legend(loc="best", fontsize=8)
    return Plot("oeval_vs_cost", title, fig, notes)


def _errorbars(ax: Axes, ys: list[float], means: list[float], stds: list[float | None]) -> None:
    pts = [(y, m, s) for y, m, s in zip(ys, means, stds, strict=True) if s is not None]
    if pts:
        ax.errorbar(
            [m for _, m, _ in pts],
            [y for y, _, _ in pts],
            xerr=[s for _, _, s in pts],
            fmt="none",
            ecolor="black",
            elinewidth=1,
            capsize=3,
            zorder=3,
        )


def _bars(
    ax: Axes,
    ys: list[float],
    values: list[float | None],
    stds: list[float | None],
    *,
    height: float,
    colour: str,
    label: str,
    fontsize: float,
) -> None:
    """Horizontal bars with a value label each. A 0 is an outlined stub of ZERO_STUB width
    (still labelled 0.00); None (no score) draws nothing and is labelled n/a."""
    vals = [v or 0.0 for v in values]
    ax.barh(ys, vals, height=height, color=colour, zorder=2, label=label)
    zero = [y for y, v in zip(ys, values, strict=True) if v == 0]
    if zero:
        ax.barh(
            zero,
            [ZERO_STUB] * len(zero),
            height=height,
            facecolor="white",
            edgecolor=colour,
            linewidth=1.2,
            zorder=2.5,
        )
    _errorbars(ax, ys, vals, stds)
    for y, v, sd in zip(ys, values, stds, strict=True):
        x = min(max(v or 0.0, ZERO_STUB) + (sd or 0) + 1, 106)  # past a long error bar: the margin
        ax.text(x, y, "n/a" if v is None else f"{v:.2f}", fontsize=fontsize, va="center")


def plot_entries(lb: Leaderboard) -> Plot:
    """Per-entry O-Eval (%) as horizontal bars, best on top, with ±1 std error bars."""
    title = "O-Eval per entry (mean ± std over seeds)"
    ents = lb.entries
    fig = _fig(7.5, _rows_height(len(ents)))
    ax = fig.add_subplot()
    ys = list(range(len(ents)))
    means = [_pct(e.o_eval.mean) for e in ents]
    stds = [_std_pct(e.o_eval) for e in ents]
    _bars(ax, ys, means, stds, height=0.6, colour=ENTRY_COLOUR, label="O-Eval", fontsize=7)
    ax.set_yticks(ys, [plain(e.shown) for e in ents])
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("O-Eval (%)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.25)
    notes = []
    if any(s is None for s in stds):
        notes.append("No error bar: a single seed (std n/a).")
        ax.text(0.99, 0.01, notes[-1], transform=ax.transAxes, ha="right", va="bottom", fontsize=7)
    return Plot("oeval_by_entry", title, fig, notes)


def plot_suites(lb: Leaderboard) -> Plot:
    """Grouped horizontal bars: per entry, O-Eval (%) on each suite's headline tasks."""
    title = "O-Eval by suite (headline tasks)"
    ents = lb.entries
    suites = list(lb.suites)
    fig = _fig(7.5, _rows_height(len(ents) * max(1, len(suites)) / 1.4))
    ax = fig.add_subplot()
    h = 0.8 / max(1, len(suites))
    for k, s in enumerate(suites):
        ys = [i - 0.4 + h * (k + 0.5) for i in range(len(ents))]
        means = [_pct(e.suites[s].mean) if s in e.suites else None for e in ents]
        n = sum(1 for t in lb.headline_tasks if lb.task_suites[t] == s)
        _bars(
            ax,
            ys,
            means,
            [_std_pct(e.suites.get(s)) for e in ents],
            height=h * 0.95,
            colour=SUITE_COLOURS.get(s, f"C{k}"),
            label=f"{s} ({n} task{'s' if n != 1 else ''})",
            fontsize=6.5,
        )
    ax.set_yticks(list(range(len(ents))), [plain(e.shown) for e in ents])
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("O-Eval (%)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    return Plot("oeval_by_suite", title, fig, [])


def figures(lb: Leaderboard) -> list[Plot]:
    """The three panels; none for an empty leaderboard (there is nothing to draw)."""
    if lb.empty:
        return []
    with rc_context(rc()):
        return [plot_cost(lb), plot_entries(lb), plot_suites(lb)]


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes with fixed metadata (same input, same bytes)."""
    buf = io.BytesIO()
    with rc_context(rc()):
        fig.savefig(buf, format="png", dpi=DPI, metadata=PNG_METADATA)
    return buf.getvalue()


def write_plots(lb: Leaderboard, out_dir: Path) -> list[Path]:
    """Write the panels as `<out_dir>/<name>.png`; returns the paths ([] when empty)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in figures(lb):
        path = out_dir / f"{p.name}.png"
        path.write_bytes(png_bytes(p.figure))
        paths.append(path)
    return paths
