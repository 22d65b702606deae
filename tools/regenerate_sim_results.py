"""Regenerate the simulated studies of experiments/sim/ into docs/results/sim/.

    .venv/bin/python tools/regenerate_sim_results.py [--seeds 5] [--jobs 2] [--only NAME ...]
        [--out DIR] [--quick] [--render-only]

For every experiments/sim/*.yaml (a trace spec whose file is absent is skipped with a note) it
runs every matrix cell x variant x seed on the simulator (seeds spec.seed .. spec.seed+N-1) and
writes ``<study>.csv`` (one summary row per run) and ``<study>.png`` (mean ± sd of best_score per
variant, one panel per value of the outer matrix axis). ``README.md`` is then rebuilt from every
``<study>.csv`` in the output directory, so ``--only`` refreshes some studies and keeps the rest.
``--quick`` keeps only the first value of every matrix axis (for tests); ``--render-only`` skips
the simulations and redraws figures and README from the CSVs. Output is deterministic: the same
seeds give the same files. A ``scale.md`` written there by tools/bench_sim.py is embedded as the
README's "Scale" section.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hpcsched.core.errors import SpecError
from hpcsched.loop.simulate import simulate_experiment
from hpcsched.spec import Experiment, load_experiment

SPECS = REPO / "experiments" / "sim"
OUT = REPO / "docs" / "results" / "sim"
TOOL = "tools/regenerate_sim_results.py"

AXIS_LABELS = {"resources.atoms": "atoms", "deadline": "deadline (s)", "workload.startup": "startup (s)",
               "scaling": "true scaling (= belief)"}

# Syne Tune 0.14.2 replaying data/curves/cifar10-resnets.csv (DESIGN.md §8): mean best_score by deadline.
PEER = {"ASHA promotion": {900: 0.713, 1800: 0.778, 3600: 0.789},
        "ASHA stopping": {900: 0.737, 1800: 0.777, 3600: 0.788},
        "random search": {900: 0.759, 1800: 0.787, 3600: 0.788}}
PEER_ONE_WORKER = {900: 0.777, 1800: 0.800, 3600: 0.800}

# Studies in the README in the paper's order; others follow alphabetically.
ORDER = ("speculative", "entrance", "allocation", "profiling", "overhead", "cifar10_trace")

# Per-cell checks of mean best_score in the README: study -> (variant, must be >= this variant).
CHECKS = {"speculative": (("hypersched", "asha"), ("hypersched-speculative", "asha"),
                          ("hypersched-speculative", "hypersched"))}


# ------------------------------------------------------------------ running


def load_or_skip(path: Path) -> Experiment | None:
    """The spec's experiment, or None (with a printed note) for a trace spec whose file is absent."""
    try:
        return load_experiment(path)
    except SpecError as exc:
        if any("no such trace file" in p for p in exc.problems):
            print(f"skipping {path.name}: its trace file is absent ({exc.problems[0]})")
            return None
        raise


def first_cell_only(experiment: Experiment) -> Experiment:
    """The experiment restricted to the first value of every matrix axis."""
    return dataclasses.replace(experiment, cells=experiment.cells[:1])


def run_study(path: Path, seeds: int, jobs: int, quick: bool) -> pd.DataFrame | None:
    """Simulate one spec file; None when it was skipped."""
    experiment = load_or_skip(path)
    if experiment is None:
        return None
    if quick:
        experiment = first_cell_only(experiment)
    seed_list = [experiment.spec.seed + i for i in range(seeds)]
    return simulate_experiment(experiment, seed_list, out=None, event_log=False, jobs=jobs)


# ------------------------------------------------------------------ tables


def matrix_keys(frame: pd.DataFrame) -> list[str]:
    """The matrix columns of a summary frame: those before ``variant``."""
    return list(frame.columns[: list(frame.columns).index("variant")])


