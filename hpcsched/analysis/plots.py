"""Figures of one run: what each trial was doing when (Gantt), its scores against step and time,
what the atoms' time went to (training, start-up, idle) and atoms per trial stacked. Each function
returns a matplotlib Figure on the Agg canvas (``canvas.py``); matplotlib (the ``plot`` extra) is
imported when a function is called. The hyperparameter figures are in ``hyperparams.py``, the
simulator's in ``sim_plots.py``.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hpcsched.analysis.activity import Activity, activity_curve, atom_time, launch_segments, segments
from hpcsched.analysis.canvas import FONT, SMALL, TITLE, integer_ticks, new_figure, save, style
from hpcsched.analysis.loaders import Run
from hpcsched.analysis.usage import usage_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ACTIVITY_COLORS", "END_MARKERS", "gantt_rows", "launch_segments", "new_figure", "plot_allocation",
           "plot_gantt", "plot_scores", "plot_usage", "save", "top_trials"]

ACTIVITY_COLORS = {str(Activity.TRAINING): "#3b75af", str(Activity.STARTUP): "#f0a030",
                   str(Activity.PAUSED): "#8c8c8c"}
HIGHLIGHT_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b")  # the best first
OTHERS_COLOR = "#c4c4c4"
END_MARKERS = {  # end_reason -> (marker, colour, label)
    "pause": ("|", "black", "launch ended: pause"),
    "resize": ("^", "#d62728", "launch ended: resize"),
    "stop": ("x", "#444444", "launch ended: stop"),
    "errored": ("X", "#d62728", "launch ended: error"),
    "recover": ("d", "#8c564b", "launch ended: recover"),
}


def _time_lines(ax, run: Run) -> list:
    """Deadline, exploration stop, the last record of a run in progress and controller restarts as
    vertical lines; returns their legend handles."""
    info = run.info
    handles = [ax.axvline(info.deadline - info.start, color="#d62728", linestyle="--", linewidth=1.2,
                          label="deadline")]
    if info.entrance_closed_at is not None:
        handles.append(ax.axvline(info.entrance_closed_at - info.start, color="#9467bd", linestyle=":",
                                  linewidth=1.5, label="exploration stopped"))
    if info.in_progress:
        handles.append(ax.axvline(info.last_t - info.start, color="#555555", linestyle="-", linewidth=1,
                                  label="last record (in progress)"))
    for i, t in enumerate(info.resumed_at):
        line = ax.axvline(t - info.start, color="#8c564b", linestyle="-.", linewidth=1,
                          label="controller resumed" if i == 0 else None)
        if i == 0:
            handles.append(line)
    return handles


def _x_limit(run: Run) -> float:
    info = run.info
    return max(info.deadline - info.start, info.last_t - info.start, 1e-9) * 1.02


def _status_of(run: Run) -> pd.Series:
    trials = run.trials
    return pd.Series(trials["status"].to_numpy(), index=trials["trial"].to_numpy())


def gantt_rows(run: Run, max_trials: int = 300) -> pd.DataFrame:
    """The trials a Gantt shows, top to bottom: all that held atoms, or the ``max_trials`` with the
    most atom-time (the best trial always included), in order of first start."""
    alloc = run.allocations
    if alloc.empty:
        return pd.DataFrame({"trial": pd.Series(dtype="str"), "row": pd.Series(dtype="int64")})
    use = (alloc["atoms"] * alloc["duration"]).groupby(alloc["trial"]).sum()
    first = alloc.groupby("trial")["start"].min()
    chosen = use.index
    if len(use) > max_trials:
        chosen = use.sort_values(ascending=False, kind="stable").index[:max_trials]
        best = run.info.best_trial
        if best is not None and best in use.index and best not in chosen:
            chosen = chosen[:-1].append(pd.Index([best]))
    order = first.loc[chosen].sort_values(kind="stable")
    return pd.DataFrame({"trial": order.index.to_numpy(), "row": np.arange(len(order))})


def plot_gantt(run: Run, max_trials: int = 300, title: str | None = None) -> "Figure":
    """What each trial was doing when: one row per trial (its final status beside its name), a bar per
    launch coloured by activity (start-up, then training), thicker with more atoms and labelled with
    its atom count where it is wide enough, a dashed line while paused; markers where a launch ended
    in a pause, resize, stop or error; the deadline and the end of exploration as vertical lines."""
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = gantt_rows(run, max_trials)
    n_rows = len(rows)
    fig, ax = new_figure(11, float(np.clip(1.8 + 0.22 * n_rows, 3.5, 19)))
    info = run.info
    status = _status_of(run)
    span = _x_limit(run)
    alloc = run.allocations.merge(rows, on="trial", how="inner")
    if alloc.empty:
        ax.text(0.5, 0.5, "no trial has held atoms yet", ha="center", va="center", transform=ax.transAxes)
    else:
        top = max(int(run.trials["max_atoms"].max()), 1)
        seg = segments(run).merge(rows, on="trial", how="inner")
        for activity in (str(Activity.STARTUP), str(Activity.TRAINING)):
            part = seg[seg["activity"] == activity]
            height = 0.3 + 0.6 * part["atoms"].to_numpy(float) / top
            y = part["row"].to_numpy(float)
            left, right = part["start_elapsed"].to_numpy(float), part["end_elapsed"].to_numpy(float)
            boxes = np.stack([np.c_[left, y - height / 2], np.c_[right, y - height / 2],
                              np.c_[right, y + height / 2], np.c_[left, y + height / 2]], axis=1)
            ax.add_collection(PolyCollection(boxes, facecolors=ACTIVITY_COLORS[activity], edgecolors="none",
                                             gid=f"gantt-{activity}"))
        paused = seg[seg["activity"] == str(Activity.PAUSED)]
        if len(paused):
            ax.hlines(paused["row"], paused["start_elapsed"], paused["end_elapsed"],
                      colors=ACTIVITY_COLORS[str(Activity.PAUSED)], linestyles=(0, (2, 2)), linewidth=1,
                      gid=f"gantt-{Activity.PAUSED}")
        if n_rows <= 80:  # atom counts on every launch wide enough to hold one
            training = seg[(seg["activity"] == str(Activity.TRAINING))
                           & ((seg["end_elapsed"] - seg["start_elapsed"]) > 0.012 * span)]
            for r in training.itertuples(index=False):
                ax.text((r.start_elapsed + r.end_elapsed) / 2, r.row, str(int(r.atoms)), ha="center",
                        va="center", fontsize=SMALL, color="white", fontweight="bold", gid="atom-count")
        handles: list = [Patch(color=ACTIVITY_COLORS[str(Activity.TRAINING)],
                               label="training (number: atoms held)"),
                         Patch(color=ACTIVITY_COLORS[str(Activity.STARTUP)], label="start-up (process, imports, "
                                                                                   "restore)"),
                         Line2D([], [], color=ACTIVITY_COLORS[str(Activity.PAUSED)], linestyle=(0, (2, 2)),
                                label="paused (no atoms)")]
        for reason, (marker, color, label) in END_MARKERS.items():
            ends = alloc[alloc["end_reason"] == reason]
            if len(ends):
                small = n_rows > 60
                ax.scatter(ends["end_elapsed"], ends["row"], marker=marker, color=color, zorder=3,
                           s=max(3.0, 28 * 60 / n_rows) if small else 30, linewidths=0.6 if small else 1.4)
                handles.append(Line2D([], [], marker=marker, color=color, linestyle="none", label=label))
        best = run.best_so_far
        if len(best) and best["trial"].iloc[-1] in set(rows["trial"]):
            last = best.iloc[-1]
            row = int(rows.set_index("trial").loc[last["trial"], "row"])
            ax.scatter([last["elapsed"]], [row], marker="*", s=160, color="gold", edgecolors="black", zorder=4)
            handles.append(Line2D([], [], marker="*", color="gold", markeredgecolor="black", markersize=11,
                                  linestyle="none", label=f"best report ({last['trial']}, step {int(last['step'])})"))
        handles += _time_lines(ax, run)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=SMALL, frameon=False)
        ax.set_ylim(n_rows - 0.4, -0.6)
        every = max(1, int(np.ceil(n_rows / 60)))  # at most 60 labels: every k-th trial beyond that
        labels = [f"{t} · {status.get(t, '?')}" for t in rows["trial"][::every]]
        ax.set_yticks(rows["row"][::every], labels, fontsize=SMALL if every == 1 else 6)
    ax.set_xlim(0, span)
    ax.set_xlabel("time since start (s)", fontsize=FONT)
    ax.set_ylabel("trial · final status (by first start)" if n_rows <= 60 else
                  f"trial · final status (every {int(np.ceil(n_rows / 60))}th labelled)", fontsize=FONT)
    ax.tick_params(axis="x", labelsize=SMALL)
    shown_note = f", {n_rows} of {len(run.trials)} trials with the most atom-time" \
        if n_rows < (run.allocations["trial"].nunique() if len(run.allocations) else 0) else ""
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): what each trial was doing; "
                          f"bar thickness = atoms{shown_note}", fontsize=TITLE)
    return fig


def top_trials(run: Run, count: int) -> list[str]:
    """The ``count`` trials with the best best-score (by the run's mode), best first; the run's best
    trial (first to reach the best score) always first."""
    trials = run.trials[run.trials["reports"] > 0]
    ranked = trials.sort_values("best_score", ascending=run.info.mode == "min", kind="stable")["trial"].tolist()
    best = run.info.best_trial
    if best in ranked:
        ranked.remove(best)
        ranked.insert(0, best)
    return ranked[:count]


def plot_scores(run: Run, title: str | None = None, highlight: int = 5) -> "Figure":
    """Each trial's scores against its step (left, as Optuna's intermediate values) and against time
    (right, one line per launch: no line across a pause). The ``highlight`` best trials in colour
    (the best in black, its best report starred and labelled inside the axes), the others grey; on
    the right the best score so far."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    fig, axes = new_figure(13, 5.2, cols=2)
    by_step, by_time = axes[0]
    info = run.info
    scores = run.scores
    if scores.empty:
        for ax in (by_step, by_time):
            ax.text(0.5, 0.5, "no scores reported yet", ha="center", va="center", transform=ax.transAxes)
        _time_lines(by_time, run)
    else:
        status = _status_of(run)
        ordered = launch_segments(run)
        shown = top_trials(run, highlight)
        colour = {t: HIGHLIGHT_COLORS[i % len(HIGHLIGHT_COLORS)] for i, t in enumerate(shown)}
        best = run.best_so_far
        best_trial = best["trial"].iloc[-1]
        for ax, x, group in ((by_step, "step", "trial"), (by_time, "elapsed", "segment")):
            grey, singles = [], []
            for (_, trial), part in ordered.groupby([group, "trial"], sort=False):
                if trial not in colour:
                    points = part[[x, "score"]].to_numpy(float)
                    (grey if len(points) > 1 else singles).append(points)
            if grey:
                ax.add_collection(LineCollection(grey, colors=OTHERS_COLOR, linewidths=0.8, zorder=1,
                                                 gid="scores-others"))
            if singles:
                ax.scatter([p[0, 0] for p in singles], [p[0, 1] for p in singles], s=8, color=OTHERS_COLOR, zorder=1)
            for trial in reversed(shown):  # the best drawn last, on top
                mine = ordered[ordered["trial"] == trial]
                for _, part in mine.groupby(group, sort=False):
                    ax.plot(part[x], part["score"], color=colour[trial], linewidth=2.0 if trial == best_trial else 1.3,
                            marker="." if len(part) == 1 else None, zorder=3, gid=f"scores-{trial}")
            last = best.iloc[-1]
            at = ordered[(ordered["trial"] == best_trial) & (ordered["step"] == last["step"])].iloc[-1]
            ax.scatter([at[x]], [at["score"]], marker="*", s=180, color="gold", edgecolors="black", zorder=4)
            points = ordered["score"].to_numpy(float)
            low, high = np.nanpercentile(points, [1, 100]) if info.mode == "max" \
                else np.nanpercentile(points, [0, 99])
            pad = 0.06 * max(high - low, 1e-9)
            ax.set_ylim(low - pad, high + pad)
            ax.autoscale_view(scalex=True, scaley=False)
        last = best.iloc[-1]
        at = ordered[(ordered["trial"] == best_trial) & (ordered["step"] == last["step"])].iloc[-1]
        corner = (0.98, 0.04) if info.mode == "max" else (0.98, 0.96)  # where curves of that mode rarely are
        by_step.annotate(f"best report: {best_trial}, step {int(last['step'])}: {info.metric} {last['score']:.4g}",
                         xy=(at["step"], at["score"]), xytext=corner, textcoords="axes fraction", ha="right",
                         va="bottom" if info.mode == "max" else "top", fontsize=SMALL, zorder=5,
                         bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#888888"},
                         arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.8}, gid="best-label")
        xs = np.r_[best["elapsed"].to_numpy(), info.last_t - info.start]
        ys = np.r_[best["score"].to_numpy(), best["score"].to_numpy()[-1:]]
        by_time.step(xs, ys, where="post", color="#ff7f0e", linewidth=2, label="best so far", zorder=2)
        best_of = run.trials.set_index("trial")["best_score"]
        handles = [Line2D([], [], color=colour[t], linewidth=2.0 if t == best_trial else 1.3,
                          label=f"{t}: {best_of[t]:.4g} ({status.get(t, '?')})") for t in shown]
        others = ordered["trial"].nunique() - len(shown)
        if others > 0:
            handles.append(Line2D([], [], color=OTHERS_COLOR, label=f"{others} other trials"))
        handles.append(Line2D([], [], marker="*", color="gold", markeredgecolor="black", markersize=11,
                              linestyle="none", label="best report"))
        handles.append(Line2D([], [], color="#ff7f0e", linewidth=2, label="best so far"))
        handles += _time_lines(by_time, run)
        by_time.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=SMALL, frameon=False,
                       title=f"best {len(shown)} trials: best {info.metric} (final status)", title_fontsize=SMALL)
    by_time.set_xlim(0, _x_limit(run))
    by_step.set_xlim(0, max(float(scores["step"].max()) if len(scores) else 1.0, 1.0) * 1.02)
    integer_ticks(by_step.xaxis)
    by_step.set_xlabel("step (the trainable's unit, e.g. epoch)", fontsize=FONT)
    by_time.set_xlabel("time since start (s)", fontsize=FONT)
    for ax in (by_step, by_time):
        ax.set_ylabel(f"{info.metric} ({'higher' if info.mode == 'max' else 'lower'} is better)", fontsize=FONT)
        style(ax)
    by_step.set_title("against step", fontsize=FONT)
    by_time.set_title("against time (a line per launch)", fontsize=FONT)
    fig.suptitle(title or f"{info.name} ({info.variant}, seed {info.seed}): scores", fontsize=TITLE)
    return fig


