# Lab helpers (session 22, README.md): read one run directory of lab.config.yaml (features,
# labels, teachers as safetensors) and release the noisy average of the teachers' linear models.
# Experiment only: it reads the private teachers and the true labels of the public queries.
import json, struct, sys, warnings
import numpy as np
import scipy.sparse as sp
from sklearn.metrics import roc_curve
warnings.filterwarnings('ignore')


def mat(R, name):
    """A features/*.f32 matrix (dense PATEF32 or compressed-row PATESPF) as a CSR matrix."""
    b = open(f'{R}/features/{name}.f32', 'rb').read()
    rows, cols = struct.unpack('<QQ', b[8:24])
    if b[:8] == b'PATEF32\0':
        return sp.csr_matrix(np.frombuffer(b, dtype=np.float32, offset=24).reshape(rows, cols))
    nnz = struct.unpack('<Q', b[24:32])[0]
    ptr = np.frombuffer(b, dtype=np.uint64, count=rows + 1, offset=32).astype(np.int64)
    o = 32 + 8 * (rows + 1)
    col = np.frombuffer(b, dtype=np.uint32, count=nnz, offset=o).astype(np.int64)
    val = np.frombuffer(b, dtype=np.float32, count=nnz, offset=o + 4 * nnz)
    return sp.csr_matrix((val, col, ptr), shape=(rows, cols))


def labels(R, name):
    return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])


def sets(R):
    """(Xq, yq), (Xv, yv), (Xt, yt): every distinct public request asked, the distinct
    validation requests, the test split with every copy."""
    return [(mat(R, n), labels(R, n)) for n in ('queries', 'student_validation', 'test')]


def safetensors(path):
    b = open(path, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
    hdr = json.loads(b[8:8 + n]); out = {}
    for k, v in hdr.items():
        if k == '__metadata__':
            continue
        s, e = v['data_offsets']
        out[k] = np.frombuffer(b[8 + n + s: 8 + n + e], dtype=np.float32).reshape(v['shape'])
    return out


def teachers(R):
    """The run's linear teachers as rows (weights, bias): shape [teachers, features + 1]."""
    import glob
    T = [safetensors(f) for f in sorted(glob.glob(f'{R}/teachers/*.safetensors'))]
    W = np.stack([t['layer0.weight'][0] for t in T]).astype(np.float64)
    b = np.array([t['layer0.bias'][0] for t in T], dtype=np.float64)
    return np.hstack([W, b[:, None]])


def tpr_at(y, s, f=0.01):
    fpr, tpr, _ = roc_curve(y, s)
    return tpr[fpr <= f].max()


def eps_of(sigma, delta=1e-5):
    """ε of ONE Gaussian release with noise multiplier sigma (RDP α/(2σ²); the trainer's
    conversion, Canonne, Kamath & Steinke 2020, Proposition 12)."""
    a = np.linspace(1.01, 200, 20000)
    return (a / (2 * sigma**2) + (np.log(1 / delta) - np.log(a)) / (a - 1) + np.log(1 - 1 / a)).min()


def sigma_for(eps, delta=1e-5):
    lo, hi = 0.1, 200.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if eps_of(mid, delta) > eps else (lo, mid)
    return hi


def release(th, C, eps, rng, k=3.0):
    """The noisy mean of the teachers' models, each clipped to ℓ2 norm C (one record changes one
    teacher: sensitivity 2C of the sum), N(0, (2σC)²) per coordinate with σ for `eps`, then
    soft-thresholded at k noise standard deviations (post-processing). eps None: no noise."""
    nrm = np.linalg.norm(th, axis=1)
    mean = (th * np.minimum(1, C / nrm)[:, None]).sum(0) / len(th)
    if eps is None:
        return mean[:-1], mean[-1]
    ns = 2 * sigma_for(eps) * C / len(th)
    noisy = mean + rng.normal(0, ns, mean.shape)
    w = noisy[:-1]
    if k:
        w = np.sign(w) * np.maximum(np.abs(w) - k * ns, 0)
    return w, noisy[-1]


def accuracy_threshold(sv, yv):
    """The label threshold most accurate on the labelled validation split (public)."""
    cand = np.quantile(sv, np.linspace(0.3, 0.995, 300))
    return cand[int(np.argmax([((sv > c) == yv).mean() for c in cand]))]
