"""The soak's figures from sample.py's CSV: for each checked process, a line fitted (least squares)
to its resident set after the warm-up, and its slope as a share of its mean size per 10 minutes;
the mirror's greatest lag; and a plot of both over time (PNG).

Fails when a checked process's slope exceeds 1 % of its mean size per 10 minutes, when the
mirror's lag ever exceeds LAG_SECONDS, when a sample of a checked process or of the mirror's
gauges is missing, or when there are too few samples to fit.

Usage: python3 soak_report.py CSV PNG WARMUP_SECONDS LAG_SECONDS CHECKED_NAME… [-- SHOWN_NAME…]
  CHECKED_NAME: a process whose resident set must stay flat; SHOWN_NAME: plotted and printed only.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy  # noqa: E402

path, png, warmup, lag_bound = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
names = sys.argv[5:]
checked = names[: names.index("--")] if "--" in names else names
shown = names[names.index("--") + 1:] if "--" in names else []
rows = list(csv.DictReader(open(path)))
problems = []
if len(rows) < 6:
    print(f"FAIL only {len(rows)} samples")
    sys.exit(1)
seconds = numpy.array([float(r["seconds"]) for r in rows])


def column(name):
    values = [r[name] for r in rows]
    missing = sum(1 for v in values if v == "")
    return numpy.array([float(v) if v != "" else numpy.nan for v in values]), missing


figure, (rss_axes, shown_axes, lag_axes) = plt.subplots(3, 1, figsize=(10, 11), sharex=True, height_ratios=[3, 1.5, 2])
for name in checked + shown:
    axes = rss_axes if name in checked else shown_axes
    rss, missing = column(f"rss_{name}")
    mib = rss / 1024
    axes.plot(seconds / 60, mib, label=name + ("" if name in checked else " (not checked)"))
    after = (seconds >= warmup) & ~numpy.isnan(rss)
    if after.sum() < 3:
        problems.append(f"{name}: {after.sum()} samples after the warm-up, too few to fit")
        continue
    slope, intercept = numpy.polyfit(seconds[after], mib[after], 1)
    mean = mib[after].mean()
    share = slope * 600 / mean * 100
    if name in checked:
        rss_axes.plot(seconds[after] / 60, slope * seconds[after] + intercept, "--", color="gray", linewidth=0.8)
    verdict = ""
    if name in checked:
        if missing:
            problems.append(f"{name}: {missing} samples of its resident set missing (the process went away?)")
        if share > 1:
            problems.append(f"{name}: its resident set grows {share:.2f} % of its size per 10 minutes (at most 1 %)")
        verdict = "ok" if share <= 1 and not missing else "TOO STEEP" if share > 1 else "GAPS"
    else:
        verdict = "not checked"
    print(f"rss {name}: {numpy.nanmin(mib):.1f}..{numpy.nanmax(mib):.1f} MiB, after {warmup / 60:.1f} min mean {mean:.1f} MiB, "
          f"slope {slope * 600:+.3f} MiB per 10 min = {share:+.2f} % per 10 min ({verdict})")
    # What the resident set is made of, printed and plotted to tell a leak from caches filling up:
    # the anonymous part (heap and stacks), the heap in use, and what SQLite holds.
    for part, label in (("anon", "anonymous"), ("heap", "heap in use"), ("sqlite", "SQLite's")):
        if f"{part}_{name}" not in rows[0]:
            continue
        values, _ = column(f"{part}_{name}")
        values = values / 1024
        axes.plot(seconds / 60, values, {"anon": ":", "heap": "--", "sqlite": "-."}[part], linewidth=0.9, label=f"{name}: {label}")
        fit = after & ~numpy.isnan(values)
        if fit.sum() >= 3:
            part_slope, _ = numpy.polyfit(seconds[fit], values[fit], 1)
            print(f"    {label} {numpy.nanmin(values):.1f}..{numpy.nanmax(values):.1f} MiB, slope {part_slope * 600:+.3f} MiB per 10 min")
for axes, title in ((rss_axes, "checked: resident set and its parts (MiB)"), (shown_axes, "not checked (MiB)")):
    axes.set_ylabel(title)
    axes.axvline(warmup / 60, color="gray", linestyle=":", linewidth=0.8)
    axes.legend(loc="upper left", fontsize="small", ncol=2)
rss_axes.set_ylim(bottom=0)

lag_seconds, missing_lag = column("faresync_mirror_lag_seconds")
lag_positions, _ = column("faresync_mirror_lag_positions")
position, _ = column("faresync_mirror_position")
if missing_lag:
    problems.append(f"the mirror's gauges: {missing_lag} samples missing (the worker's /metrics did not answer)")
if numpy.all(numpy.isnan(position)) or numpy.nanmax(position) <= 0:
    problems.append("the mirror's position never moved: nothing was mirrored")
worst = numpy.nanmax(lag_seconds) if not numpy.all(numpy.isnan(lag_seconds)) else numpy.nan
worst_positions = numpy.nanmax(lag_positions) if not numpy.all(numpy.isnan(lag_positions)) else numpy.nan
if not worst <= lag_bound:
    problems.append(f"the mirror's lag reached {worst:.1f} s (at most {lag_bound:.0f} s)")
print(f"mirror: position {numpy.nanmax(position):.0f} at the last sample, lag at most {worst:.1f} s and {worst_positions:.0f} positions "
      f"(mean {numpy.nanmean(lag_seconds):.2f} s) over {len(rows)} samples")
lag_axes.plot(seconds / 60, lag_seconds, label="lag (s behind, the most of each sample's interval)")
lag_axes.axhline(lag_bound, color="red", linestyle=":", linewidth=0.8, label=f"bound {lag_bound:.0f} s")
lag_axes.set_ylabel("mirror lag (s)")
positions_axes = lag_axes.twinx()
positions_axes.plot(seconds / 60, lag_positions, color="orange", linewidth=0.8, label="lag (feed positions)")
positions_axes.set_ylabel("mirror lag (feed positions)")
lag_axes.set_xlabel("minutes")
lag_axes.legend(loc="upper left")
positions_axes.legend(loc="upper right")
figure.suptitle(f"soak: {seconds[-1] / 60:.1f} min, {len(rows)} samples")
figure.tight_layout()
figure.savefig(png, dpi=100)
print(f"plot: {png}")
for problem in problems:
    print("FAIL", problem)
sys.exit(1 if problems else 0)