def cell_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd of best_score, mean oracle and regret per matrix cell and variant (file order)."""
    keys = matrix_keys(frame) + ["variant"]
    grouped = frame.groupby(keys, sort=False)
    table = grouped.agg(best=("best_score", "mean"), sd=("best_score", "std"), oracle=("oracle_score", "mean"),
                        regret=("regret", "mean"), seeds=("seed", "nunique"))
    return table.reset_index()


def variants_of(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["variant"]))


def cells_of(frame: pd.DataFrame) -> list[tuple]:
    keys = matrix_keys(frame)
    if not keys:
        return [()]
    return list(dict.fromkeys(frame[keys].itertuples(index=False, name=None)))


def _label(key: str) -> str:
    return AXIS_LABELS.get(key, key)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _lookup(means: pd.DataFrame, keys: list[str], cell: tuple, variant: str) -> pd.Series:
    mask = means["variant"] == variant
    for key, value in zip(keys, cell):
        mask &= means[key] == value
    return means[mask].iloc[0]


def means_markdown(frame: pd.DataFrame) -> str:
    """Cells x variants: mean ± sd best_score, mean regret in parentheses; best mean per row in bold."""
    means = cell_means(frame)
    keys, variants = matrix_keys(frame), variants_of(frame)
    lines = [_row([_label(k) for k in keys] + ["oracle"] + variants),
             _row(["---:"] * (len(keys) + 1) + [":---:"] * len(variants))]
    for cell in cells_of(frame):
        rows = [_lookup(means, keys, cell, v) for v in variants]
        top = max(r["best"] for r in rows)
        entries = []
        for r in rows:
            text = f"{r['best']:.3f} ± {_sd(r['sd'])} ({r['regret']:.3f})"
            entries.append(f"**{text}**" if r["best"] == top else text)
        lines.append(_row([_fmt(c) for c in cell] + [f"{rows[0]['oracle']:.3f}"] + entries))
    return "\n".join(lines)


def _sd(value: float) -> str:
    return "—" if pd.isna(value) else f"{value:.3f}"


def checks_markdown(frame: pd.DataFrame, pairs: tuple[tuple[str, str], ...]) -> str:
    """Per cell: is the mean best_score of each pair's first variant >= the second's (yes/no, with means)."""
    means = cell_means(frame)
    keys, variants = matrix_keys(frame), variants_of(frame)
    pairs = tuple(p for p in pairs if p[0] in variants and p[1] in variants)
    if not pairs:
        return ""
    header = [_label(k) for k in keys]
    for a, b in pairs:
        header += [f"{a} ≥ {b}", f"{a} / {b}"]
    lines = [_row(header), _row(["---:"] * len(keys) + [":---:", "---:"] * len(pairs))]
    tally = [0] * len(pairs)
    cells = cells_of(frame)
    for cell in cells:
        entries = [_fmt(c) for c in cell]
        for i, (a, b) in enumerate(pairs):
            ma, mb = _lookup(means, keys, cell, a)["best"], _lookup(means, keys, cell, b)["best"]
            ok = ma >= mb
            tally[i] += ok
            entries += ["yes" if ok else "**no**", f"{ma:.4f} / {mb:.4f}"]
        lines.append(_row(entries))
    summary = "; ".join(f"{a} ≥ {b} in {n} of {len(cells)} cells" for (a, b), n in zip(pairs, tally))
    return "\n".join(lines) + f"\n\nSummary (means over seeds): {summary}."


def peer_markdown(frame: pd.DataFrame) -> str:
    """Trace replay: our best_score and gap to oracle per deadline, beside the Syne Tune peer figures."""
    means = cell_means(frame)
    keys, variants = matrix_keys(frame), variants_of(frame)
    if "deadline" not in keys:
        return ""
    peers = list(PEER)
    lines = [_row([_label(k) for k in keys] + ["oracle"] + [f"{v}: best (gap)" for v in variants]
                  + [f"peer {p}" for p in peers] + ["peer: 1 trial on 1 worker"]),
             _row(["---:"] * (len(keys) + 1) + [":---:"] * len(variants) + ["---:"] * (len(peers) + 1))]
    verdicts: list[str] = []
    wins: dict[str, int] = {}
    for cell in cells_of(frame):
        deadline = int(dict(zip(keys, cell))["deadline"])
        rows = {v: _lookup(means, keys, cell, v) for v in variants}
        oracle = rows[variants[0]]["oracle"]
        lines.append(_row([_fmt(c) for c in cell] + [f"{oracle:.3f}"]
                          + [f"{rows[v]['best']:.3f} ({rows[v]['oracle'] - rows[v]['best']:.3f})" for v in variants]
                          + [f"{PEER[p].get(deadline, float('nan')):.3f}" for p in peers]
                          + [f"{PEER_ONE_WORKER.get(deadline, float('nan')):.3f}"]))
        where = ", ".join(f"{k.split('.')[-1]} {_fmt(c)}" for k, c in zip(keys, cell))
        for v in variants:
            verdicts.append(f"- {where}: {v} {rows[v]['best']:.4f} — {_versus_peers(rows[v]['best'], deadline)}")
            wins[v] = wins.get(v, 0) + all(rows[v]["best"] > PEER[p].get(deadline, float("inf")) for p in peers)
    n = len(cells_of(frame))
    summary = "; ".join(f"{v} in {wins[v]} of {n} cells" for v in variants)
    return ("\n".join(lines) + f"\n\nAbove all three peer figures (mean best_score): {summary}. "
            "Cell by cell:\n\n" + "\n".join(verdicts))


def _versus_peers(score: float, deadline: int) -> str:
    above = [f"{p} {PEER[p][deadline]:.3f}" for p in PEER if deadline in PEER[p] and score > PEER[p][deadline]]
    below = [f"{p} {PEER[p][deadline]:.3f}" for p in PEER if deadline in PEER[p] and score < PEER[p][deadline]]
    equal = [f"{p} {PEER[p][deadline]:.3f}" for p in PEER if deadline in PEER[p] and score == PEER[p][deadline]]
    parts = []
    if above:
        parts.append("above " + ("all three peer figures" if len(above) == len(PEER) else ", ".join(above)))
    if below:
        parts.append("**below** " + ("all three peer figures" if len(below) == len(PEER) else ", ".join(below)))
    if equal:
        parts.append("equal to " + ", ".join(equal))
    return "; ".join(parts) if parts else "no peer figure at this deadline"


# Study-specific README subsections: study -> (title, renderer), and closing notes.
EXTRAS: dict[str, tuple[str, Callable[[pd.DataFrame], str]]] = {
    "speculative": ("Per-cell checks", lambda frame: checks_markdown(frame, CHECKS["speculative"])),
    "cifar10_trace": ("Gap to the oracle and the Syne Tune peer", peer_markdown),
}
NOTES = {"cifar10_trace": "The peer ran Syne Tune's simulator without startup cost and without resizing; here each "
                          "start, resume and resize costs 10 s (a third of an epoch on one atom), and in the sqrt "
                          "cells a trial on a atoms runs only about sqrt(a) times faster. Our `asha` is the closest "
                          "counterpart of the peer's ASHA promotion."}


# ------------------------------------------------------------------ figures


def plot_study(frame: pd.DataFrame, title: str, path: Path, references: dict[str, dict] | None = None) -> None:
    """Mean ± sd of best_score per variant over the last matrix axis, one panel per outer value."""
    keys = matrix_keys(frame)
    if not keys:
        frame, keys = frame.assign(cell="base"), ["cell"]
    x_key, outer = keys[-1], keys[:-1]
    panels = list(dict.fromkeys(frame[outer].itertuples(index=False, name=None))) if outer else [()]
    variants = variants_of(frame)
    colors = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 5), dpi=100, sharey=True, squeeze=False,
                             layout="constrained")
    for ax, panel in zip(axes[0], panels):
        sub = frame
        for key, value in zip(outer, panel):
            sub = sub[sub[key] == value]
        _draw_panel(ax, sub, x_key, variants, colors)
        _draw_references(ax, list(dict.fromkeys(sub[x_key])), references or {})
        ax.set_title(", ".join(f"{_label(k)} = {_fmt(v)}" for k, v in zip(outer, panel)), fontsize=11)
        ax.set_xlabel(_label(x_key))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("best score (mean ± sd over seeds)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=12)
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def _draw_panel(ax, frame: pd.DataFrame, x_key: str, variants: list[str], colors) -> None:
    xs = list(dict.fromkeys(frame[x_key]))
    positions = range(len(xs))
    width = 0.5 / max(1, len(variants))
    for i, variant in enumerate(variants):
        offset = (i - (len(variants) - 1) / 2) * width
        means, sds = [], []
        for x in xs:
            scores = frame[(frame["variant"] == variant) & (frame[x_key] == x)]["best_score"]
            means.append(scores.mean())
            sds.append(scores.std() if len(scores) > 1 else 0.0)
        ax.errorbar([p + offset for p in positions], means, yerr=sds, marker="o", markersize=4, capsize=3,
                    linewidth=1.2, color=colors[i % len(colors)], label=variant)
    oracle = [frame[frame[x_key] == x]["oracle_score"].mean() for x in xs]
    ax.plot(list(positions), oracle, linestyle="--", color="black", linewidth=1, marker="_", markersize=12,
            label="oracle (one trial, all atoms)")
    ax.set_xticks(list(positions), [_fmt(x) for x in xs])
    ax.set_xlim(-0.5, len(xs) - 0.5)


def _draw_references(ax, xs: list, references: dict[str, dict]) -> None:
    """Published figures by x value (e.g. the Syne Tune peer by deadline), as grey dotted lines."""
    for i, (label, values) in enumerate(references.items()):
        points = [(p, values[x]) for p, x in enumerate(xs) if x in values]
        if points:
            ax.plot(*zip(*points), linestyle=":", color=str(0.25 + 0.2 * i), marker="xs^"[i % 3], markersize=5,
                    linewidth=1, label=label)


REFERENCES = {"cifar10_trace": {f"peer (Syne Tune) {name}": values for name, values in PEER.items()}}


# ------------------------------------------------------------------ README


def spec_header(path: Path) -> tuple[str, str]:
    """(title, description) from the spec's leading comment lines: the first sentence is the title."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    title, _, rest = text.partition(": ")
    if not rest:
        title, rest = path.stem, text
    return title, rest[:1].upper() + rest[1:]


