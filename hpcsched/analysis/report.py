"""``hpcsched report DIR``: PNG figures and a summary.md for a run directory or a simulator output.

    files = build_report("runs/cifar10")              # -> runs/cifar10/report/*.png, summary.md
    files = build_report("runs/speculative", "/tmp/r") # simulator output: variants compared, one Gantt per variant
    files = build_report("runs/speculative", cell="atoms=8,deadline=60")   # the Gantts of that cell
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcsched.core.errors import RunDirError, UserError

if TYPE_CHECKING:
    from hpcsched.analysis.loaders import Run
    from hpcsched.analysis.simulation import Simulation

# pandas and the loaders are imported inside the functions, so that importing this module (the
# command line does, for ``hpcsched report``) stays cheap.

REPORT_DIR = "report"


def build_report(path: str | Path, out_dir: str | Path | None = None, mode: str | None = None,
                 max_gantt_trials: int = 300, cell: str | None = None) -> list[Path]:
    """Figures and summary.md for a run directory (or one journal file) or a simulator output
    directory (detected by its summary.csv); returns the files written. Default ``out_dir``:
    DIR/report. ``cell``: the simulation's matrix cell whose runs the Gantts show (default the
    longest deadline, then the most atoms). RunDirError when ``path`` is neither or ``cell`` is not
    one of its cells (or given for a run); UserError when matplotlib is missing."""
    from hpcsched.analysis.loaders import load_run
    from hpcsched.analysis.simulation import is_simulation, load_simulation

    path = Path(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise UserError("report: matplotlib is not installed (pip install 'hpcsched[plot]')")
    if path.is_dir() and is_simulation(path):
        sim = load_simulation(path)
        out = Path(out_dir) if out_dir is not None else path / REPORT_DIR
        return write_simulation_report(sim, out, mode, max_gantt_trials, cell)
    if cell is not None:
        raise RunDirError(f"--cell {cell!r}: {path} is a run, not a simulator output (cells are a simulation's)")
    run = load_run(path, mode)
    if out_dir is not None:
        out = Path(out_dir)
    else:
        out = run.run_dir / REPORT_DIR if run.run_dir is not None else path.with_name(f"{path.stem}-report")
    return write_run_report(run, out, max_gantt_trials)


# ---------------------------------------------------------------- one run


def write_run_report(run: Run, out: Path, max_gantt_trials: int = 300) -> list[Path]:
    """gantt.png, scores.png, usage.png, allocation.png, params.png, parallel.png and summary.md for
    one run, in ``out``."""
    from hpcsched.analysis.canvas import save
    from hpcsched.analysis.hyperparams import plot_parallel, plot_params
    from hpcsched.analysis.plots import plot_allocation, plot_gantt, plot_scores, plot_usage

    out.mkdir(parents=True, exist_ok=True)
    figures = {"gantt.png": ("What each trial was doing when", lambda: plot_gantt(run, max_gantt_trials)),
               "scores.png": ("Scores against step and time", lambda: plot_scores(run)),
               "usage.png": ("What the atoms' time went to", lambda: plot_usage(run)),
               "allocation.png": ("Allocation over time, per trial", lambda: plot_allocation(run)),
               "params.png": ("Best score per trial against each hyperparameter", lambda: plot_params(run)),
               "parallel.png": ("Hyperparameters and best score of every trial", lambda: plot_parallel(run))}
    files = []
    for name, (_, draw) in figures.items():
        save(draw(), out / name)
        files.append(out / name)
    summary = out / "summary.md"
    summary.write_text(run_markdown(run, {name: caption for name, (caption, _) in figures.items()}),
                       encoding="utf-8")
    return files + [summary]


def _best_report_metrics(scores, trial: str, step: int | None) -> list[str]:
    """The other metrics the best report carried (``ctx.report(step, score, loss=...)``), as a table."""
    from hpcsched.analysis.frames import metric_columns

    others = metric_columns(scores)
    row = scores[(scores["trial"] == trial) & (scores["step"] == step)]
    if not others or not len(row):
        return []
    values = [(c, _g(v)) for c, v in row.iloc[-1][others].items() if not _missing(v)]
    return _table(["metric at the best report", "value"], values) + [""] if values else []


def run_markdown(run: Run, images: dict[str, str] | None = None) -> str:
    """The run's summary as Markdown (``images``: file name -> caption, linked at the end)."""
    import pandas as pd

    from hpcsched.analysis.loaders import read_result

    info, trials, alloc = run.info, run.trials, run.allocations
    start = info.start
    lines = [f"# Run report: {info.name}", ""]
    rows: list[tuple[str, str]] = [
        ("run", f"`{info.run_dir or info.journal}`"),
        ("variant / seed", f"{info.variant} / {info.seed}"),
        ("atoms", str(info.atoms)),
        ("deadline", f"{_s(info.deadline - start)} after the start"),
    ]
    if info.in_progress:
        rows.append(("state", f"**in progress**: last record at {_s(info.last_t - start)} "
                              f"({_s(info.deadline - info.last_t)} before the deadline)"))
    else:
        rows.append(("state", f"finished ({info.finish_reason}) at {_s(info.finished_at - start)}"))
    if info.entrance_closed_at is not None:
        at = info.entrance_closed_at - start
        share = at / (info.deadline - start) if info.deadline > start else math.nan
        rows.append(("exploration stopped", f"at {_s(at)} ({share:.0%} of the deadline): "
                                            f"{info.entrance_reason or 'no reason given'}"))
    else:
        rows.append(("exploration stopped", "no (the entrance stayed open to the end)"
                     if not info.in_progress else "not yet"))
    if info.resumed_at:
        rows.append(("controller restarts", ", ".join(_s(t - start) for t in info.resumed_at)))
    rows.append(("journal", f"{info.records} records" + (", a torn last line skipped" if info.torn_tail else "")))
    lines += _table(["", ""], rows) + [""]

    lines += ["## Best", ""]
    if info.best_trial is None:
        lines += ["No trial has reported a score yet.", ""]
    else:
        which = "so far" if info.in_progress else "by the end"
        lines += [f"Best reported {which}: **trial {info.best_trial}**, {info.metric} = "
                  f"**{_g(info.best_score)}** at step {info.best_step}.", ""]
        config = trials.loc[trials["trial"] == info.best_trial, [c for c in trials if c.startswith("config.")]]
        if len(config):
            lines += _table(["parameter", "value"],
                            [(c[len("config."):], _g(v)) for c, v in config.iloc[0].items()]) + [""]
        lines += _best_report_metrics(run.scores, info.best_trial, info.best_step)
    result = read_result(info.run_dir)
    if result and isinstance(result.get("best"), dict):
        best = result["best"]
        trained = "trained to R" if best.get("completed") else "not trained to R"
        lines += [f"result.json (the best configuration's most trained model, {trained}): trial {best.get('trial')}, "
                  f"{result.get('metric', info.metric)} = {_g(best.get('score'))} at step {best.get('step')}, "
                  f"checkpoint `{best.get('checkpoint')}`.", ""]

    lines += ["## Trials", ""]
    counts = trials["status"].value_counts()
    lines += _table(["status", "trials"], [(s, str(int(n))) for s, n in counts.items()] +
                    [("**all**", str(len(trials)))]) + [""]
    reasons = alloc["reason"].value_counts() if len(alloc) else pd.Series(dtype="int64")
    ends = alloc["end_reason"].value_counts() if len(alloc) else pd.Series(dtype="int64")
    lines += _table(["launches", "starts", "resumes (promotions)", "resizes", "pauses", "stops", "errors"],
                    [(str(len(alloc)), str(int(reasons.get("start", 0))), str(int(reasons.get("resume", 0))),
                      str(int(ends.get("resize", 0))), str(int(ends.get("pause", 0))),
                      str(int(ends.get("stop", 0))), str(int(ends.get("errored", 0))))]) + [""]
    lines += _atom_time_lines(run)
    reported = trials[trials["reports"] > 0]
    if len(reported):
        top = reported.sort_values("best_score", ascending=(info.mode == "min"), kind="stable").head(10)
        params = [c for c in trials.columns if c.startswith("config.")]
        lines += [f"Top {len(top)} trials by best {info.metric}, with their configurations:", ""]
        lines += _table(["trial", "status", "best", "at step", "steps", "max atoms", "launches", "run time"]
                        + [c[len("config."):] for c in params],
                        [tuple([r["trial"], r["status"], _g(r["best_score"]), str(r["best_step"]), str(r["steps"]),
                                str(r["max_atoms"]), str(r["launches"]), _s(r["run_time"])]
                               + [_g(r[c]) for c in params]) for _, r in top.iterrows()]) + [""]
    if result and isinstance(result.get("max_steps"), int):
        lines += _early_ranking_section(run, result["max_steps"])
    errored = trials[trials["status"] == "errored"]
    if len(errored):
        lines += [f"Errored trials ({len(errored)}):", ""]
        lines += [f"- {r.trial}: {_clip(r.error)}" for r in errored.head(10).itertuples(index=False)] + [""]
    if images:
        lines += ["## Figures", ""]
        for name, caption in images.items():
            lines += [f"### {caption}", "", f"![{caption}]({name})", ""]
    return "\n".join(lines)


