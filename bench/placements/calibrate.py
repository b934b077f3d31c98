#!/usr/bin/env python3
"""The proxy threshold chosen on the validation split (bench/placements/run.sh --calibrate):
the lowest threshold at which at most --max-benign (default 5 %) of the benign validation values
is blocked (score >= threshold) in every placement; prints it with the validation rates at it.

    bench/placements/calibrate.py CALIBRATE.json [--max-benign 0.05]
"""
import argparse, json, struct, sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def next_f32_up(x):
    """The next float32 above x (x a non-negative float32)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    return struct.unpack("<f", struct.pack("<I", bits + 1))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("calibration")
    ap.add_argument("--max-benign", type=float, default=0.05)
    a = ap.parse_args()
    r = json.load(open(a.calibration))
    scores = r["scores"]
    # Per placement: the smallest threshold with at most max_benign of its benign scores >= it,
    # i.e. just above the k-th largest benign score (k = floor(max_benign * n) + 1).
    need = 0.0
    for p, by_class in scores.items():
        b = sorted((s for s in by_class["benign"] if s is not None), reverse=True)
        k = int(a.max_benign * len(b))
        if k < len(b):
            need = max(need, next_f32_up(f32(b[k])))
    t = f32(need)
    print(f"threshold {t!r} (at most {100 * a.max_benign:.0f} % of benign validation values blocked in every placement)")
    print("| placement | attacks blocked | benign blocked |")
    print("|---|---:|---:|")
    for p, by_class in scores.items():
        rate = {}
        for cls in ("attack", "benign"):
            s = [x for x in by_class[cls] if x is not None]
            rate[cls] = 100 * sum(1 for x in s if f32(x) >= t) / max(1, len(s))
        print(f"| {p} | {rate['attack']:.1f} % | {rate['benign']:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
