import numpy as np,sys
R=sys.argv[1]
v=np.loadtxt(f'{R}/votes.csv',delimiter=',',dtype=int)
y=np.array([int(l) for l in open(f'{R}/features/queries.labels').read().split()])
m=v[:,1]; n=v.sum(1)[0]
print('attacks among queries', y.mean(), len(y))
bins=[0,1,10,25,50,75,100,125,175,251]
for lo,hi in zip(bins[:-1],bins[1:]):
    sel=(m>=lo)&(m<hi)
    print(f'mal votes [{lo},{hi}): n={sel.sum():4d} attack share={y[sel].mean() if sel.sum() else 0:.2f}')
for s in [0.2,0.25,0.3,0.35,0.5]:
    lab=(m> s*n)
    print(s,'noiseless label acc %.3f'%(lab==y).mean(), 'attacks caught %.3f'%lab[y==1].mean(), 'benign flagged %.3f'%lab[y==0].mean())