def _atom_time_lines(run: Run) -> list[str]:
    """What the atoms' time went to (training, start-up, idle) and what that suggests."""
    from hpcsched.analysis.activity import atom_time

    split = atom_time(run)
    if split.total <= 0:
        return []
    lines = [f"Atom-time ({run.info.atoms} atoms x {_s(run.info.last_t - run.info.start)}): training "
             f"{split.share(split.training):.0%}, start-up {split.share(split.startup):.0%}, idle "
             f"{split.share(split.idle):.0%} ({split.launches} launches).", ""]
    return lines + [f"- {hint}" for hint in split.hints()] + ([""] if split.hints() else [])


def _early_ranking_section(run: Run, R: int) -> list[str]:
    """How well the scores at steps 1, 2, 4, ... ranked the trials trained to R (``early_ranking``)."""
    from hpcsched.analysis.rank_agreement import MIN_PAIRS, early_ranking

    table = early_ranking(run.scores, R, run.info.mode)
    lines = ["## How early scores ranked the end", ""]
    if table.empty:
        return lines + [f"Fewer than {MIN_PAIRS} trials were trained to R = {R}: nothing to compare.", ""]
    lines += [f"Rank correlation of each step's scores with the scores at R = {R}, over the trials that "
              "reported at both, and where the best trial by R stood at that step among every trial that "
              "reported there. A step whose ranking agrees with the end is a good first rung (`scheduler.r`). "
              "Under ASHA or HyperSched the trials trained to R are those the rungs let through, so a step that "
              "misleads can look better here than it is; a random-search run (`scheduler.kind: random`) shows "
              "the ranking unselected.", ""]
    lines += _table(["step", "trials scored", "trained to R too", "rank corr. with R", "best by R ranked"],
                    [(str(r.step), str(r.scored), str(r.paired), _f(r.rank_corr, 2),
                      "–" if _missing(r.best_rank) else f"{r.best_rank} of {r.scored}")
                     for r in table.itertuples(index=False)]) + [""]
    return lines


