# Simulate aggregation mechanisms on a seeded run's noiseless votes (experiment only: the votes
# are private, this is the lab bench); student = sklearn LR on the answered queries.
import numpy as np, sys, json, time
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve, roc_auc_score
R=sys.argv[1]
def f32(name):
    hdr=np.fromfile(f'{R}/features/{name}.f32',dtype=np.uint64,count=3)
    return np.fromfile(f'{R}/features/{name}.f32',dtype=np.float32,offset=24).reshape(int(hdr[1]),int(hdr[2]))
def labels(name): return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])
Xq,yq=f32('queries'),labels('queries'); Xv,yv=f32('student_validation'),labels('student_validation')
Xt,yt=(f32('test'),labels('test')) if '--test' in sys.argv else (None,None)
v=np.loadtxt(f'{R}/votes.csv',delimiter=',',dtype=np.int64); m=v[:,1]; n=int(v.sum(1)[0])
def tpr_at(y,s,f=0.01):
    fpr,tpr,_=roc_curve(y,s); return tpr[fpr<=f].max()
def gnmax(counts,sigma,rng): return np.argmax(counts+rng.normal(0,sigma,counts.shape),1)
def run(name, share, sigma, queries, conf=None, C=10.0, reps=3):
    out=[]
    for rep in range(reps):
        rng=np.random.default_rng(100+rep)
        c=round(n*(1-2*share)); Q=min(queries,len(m))
        counts=np.stack([n-m[:Q], m[:Q]+c],1).astype(float) if c>=0 else np.stack([n-m[:Q]-c, m[:Q]],1).astype(float)
        ans=np.ones(Q,bool)
        if conf:
            T,s1,cap=conf
            ok=counts.max(1)+rng.normal(0,s1,Q)>=T
            ans=ok & (np.cumsum(ok)<=cap)
        lab=gnmax(counts,sigma,rng)
        idx=np.where(ans)[0]; y=lab[idx]
        acc=(y==yq[idx]).mean()
        st=LogisticRegression(C=C,max_iter=3000,class_weight='balanced').fit(Xq[idx],y)
        r=dict(answered=len(idx),acc=acc,val=tpr_at(yv,st.decision_function(Xv)))
        if Xt is not None: r['test']=tpr_at(yt,st.decision_function(Xt))
        out.append(r)
    agg={k:np.mean([o[k] for o in out]) for k in out[0]}
    mn={k:np.min([o[k] for o in out]) for k in out[0]}
    print(f"{name:40s} ans {agg['answered']:6.0f} acc {agg['acc']:.3f} val {agg['val']:.3f} (min {mn['val']:.3f})"+(f" test {agg['test']:.3f} (min {mn['test']:.3f})" if 'test' in agg else ''),flush=True)
exec(open(sys.argv[2]).read())
