"""Every figure of ``hpcsched report``, rendered from a recorded quickstart run (tests/fixtures/quickstart-run:
the journal, result.json and spec of a real ``hpcsched run experiments/quickstart/quickstart.yaml``) and
from a real simulation, checked for what code can check: whole-number step ticks, the best report's
label inside its axes, trials told apart, start-up counted apart from training, segments coloured by
activity, simulator panels on one y range and a to-scale axis, text that stays readable in a column."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from hpcsched.analysis import load_run, load_simulation  # noqa: E402
from hpcsched.analysis.activity import Activity, atom_time, segments  # noqa: E402
from hpcsched.analysis.canvas import SMALL  # noqa: E402
from hpcsched.analysis.hyperparams import Scale, plot_parallel, plot_params, trial_params  # noqa: E402
from hpcsched.analysis.plots import (ACTIVITY_COLORS, OTHERS_COLOR, plot_gantt, plot_scores,  # noqa: E402
                                     plot_usage, top_trials)
from hpcsched.analysis.report import build_report  # noqa: E402
from hpcsched.analysis.sim_plots import COLUMN, informative_cell, plot_variants  # noqa: E402
from hpcsched.cli.main import main  # noqa: E402
from hpcsched.core.errors import RunDirError  # noqa: E402
from hpcsched.core.records import (Exited, Launched, RunFinished, RunStarted, Reported, Running,  # noqa: E402
                                   TrialCreated)
from hpcsched.loop.simulate import simulate_experiment  # noqa: E402
from hpcsched.spec import parse_experiment  # noqa: E402

from tests.test_analysis import SMALL as SMALL_SPEC, write_records  # noqa: E402

RECORDED = Path(__file__).parent / "fixtures" / "quickstart-run"


@pytest.fixture(scope="module")
def run():
    return load_run(RECORDED)


@pytest.fixture(scope="module")
def simulation(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim") / "out"
    raw = dict(SMALL_SPEC, deadline=6, matrix={"resources.atoms": [2, 4], "deadline": [4, 8]})
    simulate_experiment(parse_experiment(raw), [0, 1], out)
    return load_simulation(out)


def drawn(fig):
    fig.canvas.draw()
    return fig


def inside(inner, outer) -> bool:
    return inner.x0 >= outer.x0 - 1 and inner.x1 <= outer.x1 + 1 and inner.y0 >= outer.y0 - 1 \
        and inner.y1 <= outer.y1 + 1


# ---------------------------------------------------------------- the recorded run


def test_the_recorded_run_is_a_real_quickstart_run_with_what_the_figures_show(run):
    assert run.info.name == "quickstart" and not run.info.in_progress
    alloc = run.allocations
    assert (alloc["end_reason"] == "pause").any() and (alloc["end_reason"] == "resize").any()
    assert alloc["startup"].notna().all() and (alloc["startup"] > 0).all()


def test_every_figure_renders_from_the_recorded_run(run, tmp_path):
    shutil.copytree(RECORDED, tmp_path / "run")
    files = build_report(tmp_path / "run")
    names = {f.name for f in files}
    assert names == {"gantt.png", "scores.png", "usage.png", "allocation.png", "params.png", "parallel.png",
                     "summary.md"}
    text = (tmp_path / "run" / "report" / "summary.md").read_text()
    # the top trials with their configurations, not only the best's
    header = next(line for line in text.splitlines() if line.startswith("| trial | status | best |"))
    assert all(f"| {name} " in header + " " for name in ("lr", "momentum", "width", "batch_size"))
    top = top_trials(run, 3)
    assert all(f"| {t} |" in text for t in top)
    assert "start-up" in text and "Atom-time" in text
    for image in ("params.png", "parallel.png", "usage.png"):
        assert f"]({image})" in text


def test_scores_step_ticks_are_whole_numbers_and_the_best_label_sits_inside_its_axes(run):
    fig = drawn(plot_scores(run))
    by_step, by_time = fig.axes[:2]
    ticks = [t for t in by_step.get_xticks() if by_step.get_xlim()[0] <= t <= by_step.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    (label,) = [t for t in by_step.texts if t.get_gid() == "best-label"]
    box = label.get_window_extent()
    assert inside(box, by_step.get_window_extent())
    assert not box.overlaps(fig._suptitle.get_window_extent())
    assert not box.overlaps(by_step.title.get_window_extent())
    # no vertical line (deadline, exploration stopped) on the panel the label is in
    assert not [line for line in by_step.get_lines() if len(set(np.atleast_1d(line.get_xdata()))) == 1
                and len(line.get_xdata()) == 2]
    assert run.info.best_trial in label.get_text()


def test_scores_show_the_best_few_trials_each_in_its_colour_and_the_rest_grey(run):
    fig = plot_scores(run, highlight=4)
    by_step = fig.axes[0]
    shown = top_trials(run, 4)
    colours = {}
    for line in by_step.get_lines():
        gid = line.get_gid() or ""
        if gid.startswith("scores-t"):
            colours.setdefault(gid[len("scores-"):], to_hex(line.get_color()))
    assert list(colours) == list(reversed(shown))  # the best drawn last, on top
    assert len(set(colours.values())) == len(shown) and to_hex(OTHERS_COLOR) not in colours.values()
    (others,) = [c for c in by_step.collections if c.get_gid() == "scores-others"]
    assert {to_hex(c) for c in others.get_colors()} == {to_hex(OTHERS_COLOR)}
    assert len(run.trials) > len(shown)


def test_gantt_colours_each_segment_by_what_the_trial_was_doing(run):
    fig = drawn(plot_gantt(run))
    ax = fig.axes[0]
    by_gid = {c.get_gid(): c for c in ax.collections if c.get_gid()}
    seg = segments(run)
    for activity in (Activity.STARTUP, Activity.TRAINING):
        boxes = by_gid[f"gantt-{activity}"]
        assert len(boxes.get_paths()) == int((seg["activity"] == str(activity)).sum())
        assert {to_hex(c) for c in boxes.get_facecolors()} == {ACTIVITY_COLORS[str(activity)]}
    assert ACTIVITY_COLORS[str(Activity.STARTUP)] != ACTIVITY_COLORS[str(Activity.TRAINING)]
    paused = by_gid[f"gantt-{Activity.PAUSED}"]
    assert len(paused.get_segments()) == int((seg["activity"] == str(Activity.PAUSED)).sum()) > 0
    # a resized trial shows its atom counts, larger after the resize
    resized = run.allocations[run.allocations["reason"] == "resize"]
    counts = {t.get_text() for t in ax.texts if t.get_gid() == "atom-count"}
    assert {str(int(a)) for a in resized["atoms"]} <= counts and "1" in counts
    # each row names the trial's final status, since the colours no longer do
    labels = [t.get_text() for t in ax.get_yticklabels()]
    status = run.trials.set_index("trial")["status"]
    assert all(f"{t} · {status[t]}" in labels for t in status.index)


def test_usage_counts_start_up_apart_from_training(run):
    split = atom_time(run)
    assert split.startup > 0 and split.training > 0
    assert abs(split.training + split.startup + split.idle - split.total) < 1e-6 * split.total
    fig = plot_usage(run)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any(label.startswith(f"start-up: {split.share(split.startup):.0%}") for label in labels)
    assert any(label.startswith(f"training: {split.share(split.training):.0%}") for label in labels)


def test_a_run_that_mostly_started_up_says_so_and_what_to_do(tmp_path):
    # one atom, three trials one after the other: 10 s launches, 7 s of each starting up
    records = [RunStarted(0.0, "slow", 30.0, 1, 0, "d", "v", ("0",))]
    for i in range(3):
        t, trial = 10.0 * i, f"t{i}"
        records += [TrialCreated(t, trial, i, {"lr": 0.1 * (i + 1)}), Launched(t, trial, ("0",), "start"),
                    Running(t + 7, trial, 7.0), Reported(t + 8.5, trial, 1, 0.5 + i / 10),
                    Reported(t + 10, trial, 2, 0.6 + i / 10), Exited(t + 10, trial, "finished", 2)]
    records.append(RunFinished(30.0, "deadline", "t2", 0.8, 2))
    run = load_run(write_records(tmp_path / "slow" / "events.jsonl", records))
    split = atom_time(run)
    assert split.share(split.startup) == pytest.approx(0.7) and split.share(split.training) == pytest.approx(0.3)
    (hint,) = split.hints()
    assert hint.startswith("start-up took 70% of the atom-time trials held (3 launches, 7 s per launch against "
                           "1.5 s per step)")
    fig = plot_usage(run)
    (notes,) = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "usage-hints"]
    assert notes.replace("\n", " ").startswith("• start-up took 70% of the atom-time")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "start-up: 70% of the atom-time" in labels and "training: 30% of the atom-time" in labels


def test_hyperparameter_views_show_every_varying_parameter(run):
    frame, axes = trial_params(run)
    assert len(frame) == int((run.trials["reports"] > 0).sum())
    scales = {a.name: a.scale for a in axes}
    assert scales["lr"] == Scale.LOG and scales["width"] == Scale.CATEGORY and scales["dropout"] == Scale.LINEAR
    fig = plot_params(run)
    panels = [ax for ax in fig.axes if any((c.get_gid() or "").startswith("slice-") for c in ax.collections)]
    assert len(panels) == len(axes)
    fig = plot_parallel(run)
    lines = [line for line in fig.axes[0].get_lines() if (line.get_gid() or "").startswith("parallel-")]
    assert len(lines) == len(frame)
    assert [tick.get_text() for tick in fig.axes[0].get_xticklabels()][-1] == f"best {run.info.metric}"


# ---------------------------------------------------------------- a simulation


def test_every_simulation_figure_renders_and_fits_a_paper_column(simulation, tmp_path):
    files = build_report(simulation.path, tmp_path / "out")
    assert {"best_score.png", "regret.png", "gantt-asha.png", "gantt-hypersched.png"} <= {f.name for f in files}
    for value in ("best_score", "regret"):
        fig = drawn(plot_variants(simulation.summary, simulation.matrix_keys, value))
        assert fig.get_figwidth() <= COLUMN
        sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
        assert min(sizes) >= SMALL
        for legend in fig.legends:  # nothing cut off at the figure's edges
            assert inside(legend.get_window_extent(), fig.bbox)
    # five variants with long names still fit the column
    long = simulation.summary.assign(variant=simulation.summary["variant"].map(
        {"asha": "hypersched-speculative", "hypersched": "hypersched-paper-rules"}))
    fig = drawn(plot_variants(long, simulation.matrix_keys, "regret"))
    assert all(inside(legend.get_window_extent(), fig.bbox) for legend in fig.legends)


def test_simulation_panels_share_one_y_range_and_a_to_scale_deadline_axis(simulation):
    fig = plot_variants(simulation.summary, simulation.matrix_keys, "regret")
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert len(panels) == 2
    assert len({ax.get_ylim() for ax in panels}) == 1
    ax = panels[0]
    assert list(ax.get_xticks()) == [4.0, 8.0]  # deadlines at their values, not at positions 0, 1
    assert ax.get_xlabel().startswith("deadline (s)")
    assert "regret = |oracle − best score|" in fig._suptitle.get_text().replace("\n", " ")
    # the variants differ in marker and line style, not only in colour
    styles = {c.get_label(): (c.lines[0].get_marker(), c.lines[0].get_linestyle()) for c in ax.containers}
    assert set(styles) == {"asha", "hypersched"} and len(set(styles.values())) == 2


def test_the_gantt_cell_is_the_most_informative_or_the_one_asked_for(simulation, tmp_path, capsys):
    assert informative_cell(simulation) == "atoms=4,deadline=8"
    build_report(simulation.path, tmp_path / "default")
    assert "(atoms=4,deadline=8, seed 0)" in (tmp_path / "default" / "summary.md").read_text()
    build_report(simulation.path, tmp_path / "asked", cell="resources.atoms=2,deadline=4")
    assert "(atoms=2,deadline=4, seed 0)" in (tmp_path / "asked" / "summary.md").read_text()
    with pytest.raises(RunDirError, match="cells: atoms=2,deadline=4, atoms=2,deadline=8"):
        build_report(simulation.path, tmp_path / "bad", cell="atoms=3")
    assert main(["report", str(simulation.path), "--out", str(tmp_path / "cli"), "--cell", "atoms=3"]) == 2
    assert "cell: 'atoms=3' is not a cell" in capsys.readouterr().err