def study_section(name: str, frame: pd.DataFrame, spec_path: Path, seeds_flag: str) -> str:
    title, description = spec_header(spec_path) if spec_path.exists() else (name, "")
    seeds = sorted(frame["seed"].unique())
    spec_path = spec_path.resolve()
    rel_spec = spec_path.relative_to(REPO) if spec_path.is_relative_to(REPO) else spec_path
    parts = [f"## {name}: {title}", "", description, "",
             (f"Spec [`{rel_spec}`](../../../{rel_spec}), {len(cells_of(frame))} cells × "
              f"{len(variants_of(frame))} variants × {len(seeds)} seeds (seeds {seeds[0]}–{seeds[-1]}); "
              f"every run: [`{name}.csv`]({name}.csv). Only this study: "
              f"`python {TOOL}{seeds_flag} --only {name}`."), "",
             f"![{name}]({name}.png)", "",
             ("Mean ± sd of best_score over seeds; mean regret (oracle − best) in parentheses; "
              "the best mean of each row in bold. oracle: one trial alone on all atoms from time 0; "
              "random: random search (every trial trained to R, as many at a time as there are atoms, "
              "first in first out)."), "",
             means_markdown(frame)]
    if name in EXTRAS:
        subtitle, render = EXTRAS[name]
        text = render(frame)
        if text:
            parts += ["", f"### {subtitle}", "", text]
    if name in NOTES:
        parts += ["", NOTES[name]]
    return "\n".join(parts)


