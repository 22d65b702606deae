"""Figures of a simulation (``hpcsched simulate``): variants compared across the matrix, sized for a
paper column (``COLUMN`` inches wide, text at least ``canvas.SMALL`` points), and the cell whose run
a Gantt shows.

Every panel shares one y range; a numeric matrix axis is drawn to scale (a log axis where its values
span ``LOG_SPAN`` or more, e.g. atoms 4 to 32 or deadlines 15 to 120 s) with its unit; variants
differ in colour, marker and line style, and are set slightly apart, so that two variants with the
same results both show.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpcsched.analysis.canvas import SMALL, new_figure
from hpcsched.analysis.simulation import Simulation, means_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMN = 3.5  # inches: one column of a two-column paper
PANEL_HEIGHT = 1.9
DPI = 300  # a column-wide figure printed sharp
LOG_SPAN = 4.0
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
LINESTYLES = ("-", "--", ":", "-.")
UNITS = {"deadline": "s"}
REGRET = ("regret = |oracle − best score|; oracle: the best score one trial reaches with all atoms from "
          "time 0 (one start-up, the true scaling)")
CAPTIONS = {"best_score": "best score (mean ± sd over seeds); dashed: the oracle",
            "regret": "regret (mean ± sd over seeds); " + REGRET}


def axis_label(key: str) -> str:
    """A matrix key as an axis label with its unit: ``deadline`` -> ``deadline (s)``."""
    short = key.split(".")[-1]
    unit = UNITS.get(short)
    return f"{short} ({unit})" if unit else short


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)


def plot_variants(summary: pd.DataFrame, matrix_keys: tuple[str, ...] = (), value: str = "best_score",
                  title: str | None = None) -> "Figure":
    """Mean ± sd of ``value`` (best_score or regret) per variant over seeds, for every matrix cell:
    the last matrix key on the x axis (to scale when numeric), one panel per combination of the
    others (two panels a row, one y range), a line per variant; bars without a matrix."""
    keys = tuple(k for k in matrix_keys if k in summary.columns)
    means = means_table(summary, keys)
    variants = list(dict.fromkeys(summary["variant"]))
    look = {v: {"color": f"C{i % 10}", "marker": MARKERS[i % len(MARKERS)],
                "linestyle": LINESTYLES[i % len(LINESTYLES)],
                "markerfacecolor": f"C{i % 10}" if i % 2 == 0 else "white"} for i, v in enumerate(variants)}
    label = value.replace("_", " ")
    caption = CAPTIONS.get(value, f"{label} (mean ± sd over seeds)")
    if not keys:
        fig, ax = new_figure(COLUMN, 2.8)
        m = means.set_index("variant").reindex(variants)
        ax.bar(range(len(variants)), m[f"{value}_mean"], yerr=m[f"{value}_sd"].fillna(0), capsize=3,
               color=[look[v]["color"] for v in variants])
        ax.set_xticks(range(len(variants)), variants, rotation=20, ha="right", fontsize=SMALL)
        if value == "best_score" and "oracle_score" in m:
            ax.axhline(float(m["oracle_score"].mean()), color="black", linestyle="--", linewidth=1)
        _tight_ylim(ax, m[f"{value}_mean"], m[f"{value}_sd"])
        ax.set_ylabel(label, fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(axis="y", alpha=0.3)
        _caption(fig, title or caption)
        return fig
    x_key, facet_keys = keys[-1], keys[:-1]
    facets = means[list(facet_keys)].drop_duplicates() if facet_keys else pd.DataFrame(index=[0])
    n = len(facets)
    cols = min(n, 2)
    rows = int(math.ceil(n / cols))
    fig, axes = new_figure(COLUMN, PANEL_HEIGHT * rows + 1.1, rows, cols, sharey=True, sharex=True)
    axes = np.atleast_1d(axes).ravel()
    x_values = list(dict.fromkeys(means[x_key]))
    numeric = _numeric(x_values)
    log = numeric and min(x_values) > 0 and max(x_values) / min(x_values) >= LOG_SPAN
    position = {v: (float(v) if numeric else float(i)) for i, v in enumerate(x_values)}
    for ax, (_, facet) in zip(axes, facets.iterrows()):
        sel = means
        for k in facet_keys:
            sel = sel[sel[k] == facet[k]]
        for i, v in enumerate(variants):
            line = sel[sel["variant"] == v]
            if line.empty:
                continue
            shift = (i - (len(variants) - 1) / 2) * 0.04  # set apart: equal results stay visible
            xs = np.array([position[x] for x in line[x_key]])
            xs = xs * 2 ** shift if log else xs + shift * (np.ptp(list(position.values())) or 1.0) / 2
            ax.errorbar(xs, line[f"{value}_mean"], yerr=line[f"{value}_sd"].fillna(0), color=look[v]["color"],
                        marker=look[v]["marker"], markerfacecolor=look[v]["markerfacecolor"], markersize=4,
                        linestyle=look[v]["linestyle"], capsize=2, linewidth=1.1, label=v)
        if value == "best_score" and "oracle_score" in sel:
            oracle = sel.groupby(x_key, sort=False)["oracle_score"].mean()
            ax.plot([position[x] for x in oracle.index], oracle.to_numpy(), color="black", linestyle="--",
                    linewidth=0.9, label="oracle")
        if log:
            ax.set_xscale("log", base=2)
        ax.set_xticks([position[x] for x in x_values], [_tick(x) for x in x_values], fontsize=SMALL)
        ax.minorticks_off()
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
        if facet_keys:
            ax.set_title(", ".join(f"{axis_label(k).split(' (')[0]} = {_tick(facet[k])}" for k in facet_keys),
                         fontsize=SMALL)
    for ax in axes[n:]:
        ax.set_visible(False)
    for ax in axes[::cols]:
        ax.set_ylabel(label, fontsize=SMALL)
    for ax in axes[max(0, n - cols):n]:
        ax.set_xlabel(axis_label(x_key) + (" (log scale)" if log else ""), fontsize=SMALL)
        ax.xaxis.set_tick_params(labelbottom=True)
    handles, labels = axes[0].get_legend_handles_labels()
    widest = max((len(label) for label in labels), default=0)  # a column of the legend must fit the figure
    fig.legend(handles, labels, loc="outside lower center", ncols=max(1, min(len(labels), 3, 40 // (widest + 6))),
               fontsize=SMALL, frameon=False)
    _caption(fig, title or caption)
    return fig


def _tick(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def _caption(fig: "Figure", text: str) -> None:
    """The figure's caption above it, wrapped to the column."""
    import textwrap

    fig.suptitle(textwrap.fill(text, 62), fontsize=SMALL)


def _tight_ylim(ax, means: pd.Series, sds: pd.Series) -> None:
    low = float((means - sds.fillna(0)).min())
    high = float((means + sds.fillna(0)).max())
    if np.isfinite(low) and np.isfinite(high) and high > low:
        pad = 0.15 * (high - low)
        ax.set_ylim(max(0.0, low - pad) if low >= 0 else low - pad, high + pad)


def informative_cell(sim: Simulation) -> str | None:
    """The cell a report's Gantt shows by default: the longest deadline, then the most atoms (the
    run with the most to see), else the first cell."""
    summary = sim.summary
    if summary.empty:
        return sim.cells[0] if sim.cells else None
    on_disk = set(sim.runs["cell"])
    rows = summary.drop_duplicates("cell")
    rows = rows[rows["cell"].isin(on_disk)] if on_disk else rows
    if rows.empty:
        return sim.cells[0] if sim.cells else None
    order = [k for short in ("deadline", "atoms") for k in sim.matrix_keys if k.split(".")[-1] == short]
    numeric = [k for k in order if pd.api.types.is_numeric_dtype(rows[k])]
    if numeric:
        rows = rows.sort_values(numeric, ascending=False, kind="stable")
    return str(rows["cell"].iloc[0])