# ---------------------------------------------------------------- simulations


def write_simulation_report(sim: Simulation, out: Path, mode: str | None = None,
                            max_gantt_trials: int = 300, cell: str | None = None) -> list[Path]:
    """best_score.png, regret.png, one Gantt per variant (the cell ``cell``, by default the longest
    deadline and most atoms; first seed) and summary.md."""
    from hpcsched.analysis.canvas import save
    from hpcsched.analysis.loaders import Run
    from hpcsched.analysis.plots import plot_gantt
    from hpcsched.analysis.sim_plots import CAPTIONS, DPI, informative_cell, plot_variants
    from hpcsched.rundir.sim_layout import safe_name

    chosen = sim.cell_name(cell) if cell is not None else informative_cell(sim)
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, str] = {}
    summary = sim.summary
    if len(summary) and summary["best_score"].notna().any():
        save(plot_variants(summary, sim.matrix_keys, "best_score"), out / "best_score.png", DPI)
        images["best_score.png"] = "Best score per variant: " + CAPTIONS["best_score"]
    if "regret" in summary and summary["regret"].notna().any():
        save(plot_variants(summary, sim.matrix_keys, "regret"), out / "regret.png", DPI)
        images["regret.png"] = "Regret per variant: " + CAPTIONS["regret"]
    for variant in sim.variants:
        runs = sim.select([chosen] if chosen else None, [variant])
        if runs.empty:
            continue
        row = runs.iloc[0]
        run = Run(row["journal"], mode)
        name = f"gantt-{safe_name(str(variant))}.png"
        try:
            save(plot_gantt(run, max_gantt_trials,
                            title=f"{variant}, {row['cell']}, seed {row['seed']}: atoms per trial over time"),
                 out / name)
        except RunDirError as exc:  # one unreadable journal must not sink the whole report
            images[name] = f"{variant}: journal unreadable ({exc})"
            continue
        images[name] = f"Allocation of {variant} ({row['cell']}, seed {row['seed']})"
    md = out / "summary.md"
    md.write_text(simulation_markdown(sim, images), encoding="utf-8")
    return [out / name for name in images if (out / name).is_file()] + [md]


