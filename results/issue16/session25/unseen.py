# unseen.py RUN...: test requests (every copy) carrying p:unseen:path, by class — what pate-proxy counts in patewaf_unseen_path_requests_total
import json, sys; sys.path.insert(0, '/work/main/results/issue16/model-average')
from common import *
for R in sys.argv[1:]:
    f = json.load(open(f'{R}/featurizer.json')); c = f.get('content', f); voc = c['vocabulary']
    k = voc.index('p:unseen:path')
    X, y = mat(R, 'test'), labels(R, 'test')
    hit = (X[:, k].toarray()[:, 0] > 0)
    print(f'{R}: unseen:path on {hit[y == 1].sum()} of {(y == 1).sum()} attacks, {hit[y == 0].sum()} of {(y == 0).sum()} normal requests')
