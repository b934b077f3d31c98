# Writes one label per query (0/1, `-` for none) from the denoised noisy average (clip 75, k 3) for
# a product run with lab-labels.patch (LAB_LABELS=FILE pate-trainer run --config lab.config.yaml):
#   python mklabels.py RUN EPS REP accuracy OUT        threshold most accurate on validation
#   python mklabels.py RUN EPS REP recall:0.99 OUT     highest threshold calling 99 % of the validation attacks
#   python mklabels.py RUN EPS REP band:0.1 OUT        accuracy threshold, queries in the 10 % of validation above it left out
#   python mklabels.py RUN EPS REP fix:bm|fix:mb OUT   accuracy threshold, then the wrong benign→malicious (malicious→benign) labels put right (a diagnosis: reads the true labels)
#   python mklabels.py RUN - - true OUT                the true labels
from common import *
R, eps, rep, mode, out = sys.argv[1:6]
(Xq, yq), (Xv, yv), _ = sets(R)
if mode == 'true':
    lab = yq.astype(str)
else:
    w, b0 = release(teachers(R), 75.0, float(eps), np.random.default_rng(int(rep)), 3.0)
    sq, sv = Xq @ w + b0, Xv @ w + b0
    kind, _, arg = mode.partition(':')
    t = np.quantile(sv[yv == 1], 1 - float(arg)) if kind == 'recall' else accuracy_threshold(sv, yv)
    l = (sq > t).astype(int)
    if kind == 'fix':
        wrong = (l != yq) & (yq == (0 if arg == 'bm' else 1))
        l[wrong] = yq[wrong]
    lab = l.astype(str)
    if kind == 'band':
        hi = np.quantile(sv, min((sv <= t).mean() + float(arg), 1))
        lab = np.where((sq <= t) | (sq > hi), lab, '-')
    print(f'{mode}: threshold {t:.3f}; labels right {(l == yq).mean():.4f}, benign→malicious {((l == 1) & (yq == 0)).sum()}, malicious→benign {((l == 0) & (yq == 1)).sum()}, left out {(lab == "-").sum()}')
open(out, 'w').write('\n'.join(lab) + '\n')
