#!/usr/bin/env python3
"""The generic VALIDATION split at each bundle's CONTENT-ONLY threshold (bundle.yaml
`content_only_threshold`), from the calibration files of `bench/placements/run.sh --calibrate
--no-format-checks --proxy-bundle BUNDLE --out DIR` (every score audited):

    content_at.py DIR BUNDLE [BUNDLE ...]

Per bundle: the 13 placements together (attacks / benign blocked), the placement with the most
benign values blocked, the fewest attacks blocked among the 13, and query-fit / form-fit."""
import json, re, struct, sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    folder, bundles = sys.argv[1], sys.argv[2:]
    for b in bundles:
        m = open(f"{b}/bundle.yaml").read()
        t = f32(float(re.search(r"^content_only_threshold: (\S+)", m, re.M).group(1)))
        version = re.search(r"^model_version: (\S+)", m, re.M).group(1)
        scores = json.load(open(f"{folder}/calibrate-{version}.json"))["scores"]
        hit = lambda xs: sum(f32(x) >= t for x in xs if x is not None)
        rate = {p: (100 * hit(c["attack"]) / len(c["attack"]), 100 * hit(c["benign"]) / len(c["benign"]))
                for p, c in scores.items()}
        main13 = [p for p in scores if p not in ("query-fit", "form-fit")]
        attacks = 100 * sum(hit(scores[p]["attack"]) for p in main13) / sum(len(scores[p]["attack"]) for p in main13)
        benign = 100 * sum(hit(scores[p]["benign"]) for p in main13) / sum(len(scores[p]["benign"]) for p in main13)
        worst = max(rate, key=lambda p: rate[p][1])
        fewest = min(main13, key=lambda p: rate[p][0])
        print(f"{b} (content-only threshold {t:.4f}): all {attacks:.1f} / {benign:.1f} %, "
              f"most benign blocked {worst} {rate[worst][1]:.1f} %, fewest attacks {fewest} "
              f"{rate[fewest][0]:.1f} %, query-fit / form-fit attacks {rate['query-fit'][0]:.1f} / "
              f"{rate['form-fit'][0]:.1f} %")


if __name__ == "__main__":
    main()
