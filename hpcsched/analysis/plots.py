"""Figures of a run (allocation Gantt, scores over time, atoms in use) and of a simulation
(variants compared across the matrix). Each function returns a matplotlib Figure drawn on the
Agg canvas (headless; pyplot is never used), so it works without a display and leaves any
interactive backend alone. matplotlib (the ``plot`` extra) is imported when a function is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpcsched.analysis.loaders import Run
from hpcsched.analysis.simulation import means_table
from hpcsched.analysis.usage import usage_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STATUS_COLORS = {
    "completed": "#2ca02c", "terminated": "#7f7f7f", "paused": "#1f77b4", "errored": "#d62728",
    "running": "#9467bd", "launching": "#c5b0d5", "stopping": "#8c564b", "created": "#dddddd",
}
END_MARKERS = {  # end_reason -> (marker, colour, label)
    "pause": ("|", "black", "launch ended: pause"),
    "resize": ("^", "#ff7f0e", "launch ended: resize"),
    "stop": ("x", "#444444", "launch ended: stop"),
    "errored": ("X", "#d62728", "launch ended: error"),
    "recover": ("d", "#8c564b", "launch ended: recover"),
}


def new_figure(width: float, height: float, rows: int = 1, cols: int = 1, **subplot_kw: Any):
    """(figure, axes) on an Agg canvas; axes is one Axes or an array of them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=(rows == 1 and cols == 1), **subplot_kw)
    return fig, axes


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
    """Allocation over time: one row per trial, a bar per launch (thicker with more atoms, the
    startup part pale), coloured by the trial's final status; markers where a launch ended in a
    pause, resize, stop or error; the deadline and the end of exploration as vertical lines."""
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = gantt_rows(run, max_trials)
    n_rows = len(rows)
    fig, ax = new_figure(11, float(np.clip(1.8 + 0.2 * n_rows, 3.5, 14)))
    info = run.info
    status = _status_of(run)
    alloc = run.allocations.merge(rows, on="trial", how="inner")
    if alloc.empty:
        ax.text(0.5, 0.5, "no trial has held atoms yet", ha="center", va="center", transform=ax.transAxes)
    else:
        top = max(int(run.trials["max_atoms"].max()), 1)
        height = 0.3 + 0.6 * alloc["atoms"].to_numpy() / top
        y = alloc["row"].to_numpy(float)
        x0 = alloc["start_elapsed"].to_numpy()
        x1 = alloc["end_elapsed"].to_numpy()
        ready = np.clip(np.nan_to_num(alloc["running_at"].to_numpy() - info.start, nan=x1), x0, x1)
        colors = [STATUS_COLORS.get(s, "#17becf") for s in status.loc[alloc["trial"]].to_numpy()]
        for left, right, alpha in ((x0, ready, 0.35), (ready, x1, 0.95)):
            boxes = np.stack([np.c_[left, y - height / 2], np.c_[right, y - height / 2],
                              np.c_[right, y + height / 2], np.c_[left, y + height / 2]], axis=1)
            ax.add_collection(PolyCollection(boxes, facecolors=colors, edgecolors="none", alpha=alpha))
        span = _x_limit(run)
        if n_rows <= 80:
            wide = (alloc["atoms"] > 1) & ((x1 - x0) > 0.03 * span)
            for _, r in alloc[wide].iterrows():
                ax.text((r["start_elapsed"] + r["end_elapsed"]) / 2, r["row"], str(int(r["atoms"])),
                        ha="center", va="center", fontsize=7, color="white", fontweight="bold")
        handles: list = []
        for reason, (marker, color, label) in END_MARKERS.items():
            ends = alloc[alloc["end_reason"] == reason]
            if len(ends):
                small = n_rows > 60
                ax.scatter(ends["end_elapsed"], ends["row"], marker=marker, color=color, zorder=3,
                           s=max(3.0, 28 * 60 / n_rows) if small else 28, linewidths=0.6 if small else 1.2)
                handles.append(Line2D([], [], marker=marker, color=color, linestyle="none", label=label))
        shown = [s for s in STATUS_COLORS if s in set(status.loc[rows["trial"]])]
        handles = [Patch(color=STATUS_COLORS[s], label=s) for s in shown] + handles
        handles.append(Patch(color="#7f7f7f", alpha=0.35, label="startup (pale part of a bar)"))
        best = run.best_so_far
        if len(best) and best["trial"].iloc[-1] in set(rows["trial"]):
            top = best.iloc[-1]
            row = int(rows.set_index("trial").loc[top["trial"], "row"])
            ax.scatter([top["elapsed"]], [row], marker="*", s=160, color="gold", edgecolors="black", zorder=4)
            handles.append(Line2D([], [], marker="*", color="gold", markeredgecolor="black", markersize=11,
                                  linestyle="none", label=f"best report ({top['trial']}, step {int(top['step'])})"))
        handles += _time_lines(ax, run)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
                  title="final status", title_fontsize=8)
        ax.set_ylim(n_rows - 0.4, -0.6)
        every = max(1, int(np.ceil(n_rows / 60)))  # at most 60 labels: every k-th trial beyond that
        ax.set_yticks(rows["row"][::every], rows["trial"][::every], fontsize=7 if every == 1 else 6)
    ax.set_xlim(0, _x_limit(run))
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("trial (by first start)" if n_rows <= 60 else
                  f"trial (by first start; every {int(np.ceil(n_rows / 60))}th labelled)")
    shown_note = f", {n_rows} of {len(run.trials)} trials with the most atom-time" \
        if n_rows < (run.allocations["trial"].nunique() if len(run.allocations) else 0) else ""
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): atoms per trial over time; "
                          f"bar thickness = atoms{shown_note}", fontsize=10)
    return fig


