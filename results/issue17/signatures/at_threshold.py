#!/usr/bin/env python3
"""The generic VALIDATION split at each bundle's own threshold: for every bundle, the share of
attack and benign validation values blocked per placement, read from the calibration file that
`bench/placements/run.sh --calibrate --proxy-bundle BUNDLE --out DIR` wrote for it
(DIR/calibrate-<model_version>.json, every score audited).

    at_threshold.py DIR BUNDLE [BUNDLE ...]
"""
import json, re, struct, sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    folder, bundles = sys.argv[1], sys.argv[2:]
    for b in bundles:
        manifest = open(f"{b}/bundle.yaml").read()
        t = f32(float(re.search(r"^threshold: (\S+)", manifest, re.M).group(1)))
        version = re.search(r"^model_version: (\S+)", manifest, re.M).group(1)
        scores = json.load(open(f"{folder}/calibrate-{version}.json"))["scores"]
        cells, attacks, benign = [], [], []
        for placement, by_class in scores.items():
            rate = {}
            for cls in ("attack", "benign"):
                s = [x for x in by_class[cls] if x is not None]
                rate[cls] = 100 * sum(f32(x) >= t for x in s) / len(s)
            cells.append(f"{placement} {rate['attack']:.1f}/{rate['benign']:.1f}")
            if placement not in ("query", "form", "path"):
                attacks.append(rate["attack"])
                benign.append(rate["benign"])
        print(f"{b} (threshold {t:.4f}): headers + bodies: attacks min {min(attacks):.1f} "
              f"mean {sum(attacks) / len(attacks):.1f} %, benign max {max(benign):.1f} % | "
              + " ".join(cells))


if __name__ == "__main__":
    main()
