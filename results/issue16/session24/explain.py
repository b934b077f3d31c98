import json, sys; sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__import__('os').path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]; pat = sys.argv[2]
f = json.load(open(f'{R}/featurizer.json')); c = f.get('content', f); voc = c['vocabulary']
st = safetensors(f'{R}/student.safetensors'); w = st['layer0.weight'][0]; b = st['layer0.bias'][0]
Xt, yt = mat(R, 'test'), labels(R, 'test')
d = json.load(open(f'{R}/splits.json'))
an = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../../shared/datasets/csic2010/anomalousTrafficTest_A.txt'), encoding='latin-1').read().split('\n')
s = Xt @ w + b
bundle = open(f'{R}/bundle/bundle.yaml').read()
print([l for l in bundle.split('\n') if 'threshold' in l][:3])
shown = 0
for q in np.where(yt == 1)[0]:
    ln = d['lines']['test'][q][0]
    text = '\n'.join(an[ln-1:ln+14])
    if pat in text and shown < 2:
        shown += 1
        print(an[ln-1][:150], 'score', s[q], 'sigmoid', 1/(1+np.exp(-s[q])))
        row = Xt[q].toarray()[0]
        nz = np.nonzero(row)[0]
        contrib = sorted([(row[i]*w[i], voc[i], row[i], w[i]) for i in nz], key=lambda t: -abs(t[0]))
        for t in contrib[:15]: print(f'   {t[0]:8.3f} {t[1]!r:40} x {t[2]:.3f} w {t[3]:.2f}')
        print('   nnz', len(nz), 'sum of others', sum(t[0] for t in contrib[15:]))
