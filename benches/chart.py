#!/usr/bin/env python3
"""Draw benches/chart.svg (and print a Markdown table) from criterion's output.

Reads every `target/criterion/**/new/benchmark.json` + `estimates.json`, groups the benchmarks by
criterion group (and parameter, e.g. content size), and draws one horizontal bar per benchmark,
scaled within its group, labelled with the time and the ratio to the group's `baseline/*` entry
(the floor). Standard library only.

    python3 benches/chart.py [--criterion target/criterion] [--out benches/chart.svg] [--table]
"""
import argparse
import html
import json
import os
import re
import sys
from collections import OrderedDict


def load(criterion_dir):
    rows = []
    for root, _dirs, files in os.walk(criterion_dir):
        if os.path.basename(root) != "new" or "benchmark.json" not in files:
            continue
        with open(os.path.join(root, "benchmark.json")) as f:
            bench = json.load(f)
        with open(os.path.join(root, "estimates.json")) as f:
            est = json.load(f)
        point = (est.get("slope") or est["mean"])["point_estimate"]
        group = bench["group_id"]
        value = bench.get("value_str")
        function = bench.get("function_id") or ""
        if value is None and "/" in function:
            # criterion stores `function/param` ids whole when no BenchmarkId param is used
            pass
        rows.append((group, value or "", function, point))
    rows.sort()
    return rows


def fmt_time(ns):
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def grouped(rows):
    groups = OrderedDict()
    for group, value, function, point in rows:
        groups.setdefault((group, value), []).append((function, point))
    return groups


def tokens(name):
    return set(re.split(r"[/_\-]", name.lower())) - {"baseline", "ours", "peer", "part", "naive", ""}


def baseline_of(entries, function=None):
    """The floor for `function`: the group's only `baseline/*` entry, or, when a group holds one
    baseline per variant (e.g. one per signature algorithm), the one sharing most name parts."""
    baselines = [(f, p) for f, p in entries if f.startswith("baseline")]
    if not baselines:
        return None
    if len(baselines) == 1 or function is None:
        return baselines[0][1]
    if function.startswith("baseline"):
        return dict(baselines)[function]
    want = tokens(function)
    best = max(baselines, key=lambda fp: len(tokens(fp[0]) & want))
    return best[1]


def table(groups):
    out = ["| group | case | time | ratio to floor |", "| --- | --- | --- | --- |"]
    for (group, value), entries in groups.items():
        for function, point in entries:
            base = baseline_of(entries, function)
            ratio = f"{point / base:.2f}x" if base else "–"
            label = f"{group}/{value}" if value else group
            out.append(f"| {label} | {function} | {fmt_time(point)} | {ratio} |")
    return "\n".join(out)


def svg(groups):
    width, label_w, bar_w, row_h, head_h = 980, 330, 420, 18, 24
    y = 40
    parts = []
    for (group, value), entries in groups.items():
        longest = max(p for _, p in entries) or 1.0
        title = f"{group} / {value}" if value else group
        parts.append(
            f'<text x="10" y="{y + 16}" font-weight="bold">{html.escape(title)}</text>'
        )
        y += head_h
        for function, point in entries:
            base = baseline_of(entries, function)
            w = max(1.0, bar_w * point / longest)
            colour = "#9aa5b1" if function.startswith("baseline") else (
                "#2f7ed8" if not function.startswith("peer") else "#e08a2c")
            ratio = f"  ({point / base:.2f}x floor)" if base and not function.startswith("baseline") else ""
            parts.append(
                f'<text x="20" y="{y + 13}">{html.escape(function)}</text>'
                f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" fill="{colour}"/>'
                f'<text x="{label_w + w + 6:.1f}" y="{y + 13}">{html.escape(fmt_time(point) + ratio)}</text>'
            )
            y += row_h
        y += 8
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 20}" '
        f'font-family="sans-serif" font-size="12">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="10" y="24" font-size="15" font-weight="bold">Criterion results: '
        f'grey = floor (raw primitive), blue = ours, orange = peer crates</text>'
    )
    return head + "".join(parts) + "</svg>\n"


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--criterion", default=os.path.join(here, "..", "target", "criterion"))
    ap.add_argument("--out", default=os.path.join(here, "chart.svg"))
    ap.add_argument("--table", action="store_true", help="print a Markdown table to stdout")
    args = ap.parse_args()
    rows = load(args.criterion)
    if not rows:
        print(f"no criterion results under {args.criterion}; run `cargo bench` first", file=sys.stderr)
        return 1
    groups = grouped(rows)
    with open(args.out, "w") as f:
        f.write(svg(groups))
    if args.table:
        print(table(groups))
    print(f"wrote {args.out} ({len(rows)} benchmarks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
