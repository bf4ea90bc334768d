# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small line charts as inline SVG strings, for self-contained HTML reports.
Pure: no I/O, standard library only. Every text taken from the data is
escaped; coordinates are rounded to one decimal to keep pages small."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from html import escape

# Tableau 10: distinct on white, also for the colour-blind.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LEFT, RIGHT, TOP, BOTTOM = 52, 18, 26, 34
LEGEND_ROW, CHAR_WIDTH = 16, 6.2
DASHED = ' stroke-dasharray="6 3"'
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400, 21600, 43200, 86400)
# Under this span the axis counts minutes:seconds, above it hours:minutes.
SHORT_SPAN = 600


def colour(index):
    """The palette's colour for the index-th series (wrapping round)."""
    return PALETTE[index % len(PALETTE)]


def clock(seconds, short=False):
    """Seconds as hours:minutes ("1:05", "24:00"), or with short as
    minutes:seconds ("2:30")."""
    if short:
        whole = int(round(seconds))
        return "%d:%02d" % (whole // 60, whole % 60)
    minutes = int(round(seconds / 60.0))
    return "%d:%02d" % (minutes // 60, minutes % 60)


def line_chart(title, times, lines, y_label, width=640, height=240, y_max=None):
    """An SVG line chart. times: seconds, one per point (the axis shows
    hours:minutes from the first; minutes:seconds under 10 minutes). lines: dicts with label, values (floats,
    None for a gap), and optionally dashed, step (hold each value until the
    next point) and colour (else the palette's, by position). The y axis
    starts at 0 and ends at y_max (default: the largest value), rounded up
    to a tick; values outside are clamped. height is the plot's with its
    axes: the legend adds rows below it. Labels and titles are escaped."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    numbers = [v for line in lines for v in line["values"] if v is not None]
    integers = bool(numbers) and all(isinstance(v, int) for v in numbers)
    highest = y_max or max(numbers + [0]) or 1
    y_step = _nice_step(highest / 4.0, integers)
    top = y_step * math.ceil(highest / y_step - 1e-9)
    start = times[0] if times else 0
    span = (times[-1] - start) if len(times) > 1 and times[-1] > start else 1

    def x_of(t):
        return LEFT + (t - start) * plot_w / span

    def y_of(value):
        return TOP + plot_h - min(max(value, 0), top) * plot_h / top

    legend, legend_h = _legend(lines, width)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img"'
           ' font-family="sans-serif" font-size="11">' % (width, height + legend_h, width, height + legend_h),
           "<title>%s</title>" % escape(str(title)),
           '<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>' % (LEFT, escape(str(title))),
           '<g stroke="#e3e3e3">']
    y_ticks = [i * y_step for i in range(int(top / y_step + 1e-9) + 1)]
    t_step = next((s for s in TIME_STEPS if span / s <= 6), TIME_STEPS[-1])
    x_ticks = [i * t_step for i in range(int(span / t_step + 1e-9) + 1)] if times else []
    out.extend('<line x1="%d" x2="%d" y1="%s" y2="%s"/>' % (LEFT, LEFT + plot_w, _num(y_of(v)), _num(y_of(v))) for v in y_ticks)
    out.extend('<line x1="%s" x2="%s" y1="%d" y2="%d"/>' % (_num(x_of(start + o)), _num(x_of(start + o)), TOP, TOP + plot_h) for o in x_ticks)
    out.append('</g><rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/><g fill="#444" text-anchor="end">'
               % (LEFT, TOP, plot_w, plot_h))
    out.extend('<text x="%d" y="%s">%s</text>' % (LEFT - 4, _num(y_of(v) + 4), "%g" % round(v, 6)) for v in y_ticks)
    out.append('</g><g fill="#444" text-anchor="middle">')
    short = span < SHORT_SPAN
    out.extend('<text x="%s" y="%d">%s</text>' % (_num(x_of(start + o)), TOP + plot_h + 14, clock(o, short)) for o in x_ticks)
    out.append('<text x="%d" y="%d">time (%s)</text>' % (LEFT + plot_w // 2, TOP + plot_h + 29, "m:ss" if short else "h:mm"))
    out.append('<text transform="translate(13 %d) rotate(-90)">%s</text>' % (TOP + plot_h // 2, escape(str(y_label))))
    if not numbers:
        out.append('<text x="%d" y="%d">no data</text>' % (LEFT + plot_w // 2, TOP + plot_h // 2))
    out.append('</g><g fill="none" stroke-width="1.6" stroke-linejoin="round">')
    xs = [x_of(t) for t in times]
    for index, line in enumerate(lines):
        path = _path(xs, [None if v is None else y_of(v) for v in line["values"][:len(xs)]], line.get("step"))
        if path:
            out.append('<path d="%s" stroke="%s"%s><title>%s</title></path>'
                       % (path, _colour(line, index), DASHED if line.get("dashed") else "", escape(str(line["label"]))))
    out.append('</g><g stroke-width="2" fill="#222">')
    for x, row, index, line in legend:
        y = height + row * LEGEND_ROW + 4
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s"%s/><text x="%d" y="%d">%s</text>'
                   % (x, x + 24, y, y, _colour(line, index), DASHED if line.get("dashed") else "", x + 30, y + 4, escape(str(line["label"]))))
    out.append("</g></svg>")
    return "".join(out)


def _colour(line, index):
    return escape(line.get("colour") or colour(index))


def _nice_step(raw, integers):
    """1, 2, 2.5 or 5 times a power of ten, at least raw (at least 1 for
    whole-number series)."""
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return max(step, 1) if integers else step


def _path(xs, ys, step):
    """SVG path data; a None breaks the line (a new M). A step series holds
    each value until the next point's time."""
    segments, current = [], []
    for i, y in enumerate(ys):
        if y is None:
            segments.append(current)
            current = []
            continue
        current.append((xs[i], y))
        if step:
            current.append((xs[min(i + 1, len(xs) - 1)], y))
    segments.append(current)
    data = []
    for points in segments:
        points = _simplify([(_num(x), _num(y)) for x, y in points])
        if len(points) == 1:
            x, y = points[0]
            points = [(_num(float(x) - 1), y), (_num(float(x) + 1), y)]
        if points:
            data.append("M%s,%sL%s" % (points[0][0], points[0][1], " ".join("%s,%s" % p for p in points[1:])))
    return "".join(data)


def _simplify(points):
    """Drops repeated points and the middle of horizontal or vertical runs."""
    kept = []
    for point in points:
        if kept and kept[-1] == point:
            continue
        if len(kept) >= 2 and _inside(kept[-2], kept[-1], point):
            kept[-1] = point
        else:
            kept.append(point)
    return kept


def _inside(before, middle, after):
    """Whether middle lies on the straight horizontal or vertical run
    from before to after (so drawing it adds nothing)."""
    for same, other in ((0, 1), (1, 0)):
        if before[same] == middle[same] == after[same]:
            low, high = sorted((float(before[other]), float(after[other])))
            return low <= float(middle[other]) <= high
    return False


def _legend(lines, width):
    """[(x, row, line index, line)] laid out left to right, wrapping; and
    the height the rows take."""
    placed, x, row = [], LEFT, 0
    for index, line in enumerate(lines):
        item = 30 + int(len(str(line["label"])) * CHAR_WIDTH) + 14
        if x > LEFT and x + item > width - RIGHT:
            x, row = LEFT, row + 1
        placed.append((x, row, index, line))
        x += item
    return placed, (row + 1) * LEGEND_ROW + 4 if placed else 0


def _num(value):
    """A coordinate to one decimal, without a trailing ".0"."""
    text = "%.1f" % value
    return text[:-2] if text.endswith(".0") else text
