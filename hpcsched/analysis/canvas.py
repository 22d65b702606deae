"""The canvas every figure is drawn on: a matplotlib Figure on the Agg canvas (headless; pyplot is
never used, so an interactive backend is left alone), the house font sizes, and writing a PNG.
matplotlib (the ``plot`` extra) is imported when a figure is made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FONT = 9  # points: axis labels, legends, titles of panels
SMALL = 8  # tick labels, annotations: the smallest text on any figure
TITLE = 10
DPI = 100  # PNG resolution of a run's figures (a simulation's, sized for a paper column, use more)


def new_figure(width: float, height: float, rows: int = 1, cols: int = 1, **subplot_kw: Any):
    """(figure, axes) on an Agg canvas; axes is one Axes or an array of them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=(rows == 1 and cols == 1), **subplot_kw)
    return fig, axes


def style(ax: "Axes") -> None:
    """House tick label size and a light grid."""
    ax.tick_params(labelsize=SMALL)
    ax.grid(alpha=0.3)


def integer_ticks(axis: Any) -> None:
    """Ticks at whole numbers only (steps, atoms)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def save(fig: "Figure", path: Any, dpi: int = DPI) -> None:
    """Write a figure as PNG and release it."""
    fig.savefig(path, dpi=dpi)
    fig.clear()