def build_readme(out: Path, specs: Path, seeds_flag: str) -> str:
    studies = sorted((p.stem for p in out.glob("*.csv")),
                     key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    counts = {name: pd.read_csv(out / f"{name}.csv")["seed"].nunique() for name in studies}
    header = ["# Simulated studies (HyperSched paper §6 and a trace replay)", "",
              (f"Generated by `python {TOOL}{seeds_flag}` from the specs in `experiments/sim/` — the numbers are "
               "as measured; do not edit this file, rerun the command. "
               f"Seeds per run: {_seed_summary(counts)}. Same seeds, same files."), "",
              ("Each study runs the real controller loop and policies on a virtual clock with the simulated "
               "executor (`hpcsched simulate`). best_score: the best score reported by the deadline; "
               "regret: oracle_score − best_score."), "",
              "Studies: " + ", ".join(f"[{n}](#{_anchor(n, specs)})" for n in studies) + ", [Scale](#scale).", ""]
    sections = [study_section(name, pd.read_csv(out / f"{name}.csv"), specs / f"{name}.yaml", seeds_flag)
                for name in studies]
    return "\n".join(header) + "\n" + "\n\n".join(sections) + "\n\n" + scale_section(out)


def _anchor(name: str, specs: Path) -> str:
    """The GitHub anchor of a study's section heading."""
    spec = specs / f"{name}.yaml"
    title = spec_header(spec)[0] if spec.exists() else name
    text = f"{name}: {title}".lower()
    return "".join(c if c.isalnum() or c in "-_" else ("-" if c == " " else "") for c in text)


def _csv_seeds(out: Path) -> int | None:
    """The seed count shared by every study CSV in ``out`` (None when they differ or there is none)."""
    counts = {pd.read_csv(csv)["seed"].nunique() for csv in out.glob("*.csv")}
    return counts.pop() if len(counts) == 1 else None


def _seed_summary(counts: dict[str, int]) -> str:
    values = set(counts.values())
    if len(values) == 1:
        return str(values.pop())
    return ", ".join(f"{n} for {name}" for name, n in counts.items())


def scale_section(out: Path) -> str:
    where = out.resolve().relative_to(REPO) if out.resolve().is_relative_to(REPO) else "<output dir>"
    body = (out / "scale.md").read_text().strip() if (out / "scale.md").exists() else \
        f"Not measured yet: run `python tools/bench_sim.py --out {where}/scale.md`, then this tool again."
    intro = ("The real controller loop with the simulated executor at growing trial counts N (the atoms as the "
             "command says; synthetic curves, r = 1, R = 50, eta = 4, max_trials = N, a 30 s virtual deadline; every "
             "run starts all N trials). The cost per journal record should stay flat: a cost linear in the number "
             "of trials would grow tenfold from 1,000 to 10,000 trials. HyperSched writes more records than ASHA "
             "where it trains on the atoms that ASHA leaves idle. Written by `tools/bench_sim.py` to `scale.md` "
             "and copied here; wall-clock figures, unlike everything above, vary from run to run.")
    return f"## Scale\n\n{intro}\n\n{body}\n"


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per run, from the spec's seed (default 5)")
    parser.add_argument("--jobs", type=int, default=2, help="simulation processes (default 2)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these studies (spec file stems)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output directory (default {OUT.relative_to(REPO)})")
    parser.add_argument("--specs", type=Path, default=SPECS, help="directory of the study specs")
    parser.add_argument("--quick", action="store_true", help="only the first value of every matrix axis")
    parser.add_argument("--render-only", action="store_true", help="redraw figures and README from the CSVs")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    paths = sorted(args.specs.glob("*.yaml"))
    if args.only:
        unknown = sorted(set(args.only) - {p.stem for p in paths})
        if unknown:
            parser.error(f"--only: no study {', '.join(unknown)}; valid: {', '.join(p.stem for p in paths)}")
        paths = [p for p in paths if p.stem in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    begin = time.perf_counter()
    for path in paths:
        csv = args.out / f"{path.stem}.csv"
        if not args.render_only:
            started = time.perf_counter()
            frame = run_study(path, args.seeds, args.jobs, args.quick)
            if frame is None:
                continue
            frame.to_csv(csv, index=False)
            print(f"{path.stem}: {len(frame)} runs in {time.perf_counter() - started:.1f} s -> {csv}", flush=True)
        if csv.exists():
            frame = pd.read_csv(csv)
            plot_study(frame, f"{path.stem}: {spec_header(path)[0]}", args.out / f"{path.stem}.png",
                       REFERENCES.get(path.stem))
    seeds_flag = f" --seeds {_csv_seeds(args.out) or args.seeds}" + (" --quick" if args.quick else "")
    (args.out / "README.md").write_text(build_readme(args.out, args.specs, seeds_flag))
    print(f"wrote {args.out / 'README.md'}; total {time.perf_counter() - begin:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
