import os, sys, json, re; sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__import__('os').path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]
Xt, yt = mat(R, 'test'), labels(R, 'test')
st = safetensors(f'{R}/student.safetensors'); print(list(st.keys()))
w = st['layer0.weight'][0]; b = st['layer0.bias'][0]
s = Xt @ w + b
from sklearn.metrics import roc_curve
fpr, tpr, th = roc_curve(yt, s); i = np.where(fpr <= 0.01)[0].max(); t = th[i]
print('tpr at 1%', tpr[i], 'threshold', t)
d = json.load(open(f'{R}/splits.json'))
an = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../../shared/datasets/csic2010/anomalousTrafficTest_A.txt'), encoding='latin-1').read().split('\n')
def req(lines, ln):
    i = ln - 1; first = lines[i]; j = i + 1
    while j < len(lines) and lines[j].strip() != '': j += 1
    body = lines[j + 1] if first.split()[0] in ('POST', 'PUT') else ''
    return first[:170] + ('  BODY ' + body[:220] if body else '')
miss = np.where((yt == 1) & (s < t))[0]
print('missed', len(miss), 'of', (yt == 1).sum())
for q in miss: print(req(an, d['lines']['test'][q][0]))