def launch_segments(run: Run) -> pd.DataFrame:
    """The scores frame with ``segment``: one number per (trial, launch), so a line drawn per
    segment never joins a pause to the resume (reports are matched to the launch before them)."""
    scores = run.scores.sort_values("seq", kind="stable")
    launches = run.allocations[["trial", "launch_seq"]].sort_values("launch_seq", kind="stable")
    if scores.empty or launches.empty:
        return scores.assign(segment=pd.Series(np.zeros(len(scores), dtype=np.int64), index=scores.index))
    matched = pd.merge_asof(scores, launches, left_on="seq", right_on="launch_seq", by="trial",
                            direction="backward")
    key = matched["trial"].astype(str) + "/" + matched["launch_seq"].fillna(-1).astype(np.int64).astype(str)
    return matched.assign(segment=pd.factorize(key)[0]).sort_values(["trial", "seq"], kind="stable")


def plot_scores(run: Run, title: str | None = None, max_trials: int = 200) -> "Figure":
    """Each trial's scores against its step (left, as Optuna's intermediate values) and against
    time (right, one line per launch: no line across a pause), coloured by the trial's final
    status; beyond the ``max_trials`` with the best scores in light grey; the best trial drawn
    on top in black with its best report starred; on the right the best score so far."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    fig, axes = new_figure(14, 5.5, cols=2)
    by_step, by_time = axes[0]
    info = run.info
    scores = run.scores
    if scores.empty:
        for ax in (by_step, by_time):
            ax.text(0.5, 0.5, "no scores reported yet", ha="center", va="center", transform=ax.transAxes)
    else:
        status = _status_of(run)
        ordered = launch_segments(run)
        best_of = run.trials.set_index("trial")["best_score"]
        trial_ids = ordered["trial"].unique()
        if len(trial_ids) > max_trials:  # the best max_trials in colour, the others as a grey haze
            ranked = best_of.reindex(trial_ids).sort_values(ascending=info.mode != "max", kind="stable")
            coloured = set(ranked.index[:max_trials])
        else:
            coloured = set(trial_ids)
        best = run.best_so_far
        best_trial = best["trial"].iloc[-1] if len(best) else None
        for ax, x, group in ((by_step, "step", "trial"), (by_time, "elapsed", "segment")):
            lines, colors, haze, singles = [], [], [], []
            for (_, trial), part in ordered.groupby([group, "trial"], sort=False):
                points = part[[x, "score"]].to_numpy(float)
                if trial == best_trial:
                    continue
                if trial not in coloured:
                    haze.append(points)
                elif len(points) == 1:
                    singles.append((points[0], STATUS_COLORS.get(status.get(trial, "created"), "#17becf")))
                else:
                    lines.append(points)
                    colors.append(STATUS_COLORS.get(status.get(trial, "created"), "#17becf"))
            if haze:
                ax.add_collection(LineCollection(haze, colors="#cccccc", linewidths=0.5, alpha=0.4, rasterized=True))
            ax.add_collection(LineCollection(lines, colors=colors, linewidths=0.8, alpha=0.55))
            if singles:
                ax.scatter([p[0] for p, _ in singles], [p[1] for p, _ in singles], s=6,
                           c=[c for _, c in singles], alpha=0.6)
            if best_trial is not None:
                mine = ordered[ordered["trial"] == best_trial]
                for _, part in mine.groupby(group, sort=False):
                    ax.plot(part[x], part["score"], color="black", linewidth=1.6, zorder=3)
                top = best.iloc[-1]
                at = mine[mine["step"] == top["step"]].iloc[-1]
                ax.scatter([at[x]], [at["score"]], marker="*", s=180, color="gold", edgecolors="black", zorder=4)
            points = ordered["score"].to_numpy(float)
            low, high = np.nanpercentile(points, [1, 100]) if info.mode == "max" \
                else np.nanpercentile(points, [0, 99])
            pad = 0.05 * max(high - low, 1e-9)
            ax.set_ylim(low - pad, high + pad)
            ax.autoscale_view(scalex=True, scaley=False)
        xs = np.r_[best["elapsed"].to_numpy(), info.last_t - info.start]
        ys = np.r_[best["score"].to_numpy(), best["score"].to_numpy()[-1:]]
        by_time.step(xs, ys, where="post", color="#ff7f0e", linewidth=2, label="best so far")
        last = best.iloc[-1]
        by_time.annotate(f"{last['trial']} step {int(last['step'])}: {last['score']:.4g}",
                         (last["elapsed"], last["score"]), textcoords="offset points", xytext=(-10, 10),
                         ha="right", fontsize=8)
        present = [s for s in STATUS_COLORS if s in set(status)]
        handles = [Line2D([], [], color=STATUS_COLORS[s], label=s) for s in present]
        if len(trial_ids) > max_trials:
            handles.append(Line2D([], [], color="#cccccc", label=f"{len(trial_ids) - max_trials} more trials"))
        handles.append(Line2D([], [], color="black", linewidth=1.6, marker="*", markersize=10,
                              markerfacecolor="gold", label=f"best trial ({best_trial})"))
        handles.append(Line2D([], [], color="#ff7f0e", linewidth=2, label="best so far"))
        handles += _time_lines(by_time, run)
        by_time.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
                       title="trial's final status", title_fontsize=8)
    if scores.empty:
        _time_lines(by_time, run)
    by_time.set_xlim(0, _x_limit(run))
    by_step.set_xlim(0, max(float(scores["step"].max()) if len(scores) else 1.0, 1.0) * 1.02)
    by_step.set_xlabel("step (the trainable's unit, e.g. epoch)")
    by_time.set_xlabel("time since start (s)")
    for ax in (by_step, by_time):
        ax.set_ylabel(f"{info.metric} ({'higher' if info.mode == 'max' else 'lower'} is better)")
        ax.grid(alpha=0.3)
    by_step.set_title("against step", fontsize=10)
    by_time.set_title("against time (a line per launch)", fontsize=10)
    fig.suptitle(title or f"{info.name} ({info.variant}, seed {info.seed}): scores", fontsize=11)
    return fig


def plot_usage(run: Run, title: str | None = None) -> "Figure":
    """Atoms in use over time, stacked by the final status of the trials holding them."""
    fig, ax = new_figure(11, 4.5)
    info = run.info
    alloc = run.allocations
    if alloc.empty:
        ax.text(0.5, 0.5, "no atoms used yet", ha="center", va="center", transform=ax.transAxes)
    else:
        alloc = alloc.assign(status=_status_of(run).reindex(alloc["trial"]).fillna("created").to_numpy())
        curve = usage_curve(alloc, info.start, until=info.last_t, by="status")
        x = curve["elapsed"].to_numpy()
        base = np.zeros(len(curve))
        for s in [s for s in STATUS_COLORS if s in curve.columns]:
            top = base + curve[s].to_numpy()
            ax.fill_between(x, base, top, step="post", color=STATUS_COLORS[s], alpha=0.85, linewidth=0, label=s)
            base = top
        span = max(info.last_t - info.start, 1e-9)
        used = float((curve["atoms"].to_numpy()[:-1] * np.diff(x)).sum()) if len(x) > 1 else 0.0
        ax.step(x, curve["atoms"], where="post", color="black", linewidth=0.8)
        ax.axhline(info.atoms, color="black", linestyle=":", linewidth=1, label=f"run's atoms ({info.atoms})")
        _time_lines(ax, run)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
                  title="trial's final status", title_fontsize=8)
        ax.text(0.01, 0.98, f"utilisation {used / (info.atoms * span):.0%} of {info.atoms} atoms "
                            f"over {span:.4g} s", transform=ax.transAxes, va="top", fontsize=8)
    ax.set_xlim(0, _x_limit(run))
    ax.set_ylim(0, max(info.atoms, 1) * 1.12)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("atoms in use")
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): atoms in use", fontsize=10)
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
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title or f"{info.name} ({info.variant}, seed {info.seed}): allocation over time", fontsize=10)
    return fig


def plot_variants(summary: pd.DataFrame, matrix_keys: tuple[str, ...] = (), value: str = "best_score",
                  title: str | None = None) -> "Figure":
    """Mean ± sd of ``value`` (best_score or regret) per variant over seeds, for every matrix cell:
    the last matrix key on the x axis, one panel per combination of the others, a line per variant
    (bars per variant when there is no matrix). best_score panels also show the oracle's mean."""
    keys = tuple(k for k in matrix_keys if k in summary.columns)
    means = means_table(summary, keys)
    variants = list(dict.fromkeys(summary["variant"]))
    colors = {v: f"C{i % 10}" for i, v in enumerate(variants)}
    label = value.replace("_", " ")
    if not keys:
        fig, ax = new_figure(max(5.0, 1.2 * len(variants) + 2), 4.5)
        m = means.set_index("variant").reindex(variants)
        ax.bar(range(len(variants)), m[f"{value}_mean"], yerr=m[f"{value}_sd"].fillna(0), capsize=4,
               color=[colors[v] for v in variants])
        ax.set_xticks(range(len(variants)), variants, rotation=20, ha="right")
        if value == "best_score" and "oracle_score" in m:
            ax.axhline(float(m["oracle_score"].mean()), color="black", linestyle="--", linewidth=1, label="oracle")
            ax.legend(fontsize=8, frameon=False)
        _tight_ylim(ax, m[f"{value}_mean"], m[f"{value}_sd"])
        ax.set_ylabel(f"{label} (mean ± sd)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(title or f"{label} per variant", fontsize=10)
        return fig
    x_key, facet_keys = keys[-1], keys[:-1]
    facets = means[list(facet_keys)].drop_duplicates() if facet_keys else pd.DataFrame(index=[0])
    n = len(facets)
    cols = min(n, 4)
    rows = int(np.ceil(n / cols))
    fig, axes = new_figure(min(4.2 * cols + 1.8, 19), 3.6 * rows + 0.6, rows, cols)
    axes = np.atleast_1d(axes).ravel()
    x_values = list(dict.fromkeys(means[x_key]))
    position = {v: i for i, v in enumerate(x_values)}
    for ax, (_, facet) in zip(axes, facets.iterrows()):
        sel = means
        for k in facet_keys:
            sel = sel[sel[k] == facet[k]]
        for v in variants:
            line = sel[sel["variant"] == v]
            if line.empty:
                continue
            xs = [position[x] for x in line[x_key]]
            ax.errorbar(xs, line[f"{value}_mean"], yerr=line[f"{value}_sd"].fillna(0), color=colors[v],
                        marker="o", markersize=4, capsize=3, linewidth=1.3, label=v)
        if value == "best_score" and "oracle_score" in sel:
            oracle = sel.groupby(x_key, sort=False)["oracle_score"].mean()
            ax.plot([position[x] for x in oracle.index], oracle.to_numpy(), color="black", linestyle="--",
                    linewidth=1, label="oracle")
        ax.set_xticks(range(len(x_values)), [str(x) for x in x_values])
        ax.set_xlabel(x_key)
        ax.grid(alpha=0.3)
        if facet_keys:
            ax.set_title(", ".join(f"{k}={facet[k]}" for k in facet_keys), fontsize=9)
    for ax in axes[n:]:
        ax.set_visible(False)
    for ax in axes[::cols]:
        ax.set_ylabel(f"{label} (mean ± sd)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)
    fig.suptitle(title or f"{label} by variant (mean ± sd over seeds)", fontsize=11)
    return fig


def _tight_ylim(ax, means: pd.Series, sds: pd.Series) -> None:
    low = float((means - sds.fillna(0)).min())
    high = float((means + sds.fillna(0)).max())
    if np.isfinite(low) and np.isfinite(high) and high > low:
        pad = 0.15 * (high - low)
        ax.set_ylim(max(0.0, low - pad) if low >= 0 else low - pad, high + pad)


def save(fig: "Figure", path) -> None:
    """Write a figure as PNG (100 dpi) and release it."""
    fig.savefig(path, dpi=100)
    fig.clear()
