# Session 25 (README.md): the test split's benign requests the student scores at or above the
# bundle's threshold, and the three features that push each hardest (weight × value), counted.
# Usage: topbenign.py RUN_DIR (linear student). Lab only: it reads the test split.
import json, sys; sys.path.insert(0, '/work/main/results/issue16/model-average')
from common import *
import collections
R = sys.argv[1]
f = json.load(open(f'{R}/featurizer.json')); c = f.get('content', f); voc = c['vocabulary']
st = safetensors(f'{R}/student.safetensors'); w = st['layer0.weight'][0]; b = st['layer0.bias'][0]
Xt, yt = mat(R, 'test'), labels(R, 'test')
d = json.load(open(f'{R}/splits.json'))
s = Xt @ w + b
ben = np.where(yt == 0)[0]
thr = float([l for l in open(f'{R}/bundle/bundle.yaml') if l.startswith('threshold')][0].split(':')[1])
lt = np.log(thr/(1-thr))
top = ben[np.argsort(-s[ben])]
above = [q for q in top if s[q] >= lt]
print('benign above threshold', len(above), 'of', len(ben))
cnt = collections.Counter()
for q in above:
    row = Xt[q].toarray()[0]; nz = np.nonzero(row)[0]
    contrib = sorted([(row[i]*w[i], voc[i]) for i in nz], key=lambda t: -t[0])
    for t in contrib[:3]: cnt[t[1]] += 1
print(cnt.most_common(25))
