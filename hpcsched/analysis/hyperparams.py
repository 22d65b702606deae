"""The hyperparameter view of a run, as Optuna's ``plot_slice`` and ``plot_parallel_coordinate``
show it: each trial's best score against each hyperparameter (coloured by how far the trial
trained: a score at the first rung and one at R are not alike), and every trial as a line across
all of them (the best few in the colours ``scores.png`` gives them).

A parameter's axis is read from the values the trials had: text, booleans and numbers with at most
``FEW`` distinct values are categories; positive numbers spanning ``LOG_SPAN`` or more a log axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpcsched.analysis.canvas import FONT, SMALL, TITLE, new_figure, style
from hpcsched.analysis.loaders import Run
from hpcsched.analysis.plots import HIGHLIGHT_COLORS, OTHERS_COLOR, top_trials

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONFIG = "config."
FEW = 5  # numbers with at most this many distinct values are shown as categories
LOG_SPAN = 20.0  # positive numbers whose largest / smallest is at least this get a log axis


class Scale(str, Enum):
    LINEAR = "linear"
    LOG = "log"
    CATEGORY = "category"


@dataclass(frozen=True)
class Axis:
    """How one hyperparameter is laid out: its scale and, for categories, their order."""

    name: str
    scale: Scale
    categories: tuple[Any, ...] = ()

    def position(self, values: pd.Series) -> np.ndarray:
        """Values on the axis: category index, log10 of the value, or the value (NaN: absent)."""
        if self.scale == Scale.CATEGORY:
            index = {repr(c): i for i, c in enumerate(self.categories)}
            return np.array([index.get(repr(v), np.nan) if not _absent(v) else np.nan for v in values], float)
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(float)
        return np.log10(numbers) if self.scale == Scale.LOG else numbers


def _absent(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def axis_of(name: str, values: pd.Series) -> Axis:
    """The axis for a parameter with these values (see the module docstring)."""
    present = [v for v in values if not _absent(v)]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in present)
    distinct = list(dict.fromkeys(present))
    if not numeric or len(distinct) <= FEW:
        ordered = sorted(distinct, key=lambda v: (str(type(v)), v)) if numeric else \
            sorted(distinct, key=lambda v: str(v))
        return Axis(name, Scale.CATEGORY, tuple(ordered))
    low, high = min(present), max(present)
    if low > 0 and high / low >= LOG_SPAN:
        return Axis(name, Scale.LOG)
    return Axis(name, Scale.LINEAR)


def trial_params(run: Run) -> tuple[pd.DataFrame, list[Axis]]:
    """Trials that reported, with trial, status, best_score, steps and one column per hyperparameter
    (named without ``config.``); and the axes of the hyperparameters that vary between them."""
    trials = run.trials[run.trials["reports"] > 0]
    columns = [c for c in trials.columns if c.startswith(CONFIG)]
    frame = trials[["trial", "status", "best_score", "steps"] + columns].rename(
        columns={c: c[len(CONFIG):] for c in columns}).reset_index(drop=True)
    axes = []
    for c in columns:
        name = c[len(CONFIG):]
        values = frame[name]
        if values.map(repr).nunique() > 1:
            axes.append(axis_of(name, values))
    return frame, axes


def _no_params(fig, ax, why: str) -> "Figure":
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=FONT)
    ax.set_axis_off()
    return fig


def _set_axis(ax, axis: Axis, which: str = "x") -> None:
    setter = ax.set_xticks if which == "x" else ax.set_yticks
    if axis.scale == Scale.CATEGORY:
        setter(range(len(axis.categories)), [_short(c) for c in axis.categories], fontsize=SMALL)
    elif axis.scale == Scale.LOG:
        ticks = ax.get_xticks() if which == "x" else ax.get_yticks()
        setter(ticks, [f"{10 ** t:.2g}" for t in ticks], fontsize=SMALL)


def _short(value: Any) -> str:
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return text if len(text) <= 12 else text[:11] + "…"


def plot_params(run: Run, title: str | None = None) -> "Figure":
    """Each trial's best score against each hyperparameter (one panel each), coloured by the steps it
    trained; the best trial ringed and named."""
    frame, axes = trial_params(run)
    info = run.info
    if frame.empty or not axes:
        fig, ax = new_figure(7, 3)
        return _no_params(fig, ax, "no trial has reported a score yet" if frame.empty else
                          "the trials' configurations do not differ: no hyperparameter to show")
    cols = min(len(axes), 4)
    rows = int(math.ceil(len(axes) / cols))
    fig, panels = new_figure(3.1 * cols + 1.2, 2.7 * rows + 0.7, rows, cols, sharey=True)
    panels = np.atleast_1d(panels).ravel()
    steps = frame["steps"].to_numpy(float)
    top = max(float(np.nanmax(steps)), 1.0)
    jitter = (np.random.default_rng(0).random(len(frame)) - 0.5) * 0.3
    best = info.best_trial
    is_best = (frame["trial"] == best).to_numpy()
    points = None
    for ax, axis in zip(panels, axes):
        x = axis.position(frame[axis.name]) + (jitter if axis.scale == Scale.CATEGORY else 0.0)
        points = ax.scatter(x, frame["best_score"], c=steps, cmap="viridis", vmin=0, vmax=top, s=28,
                            edgecolors="none", zorder=2, gid=f"slice-{axis.name}")
        if is_best.any():
            ax.scatter(x[is_best], frame["best_score"][is_best], s=120, facecolors="none", edgecolors="black",
                       linewidths=1.4, zorder=3)
            ax.annotate(str(best), (x[is_best][0], frame["best_score"][is_best].iloc[0]), xytext=(6, -12),
                        textcoords="offset points", fontsize=SMALL)
        style(ax)
        _set_axis(ax, axis)
        ax.set_xlabel(axis.name + (" (log scale)" if axis.scale == Scale.LOG else ""), fontsize=FONT)
    for ax in panels[len(axes):]:
        ax.set_visible(False)
    for ax in panels[::cols]:
        ax.set_ylabel(f"best {info.metric}", fontsize=FONT)
    bar = fig.colorbar(points, ax=list(panels[:len(axes)]), shrink=0.9)
    bar.set_label("steps the trial trained", fontsize=FONT)
    bar.ax.tick_params(labelsize=SMALL)
    fig.suptitle(title or f"{info.name}: best {info.metric} per trial against each hyperparameter "
                          f"({len(frame)} trials; ringed: the best)", fontsize=TITLE)
    return fig


def plot_parallel(run: Run, title: str | None = None, highlight: int = 5) -> "Figure":
    """Every trial as a line across the hyperparameters and its best score (parallel coordinates, each
    axis from its lowest to its highest value): the ``highlight`` best trials in the colours of
    scores.png, the others grey."""
    from matplotlib.lines import Line2D

    frame, axes = trial_params(run)
    info = run.info
    fig, ax = new_figure(max(6.0, 1.6 * (len(axes) + 1) + 2.5), 4.2)
    if frame.empty or not axes:
        return _no_params(fig, ax, "no trial has reported a score yet" if frame.empty else
                          "the trials' configurations do not differ: no hyperparameter to show")
    score_axis = Axis(f"best {info.metric}", Scale.LINEAR)
    columns = [(a, a.position(frame[a.name])) for a in axes]
    columns.append((score_axis, frame["best_score"].to_numpy(float)))
    normalised, bounds = [], []
    for axis, values in columns:
        low, high = np.nanmin(values), np.nanmax(values)
        if axis.scale == Scale.CATEGORY:
            low, high = 0.0, float(max(len(axis.categories) - 1, 1))
        span = high - low if high > low else 1.0
        normalised.append((values - low) / span)
        bounds.append((low, high))
    ys = np.column_stack(normalised)
    xs = np.arange(len(columns))
    shown = top_trials(run, highlight)
    colour = {t: HIGHLIGHT_COLORS[i % len(HIGHLIGHT_COLORS)] for i, t in enumerate(shown)}
    trial_ids = frame["trial"].tolist()
    for i, trial in enumerate(trial_ids):
        if trial not in colour:
            ax.plot(xs, ys[i], color=OTHERS_COLOR, linewidth=0.9, zorder=1, gid="parallel-others")
    for trial in reversed(shown):
        i = trial_ids.index(trial)
        ax.plot(xs, ys[i], color=colour[trial], linewidth=2.2 if trial == shown[0] else 1.5, zorder=3,
                marker="o", markersize=3, gid=f"parallel-{trial}")
    for x, ((axis, _), (low, high)) in enumerate(zip(columns, bounds)):
        ax.axvline(x, color="black", linewidth=0.8, zorder=2)
        if axis.scale == Scale.CATEGORY:
            for k, category in enumerate(axis.categories):
                ax.text(x + 0.03, (k - low) / (high - low if high > low else 1.0), _short(category),
                        fontsize=SMALL, va="center", zorder=4)
        else:
            for end, y, va in ((low, 0.0, "bottom"), (high, 1.0, "top")):
                value = 10 ** end if axis.scale == Scale.LOG else end
                ax.text(x + 0.03, y, f"{value:.3g}", fontsize=SMALL, va=va, zorder=4)
    ax.set_xticks(xs, [a.name + (" (log)" if a.scale == Scale.LOG else "") for a, _ in columns], fontsize=FONT)
    ax.set_yticks([])
    ax.set_xlim(-0.1, len(columns) - 0.6)
    ax.set_ylim(-0.05, 1.05)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    best_of = frame.set_index("trial")["best_score"]
    handles = [Line2D([], [], color=colour[t], linewidth=2, label=f"{t}: {best_of[t]:.4g}") for t in shown]
    if len(trial_ids) > len(shown):
        handles.append(Line2D([], [], color=OTHERS_COLOR, label=f"{len(trial_ids) - len(shown)} other trials"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1), fontsize=SMALL, frameon=False,
              title=f"best {info.metric}", title_fontsize=SMALL)
    ax.set_title(title or f"{info.name}: each trial's hyperparameters and best {info.metric} "
                          "(each axis from its lowest to its highest value)", fontsize=TITLE)
    return fig
