#!/usr/bin/env python3
"""Issue 16's lab bench for the teachers (EVALUATION.md, "L1 teachers"). NOT private: it reads the
private features of a SEEDED simulation run (features/private.f32, shards are re-drawn here at
random, 250 of them) and the queries' true labels; a diagnostic of a simulation only.

For a teacher variant it trains 250 teachers, counts their votes on the run's 1,500 queries and
prints: the vote share's AUC and TPR at FPR <= 1 % on the queries, the noiseless label accuracy at
vote shares 0.2 / 0.35 / 0.5, the best GNMax (sigma 40) label accuracy over the vote shares, and a
scikit-learn student (LR, C = 10) trained on those noisy labels, read on the validation split and
the test split (the test column is a diagnostic, nothing was chosen on it).
Needs numpy, scipy, scikit-learn.
  python3 results/issue16/cpu/teacher_lab.py RUN "run('LR l2 C=100', LR(100)); run('LR l1 C=100', LR(100, penalty='l1', solver='liblinear'))"
  python3 results/issue16/cpu/teacher_lab.py RUN "run('adam replica', lambda X, y: AdamL1().fit(X, y))"
  python3 results/issue16/cpu/teacher_lab.py RUN "run('fista', lambda X, y: Fista(l1=3e-4, iters=300, step=8).fit(X, y))"
  python3 results/issue16/cpu/teacher_lab.py RUN "label_budget(500, LR(100, penalty='l1', solver='liblinear'), 80, 500, 0.3)"
"""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, scipy.sparse as sp, json, sys, time, os
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve
R=sys.argv[1]
def f32(name):
    hdr=np.fromfile(f'{R}/features/{name}.f32',dtype=np.uint64,count=3)
    a=np.memmap(f'{R}/features/{name}.f32',dtype=np.float32,mode='r',offset=24,shape=(int(hdr[1]),int(hdr[2])))
    return sp.vstack([sp.csr_matrix(np.asarray(a[i:i+4000])) for i in range(0,a.shape[0],4000)]).tocsr()
def labels(name): return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])
cache=f'{R}/lab.npz'
if os.path.exists(cache):
    z=np.load(cache,allow_pickle=True); D=z['D'].item()
else:
    D={n:(f32(n),labels(n)) for n in ['private','queries','student_validation','test']}
    np.savez(cache,D=np.array(D,dtype=object))
Xp,yp=D['private']; Xq,yq=D['queries']; Xv,yv=D['student_validation']; Xt,yt=D['test']
shards=json.load(open(f'{R}/shards.json'))
if isinstance(shards,dict): shards=shards.get('shards',shards)
voc=json.load(open(f'{R}/featurizer.json'))['vocabulary']
def tpr_at(y,s,f=0.01):
    fpr,tpr,_=roc_curve(y,s); return tpr[fpr<=f].max()
def report(tag,share):
    accs={t:round(((share>=t)==yq).mean(),3) for t in [0.2,0.35,0.5]}
    print(f'{tag:40s} AUC {roc_auc_score(yq,share):.4f} TPR@1% {tpr_at(yq,share):.3f} acc {accs}',flush=True)
rng0=np.random.default_rng(5)
def teachers(n,C=100,member=0.5):
    perm=rng0.permutation(len(yp)); sh=np.array_split(perm,n)
    votes=np.zeros(len(yq))
    for s in sh:
        if yp[s].min()==yp[s].max(): votes+= yp[s][0]; continue
        m=LogisticRegression(C=C,class_weight='balanced',max_iter=2000).fit(Xp[s],yp[s])
        votes+=m.predict_proba(Xq)[:,1]>=member
    return votes
def noisy(votes,n,sh,sigma,rng):
    d=votes+rng.normal(0,sigma,len(votes)) - (n-votes+rng.normal(0,sigma,len(votes))) + n*(1-2*sh)
    return (d>0).astype(int)
def student(lab):
    st=LogisticRegression(C=10,max_iter=3000,class_weight='balanced').fit(Xq,lab)
    return tpr_at(yv,st.decision_function(Xv)), tpr_at(yt,st.decision_function(Xt))
kind=np.array([t.split(':')[0] if ':' in t else 'w' for t in voc])
perm=np.random.default_rng(5).permutation(len(yp)); SH=np.array_split(perm,250)
def run(tag, fit, cols=None, member=0.5, soft=False):
    t=time.time(); v=np.zeros(len(yq))
    for s in SH:
        Xs=Xp[s] if cols is None else Xp[s][:,cols]; Xqq=Xq if cols is None else Xq[:,cols]
        p=fit(Xs,yp[s]).predict_proba(Xqq)[:,1]
        v+= p if soft else (p>=member)
    n=250; report(tag,v/n)
    rng=np.random.default_rng(1); best=None
    for sh in [0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5]:
        a=np.mean([(noisy(v,n,sh,40,rng)==yq).mean() for _ in range(5)])
        if best is None or a>best[0]: best=(a,sh)
    va,te=student(noisy(v,n,best[1],40,rng))
    print(f'   best share {best[1]} noisy acc {best[0]:.3f}; student val {va:.3f} test {te:.3f}  ({time.time()-t:.0f}s)',flush=True)
