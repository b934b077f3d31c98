# Lab bench: how often GNMax publishes a head query (the 125 most frequent public requests) with
# the wrong label, by σ and vote share (200 noise draws on the noiseless votes).
# Usage: python3 head_flips.py RUN_DIR
import numpy as np, sys
R = sys.argv[1]
v = np.loadtxt(f'{R}/votes.csv', delimiter=',', dtype=np.int64); y = np.array([int(x) for x in open(f'{R}/features/queries.labels').read().split()])
H = 125; n = int(v.sum(1)[0])
for share in [0.35, 0.5]:
    for s in [40, 52, 80]:
        shift = round(n * (1 - 2 * share)); fl = []; fa = []
        for rep in range(200):
            rng = np.random.default_rng(rep)
            lab = (np.stack([v[:H, 0], v[:H, 1] + shift], 1) + rng.normal(0, s, (H, 2))).argmax(1)
            fl.append(((lab == 1) & (y[:H] == 0)).sum()); fa.append(((lab == 0) & (y[:H] == 1)).sum())
        print(f'share {share} σ {s}: head benign labelled malicious {np.mean(fl):.1f} (of {(y[:H]==0).sum()}), head attacks labelled benign {np.mean(fa):.1f} (of {(y[:H]==1).sum()})')
