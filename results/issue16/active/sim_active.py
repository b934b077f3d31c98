# Lab bench (experiment only: reads a seeded run's noiseless votes on EVERY distinct public
# request, which are private): does choosing the queries by the student's uncertainty (Papernot
# et al. 2018's interactive selection, post-processing of released labels) buy more validation
# TPR at FPR <= 1 % per label than head + uniform?  student = sklearn LR on the answered queries.
# Usage: python3 sim_active.py RUN_DIR  (RUN_DIR from allvotes.config.yaml: queries = all distinct
# public requests, the first 125 the most frequent, the rest in uniform random order).
import numpy as np, sys
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve
R = sys.argv[1]
def f32(name):
    hdr = np.fromfile(f'{R}/features/{name}.f32', dtype=np.uint64, count=3)
    return np.fromfile(f'{R}/features/{name}.f32', dtype=np.float32, offset=24).reshape(int(hdr[1]), int(hdr[2]))
def labels(name): return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])
Xq, yq = f32('queries'), labels('queries'); Xv, yv = f32('student_validation'), labels('student_validation')
Xt, yt = f32('test'), labels('test')
v = np.loadtxt(f'{R}/votes.csv', delimiter=',', dtype=np.int64); n = int(v.sum(1)[0])
shift = round(n * (1 - 2 * 0.35))
counts = np.stack([v[:, 0], v[:, 1] + shift], 1).astype(float)
HEAD = 125
def tpr_at(y, s, f=0.01):
    fpr, tpr, _ = roc_curve(y, s); return tpr[fpr <= f].max()
def fit(idx, lab):
    return LogisticRegression(C=10.0, max_iter=3000, class_weight='balanced').fit(Xq[idx], lab[idx])
def noisy_labels(sigma, rng):
    return np.argmax(counts + rng.normal(0, sigma, counts.shape), 1)
def baseline(Q, lab):
    return np.arange(Q)
def active(Q, lab, first=250, rounds=5, rule='margin'):
    idx = list(range(first)); pool = np.arange(first, len(yq))
    step = (Q - first) // rounds
    for r in range(rounds):
        st = fit(np.array(idx), lab)
        s = st.decision_function(Xq[pool])
        if rule == 'margin':
            key = np.abs(s)
        else:  # near the operating point: the 99th percentile of the benign-labelled answered scores
            a = np.array(idx); sb = st.decision_function(Xq[a[lab[a] == 0]])
            key = np.abs(s - np.quantile(sb, 0.99))
        k = step if r < rounds - 1 else Q - len(idx)
        pick = pool[np.argsort(key)[:k]]
        idx.extend(pick.tolist()); pool = np.setdiff1d(pool, pick)
    return np.array(idx)
def evaluate(name, select, Q, sigma, reps=3):
    out = []
    for rep in range(reps):
        rng = np.random.default_rng(100 + rep)
        lab = yq.copy() if sigma == 0 else noisy_labels(sigma, rng)  # the mechanism's answer for every candidate; only the asked ones are used
        idx = select(Q, lab)
        st = fit(idx, lab)
        out.append((len(idx), (lab[idx] == yq[idx]).mean(), yq[idx].mean(), tpr_at(yv, st.decision_function(Xv)), tpr_at(yt, st.decision_function(Xt))))
    o = np.array(out)
    print(f'{name:44s} Q {Q:5d} σ {sigma:3.0f} right {o[:,1].mean():.3f} mal {o[:,2].mean():.2f} val {o[:,3].mean():.3f} (min {o[:,3].min():.3f}) [test {o[:,4].mean():.3f}]', flush=True)
for Q, sigma in [(500, 80), (1500, 40)]:
    evaluate('head125 + uniform', baseline, Q, sigma)
    evaluate('true labels: head125 + uniform', baseline, Q, 0, reps=1)
    evaluate('noiseless teachers: head125 + uniform', baseline, Q, 1e-9, reps=1)
    for first, rounds in [(250, 5), (250, 10)]:
        for rule in ['margin', 'operating']:
            evaluate(f'active first {first}, {rounds} rounds, {rule}', lambda Q, lab, f=first, r=rounds, u=rule: active(Q, lab, f, r, u), Q, sigma)
