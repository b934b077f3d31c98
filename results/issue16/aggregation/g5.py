import math
def soft(name, sigma, Q, C=10.0, reps=2, transform=None, start=0):
    out=[]
    for rep in range(reps):
        rng=np.random.default_rng(200+rep)
        mm=m[start:start+Q].astype(float)
        # the noisy histogram (n - m + Z0, m + Z1); one teacher moves both counts: same RDP as GNMax(σ)
        z0=rng.normal(0,sigma,Q); z1=rng.normal(0,sigma,Q)
        b=np.maximum(n-mm+z0,0); a=np.maximum(mm+z1,0)
        p=np.clip(a/np.maximum(a+b,1e-9),0,1)
        if transform: p=transform(p)
        X=np.concatenate([Xq[start:start+Q],Xq[start:start+Q]]); y=np.r_[np.ones(Q),np.zeros(Q)]; w=np.r_[p,1-p]
        st=LogisticRegression(C=C,max_iter=3000).fit(X,y,sample_weight=w)
        out.append(tpr_at(yv,st.decision_function(Xv)))
    print(f'{name:40s} val {np.mean(out):.3f} (min {np.min(out):.3f})',flush=True)
soft('soft noiseless 1500',1e-9,1500,reps=1)
soft('soft noiseless 3000',1e-9,3000,reps=1)
for C in [10.0,100.0]:
    soft(f'soft s40 1500 C{C}',40,1500,C=C)
soft('soft s28.3 750',28.3,750)
soft('soft s48.9 2250',48.9,2250)
soft('soft s56.6 3000',56.6,3000)
# sharpen around the calibrated share: p -> sigmoid(k (p - 0.25))
sig=lambda k,c: (lambda p: 1/(1+np.exp(-k*(p-c))))
soft('soft s40 1500 sharp10@.25',40,1500,transform=sig(10,0.25))
soft('soft s40 1500 sharp20@.25',40,1500,transform=sig(20,0.25))
