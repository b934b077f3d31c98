#!/usr/bin/env python3
"""One markdown table from every <detector>.json that bench/placements/replay.py wrote into DIR:
per placement, attacks / benign blocked (HTTP 403) for each detector, pate-proxy first.

    bench/placements/table.py DIR
"""
import glob, json, os, sys


def main():
    d = sys.argv[1]
    runs = []
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        r = json.load(open(path))
        if "results" in r and "scores" not in r:  # not a --calibrate file
            runs.append((os.path.basename(path)[:-5], r))
    # pate-proxy rows first (bundle thresholds, then --proxy-threshold ones), then CRS.
    runs.sort(key=lambda nr: (not nr[0].startswith("pate"), "-t" in nr[0], nr[0]))
    if not runs:
        print(f"no replay results in {d}", file=sys.stderr)
        return 1
    placements = list(runs[0][1]["results"])
    def label(n):
        # run.sh names a row N[-tT][-nofc] (--proxy-threshold, --no-format-checks).
        n, nofc = (n[: -len("-nofc")], ", format checks off") if n.endswith("-nofc") else (n, "")
        base, _, t = n.partition("-t")
        return (f"{base}, threshold {float(t):.6g}" if t else n) + nofc

    head = ("| placement (attacks / benign blocked) | "
            + " | ".join(label(n) for n, _ in runs) + " |")
    lines = [head, "|---|" + "---:|" * len(runs)]
    totals = {n: [0, 0, 0, 0] for n, _ in runs}

    def cell(ab, an, bb, bn):
        return f"{100 * ab / an:.1f} % / {100 * bb / bn:.1f} %"

    # The `-fit` placements (replay.py --fit-to) re-place the query and form values: shown after
    # the total, not counted in it, so that "all" stays the 13 placements.
    fitted = [p for p in placements if p.endswith("-fit")]

    def row(p, count):
        cells = []
        for n, r in runs:
            if p not in r["results"]:
                cells.append("–")
                continue
            (ab, an), (bb, bn) = r["results"][p]["attack"], r["results"][p]["benign"]
            if count:
                t = totals[n]
                t[0] += ab; t[1] += an; t[2] += bb; t[3] += bn
            cells.append(cell(ab, an, bb, bn))
        lines.append(f"| {p} | " + " | ".join(cells) + " |")

    for p in placements:
        if p not in fitted:
            row(p, True)
    n0 = totals[runs[0][0]]
    lines.append(f"| **all ({n0[1]:,} + {n0[3]:,})** | "
                 + " | ".join(cell(*totals[n]) for n, _ in runs) + " |")
    for p in fitted:
        row(p, False)
    print("\n".join(lines))
    print()
    for n, r in runs:
        other = {}
        for p, by_class in r.get("status_counts", {}).items():
            for cls, counts in by_class.items():
                for code, k in counts.items():
                    if code not in ("403", "200", "502", "404"):
                        other[(cls, code)] = other.get((cls, code), 0) + k
        extra = ", ".join(f"{k} {cls} answered {code}" for (cls, code), k in sorted(other.items()))
        print(f"- {n}: {r.get('detector', '')}; {r['per_class']} values per class, seed {r['seed']}"
              + (f"; not counted as blocked: {extra}" if extra else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