def simulation_markdown(sim: Simulation, images: dict[str, str] | None = None) -> str:
    """The simulation's summary as Markdown: a table of means ± sd per cell and variant."""
    from hpcsched.analysis.simulation import means_table

    summary = sim.summary
    lines = [f"# Simulation report: {sim.path.name}", "", f"`{sim.path}`", ""]
    n_seeds = summary["seed"].nunique() if len(summary) else 0
    lines += [f"{len(summary)} runs: {summary['cell'].nunique() if len(summary) else 0} matrix cell(s) × "
              f"{summary['variant'].nunique() if len(summary) else 0} variant(s) × {n_seeds} seed(s); "
              f"{len(sim.runs)} event logs.", ""]
    if summary.empty:
        return "\n".join(lines + ["The summary holds no runs.", ""])
    means = means_table(summary, sim.matrix_keys)
    keys = list(sim.matrix_keys)
    headers = keys + ["variant", "seeds", "best score", "regret", "oracle", "trials", "resizes", "pauses"]
    rows = []
    for r in means.to_dict("records"):
        rows.append(tuple([str(r[k]) for k in keys] + [
            str(r["variant"]), str(r["seeds"]), _pm(r.get("best_score_mean"), r.get("best_score_sd")),
            _pm(r.get("regret_mean"), r.get("regret_sd")), _g(r.get("oracle_score")),
            _f(r.get("trials_started"), 1), _f(r.get("resizes"), 1), _f(r.get("pauses"), 1)]))
    lines += ["## Mean ± sd over seeds", ""] + _table(headers, rows) + [""]
    # the winner: lowest mean regret (right for max and min metrics), else highest mean best score
    by = "regret_mean" if "regret_mean" in means and means["regret_mean"].notna().any() else "best_score_mean"
    if by in means and means[by].notna().any():
        winners = []
        for key, cell in (means.groupby(keys, sort=False) if keys else [((), means)]):
            cell = cell.dropna(subset=[by])
            if cell.empty:
                continue
            best = cell.iloc[int(cell[by].argmin() if by == "regret_mean" else cell[by].argmax())]
            key = key if isinstance(key, tuple) else (key,)
            winners.append(tuple([str(k) for k in key] + [str(best["variant"]), _pm(best["best_score_mean"], None),
                                                          _pm(best.get("regret_mean"), None)]))
        what = "lowest mean regret" if by == "regret_mean" else "highest mean best score"
        lines += [f"## Best variant per cell ({what})", ""]
        lines += _table(keys + ["variant", "best score", "regret"], winners) + [""]
    if images:
        lines += ["## Figures", ""]
        for name, caption in images.items():
            lines += [f"### {caption}", "", f"![{caption}]({name})", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- formatting


def _table(headers: list[str], rows: list[tuple]) -> list[str]:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return out


def _missing(v: Any) -> bool:
    import pandas as pd

    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _g(v: Any) -> str:
    if _missing(v):
        return "–"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _f(v: Any, digits: int) -> str:
    return "–" if _missing(v) else f"{v:.{digits}f}"


def _pm(mean: Any, sd: Any) -> str:
    if _missing(mean):
        return "–"
    return f"{mean:.4f}" + ("" if _missing(sd) else f" ± {sd:.4f}")


def _s(seconds: float | None) -> str:
    if _missing(seconds):
        return "–"
    return f"{seconds:.4g} s" if abs(seconds) < 3600 else f"{seconds / 3600:.3g} h"


def _clip(text: str, width: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
