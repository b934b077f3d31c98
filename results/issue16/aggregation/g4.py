def truth(Q,C=10.0):
    st=LogisticRegression(C=C,max_iter=3000,class_weight='balanced').fit(Xq[:Q],yq[:Q])
    print('true labels',Q,C,'val %.3f'%tpr_at(yv,st.decision_function(Xv)),flush=True)
for Q in [600,1500,3000]: truth(Q)
truth(1500,100.0)
run('noiseless share.2 3000', 0.2, 1e-9, 3000, reps=1)
