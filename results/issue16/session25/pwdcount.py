# Session 25 (README.md): per parameter name, the share of the 4,500 queried DISTINCT public
# requests whose value holds each rare character class (< 5 % of them), among all of them, those
# the release labelled benign (relbenign) or malicious (relmal), and those truly benign. Run dir of
# configs/train.yaml at a seed (run-s1 of session 24). A benign query's line may start a request
# in both CSIC normal files ("ambiguous"): the first file's request is read. Lab only: it reads
# the queries' true labels.
import json, sys, re, urllib.parse, collections
R = sys.argv[1]
d = json.load(open(f'{R}/splits.json'))
base = '/work/shared/datasets/csic2010/'
files = {n: open(base + n, encoding='latin-1').read().split('\n') for n in
         ['normalTrafficTraining.txt', 'normalTrafficTest_A.txt', 'anomalousTrafficTest_A.txt']}
def req(ln, mal):
    cands = ['anomalousTrafficTest_A.txt'] if mal else ['normalTrafficTraining.txt', 'normalTrafficTest_A.txt']
    out = []
    for c in cands:
        L = files[c]
        if ln - 1 < len(L) and re.match(r'^(GET|POST|PUT|DELETE) ', L[ln - 1]):
            # read to the blank line after headers, plus a body line for POST
            i = ln - 1; lines = [L[i]]; i += 1
            while i < len(L) and L[i].strip() != '': i += 1
            body = L[i + 1] if L[ln - 1].startswith('POST') and i + 1 < len(L) else ''
            out.append((L[ln - 1], body))
    return out
truth = [int(x) for x in open(f'{R}/features/queries.labels').read().split()]
rel = [int(x) for x in open(f'{R}/aggregate.labels').read().split()]
amb = 0
stats = collections.defaultdict(lambda: collections.Counter())
NAMES = ('pwd', 'password', 'email', 'login', 'nombre', 'apellidos', 'direccion')
for (ln,), t, r in zip(d['lines']['queries'], truth, rel):
    c = req(ln, t == 1)
    if len(c) != 1: amb += 1
    if not c: continue
    line, body = c[0]
    target = line.split(' ')[1]
    q = target.split('?', 1)[1] if '?' in target else ''
    for part in (q + '&' + body).split('&'):
        if '=' not in part: continue
        n, v = part.split('=', 1)
        if n not in NAMES: continue
        v = urllib.parse.unquote_plus(v)
        cls = set('a' if ch.isalpha() else '9' if ch.isdigit() else ch for ch in v)
        for group in ('all', 'relbenign' if r == 0 else 'relmal', 'truebenign' if t == 0 else 'truemal'):
            stats[(n, group)]['#'] += 1
            for ch in cls: stats[(n, group)][ch] += 1
print('ambiguous', amb)
for n in NAMES:
    for g in ('all', 'relbenign', 'truebenign', 'relmal'):
        s = stats[(n, g)]; tot = s['#']
        odd = {ch: f'{c}({1000*c/tot:.0f}‰)' for ch, c in s.most_common() if ch not in '#a9' and c / tot < 0.05}
        print(n, g, tot, odd)