def plot_usage(run: Run, title: str | None = None) -> "Figure":
    """What the atoms' time went to: atoms training and starting up over time, stacked (the rest up to
    the run's atoms idle), the shares of each, and below what the split suggests doing."""
    fig, axes = new_figure(11, 4.8, rows=2, gridspec_kw={"height_ratios": [6, 1]})
    ax, notes = axes[0][0], axes[1][0]
    info = run.info
    split = atom_time(run)
    if run.allocations.empty:
        ax.text(0.5, 0.5, "no atoms used yet", ha="center", va="center", transform=ax.transAxes)
    else:
        curve = activity_curve(run)
        x = curve["elapsed"].to_numpy()
        base = np.zeros(len(curve))
        for activity in (str(Activity.TRAINING), str(Activity.STARTUP)):
            top = base + curve[activity].to_numpy()
            share = split.share(split.training if activity == str(Activity.TRAINING) else split.startup)
            ax.fill_between(x, base, top, step="post", color=ACTIVITY_COLORS[activity], linewidth=0,
                            label=f"{activity}: {share:.0%} of the atom-time", gid=f"usage-{activity}")
            base = top
        ax.plot([], [], color="white", label=f"idle: {split.share(split.idle):.0%}")
        ax.axhline(info.atoms, color="black", linestyle=":", linewidth=1, label=f"run's atoms ({info.atoms})")
        _time_lines(ax, run)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=SMALL, frameon=False,
                  title="atoms that were", title_fontsize=SMALL)
    hints = split.hints()
    text = "\n".join(textwrap.fill("• " + h, 150) for h in hints) if hints else \
        "• nothing stands out: atoms spent most of their time training"
    notes.axis("off")
    notes.text(0.0, 1.0, text, va="top", ha="left", fontsize=SMALL, transform=notes.transAxes, gid="usage-hints")
    ax.set_xlim(0, _x_limit(run))
    ax.set_ylim(0, max(info.atoms, 1) * 1.12)
    integer_ticks(ax.yaxis)
    ax.set_xlabel("time since start (s)", fontsize=FONT)
    ax.set_ylabel("atoms", fontsize=FONT)
    style(ax)
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): what the atoms' time went to "
                          f"({info.atoms} atoms x {info.last_t - info.start:.4g} s)", fontsize=TITLE)
    return fig