LR=lambda C,**k: (lambda X,y: LogisticRegression(C=C,class_weight='balanced',max_iter=2000,**k).fit(X,y))
def sig(z): return 1/(1+np.exp(-z))
class AdamL1:
    def __init__(s,lr=0.2,epochs=24,batch=16,l1=0.0,wd=5e-5,decoupled=True): s.__dict__.update(locals())
    def fit(s,X,y):
        X=X.tocsr(); n,d=X.shape; rng=np.random.default_rng(0)
        pw=(y==0).sum()/max((y==1).sum(),1)
        w=np.zeros(d); b=0.0; m=np.zeros(d); v=np.zeros(d); mb=vb=0.0; t=0
        for ep in range(s.epochs):
            perm=rng.permutation(n)
            for i in range(0,n,s.batch):
                j=perm[i:i+s.batch]; xb=X[j]; yb=y[j]
                p=sig(xb@w+b); g=(pw*yb*(p-1)+(1-yb)*p)/len(j)
                gw=xb.T@g + s.wd*w; gb=g.sum()
                if not s.decoupled: gw=gw+s.l1*np.sign(w)
                t+=1; m=.9*m+.1*gw; v=.999*v+.001*gw*gw; mb=.9*mb+.1*gb; vb=.999*vb+.001*gb*gb
                c1=1-.9**t; c2=1-.999**t
                w-=s.lr*(m/c1)/(np.sqrt(v/c2)+1e-8); b-=s.lr*(mb/c1)/(np.sqrt(vb/c2)+1e-8)
                if s.decoupled and s.l1>0: w=np.sign(w)*np.maximum(np.abs(w)-s.lr*s.l1,0)
        s.w,s.b=w,b; return s
    def predict_proba(s,X):
        p=sig(X@s.w+s.b); return np.stack([1-p,p],1)
class Fista:
    def __init__(s,l1=1e-4,iters=300,step=None): s.__dict__.update(locals())
    def fit(s,X,y):
        X=X.tocsr(); n,d=X.shape; pw=(y==0).sum()/max((y==1).sum(),1)
        L=max(pw,1)/4*1.05; st=(s.step or 1.0)/L if not getattr(s,"fixed",None) else s.fixed
        w=np.zeros(d); b=0.0; zw=w.copy(); zb=b; tk=1.0
        for it in range(s.iters):
            p=sig(X@zw+zb); g=(pw*y*(p-1)+(1-y)*p)/n
            w1=zw-st*(X.T@g); b1=zb-st*g.sum()
            w1=np.sign(w1)*np.maximum(np.abs(w1)-st*s.l1,0)
            t1=(1+np.sqrt(1+4*tk*tk))/2
            zw=w1+(tk-1)/t1*(w1-w); zb=b1+(tk-1)/t1*(b1-b); w,b,tk=w1,b1,t1
        s.w,s.b=w,b; return s
    def predict_proba(s,X):
        p=sig(X@s.w+s.b); return np.stack([1-p,p],1)
def votes_n(n, fit):
    """Malicious votes of n teachers (random shards of the private split) on the queries."""
    perm=np.random.default_rng(5).permutation(len(yp)); sh=np.array_split(perm,n); v=np.zeros(len(yq))
    for s in sh:
        if yp[s].min()==yp[s].max(): v+=yp[s][0]; continue
        v+= fit(Xp[s],yp[s]).predict_proba(Xq)[:,1]>=0.5
    return v
def label_budget(n, fit, sigma, Q, share, draws=3):
    """GNMax labels (sigma, vote share) of n teachers on the first Q queries, a student on them."""
    v=votes_n(n, fit); res=[]
    for r in range(draws):
        lab=noisy(v,n,share,sigma,np.random.default_rng(10+r))[:Q]
        st=LogisticRegression(C=10,max_iter=3000,class_weight='balanced').fit(Xq[:Q],lab)
        res.append(((lab==yq[:Q]).mean(), tpr_at(yv,st.decision_function(Xv)), tpr_at(yt,st.decision_function(Xt))))
    r=np.array(res)
    print(f'n={n} sigma={sigma} Q={Q} share {share}: labels right {r[:,0].mean():.3f} student val {r[:,1].mean():.3f} (min {r[:,1].min():.3f}) test {r[:,2].mean():.3f}',flush=True)
exec(sys.argv[2])
