import math
for Q in [375,600,900,1500,2200]:
    sig=math.sqrt(Q/0.9375)
    for share in [0.25,0.3,0.35]:
        run(f'gnmax Q{Q} s{sig:.1f} share{share}', share, sig, Q, reps=3)