def plot_allocation(run: Run, top: int = 8, title: str | None = None) -> "Figure":
    """Atoms per trial over time, stacked (as the HyperSched paper's allocation figures): the
    ``top`` trials with the most atom-time in colour, the best trial first and hatched, the
    rest together in grey."""
    fig, ax = new_figure(11, 4.5)
    info = run.info
    alloc = run.allocations
    if alloc.empty:
        ax.text(0.5, 0.5, "no atoms used yet", ha="center", va="center", transform=ax.transAxes)
    else:
        ends = alloc["end"].fillna(info.last_t).to_numpy(float)
        atom_time = pd.Series(alloc["atoms"].to_numpy() * (ends - alloc["start"].to_numpy(float)),
                              index=alloc["trial"].to_numpy()).groupby(level=0).sum()
        best = run.best_so_far
        best_trial = best["trial"].iloc[-1] if len(best) else None
        leaders = [t for t in atom_time.sort_values(ascending=False, kind="stable").index if t != best_trial]
        named = ([best_trial] if best_trial is not None else []) + leaders[:max(0, top - (best_trial is not None))]
        others = "other trials"
        alloc = alloc.assign(group=np.where(alloc["trial"].isin(named), alloc["trial"], others))
        curve = usage_curve(alloc, info.start, until=info.last_t, by="group")
        x = curve["elapsed"].to_numpy()
        base = np.zeros(len(curve))
        palette = ["#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#8c564b", "#e377c2", "#7f7f7f",
                   "#aec7e8", "#98df8a"]
        for i, group in enumerate([g for g in named if g in curve.columns] + [others]):
            if group not in curve.columns:
                continue
            upper = base + curve[group].to_numpy()
            is_best = group == best_trial
            label = f"{group} (best)" if is_best else (f"{group}" if group != others else
                                                        f"{others} ({atom_time.size - len(named)})")
            ax.fill_between(x, base, upper, step="post", linewidth=0, label=label,
                            color="#ff7f0e" if is_best else ("#dddddd" if group == others
                                                             else palette[i % len(palette)]),
                            hatch="//" if is_best else None, edgecolor="#a05000" if is_best else None, alpha=0.9)
            base = upper
        ax.axhline(info.atoms, color="black", linestyle=":", linewidth=1, label=f"run's atoms ({info.atoms})")
        _time_lines(ax, run)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
                  title="trials with the most atom-time", title_fontsize=8)
    ax.set_xlim(0, _x_limit(run))
    ax.set_ylim(0, max(info.atoms, 1) * 1.12)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("atoms (GPU or CPU slots)")
    integer_ticks(ax.yaxis)
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): allocation over time", fontsize=TITLE)
    return fig


