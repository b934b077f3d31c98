for share,T in [(0.2,215),(0.2,225),(0.2,235),(0.25,200),(0.25,215)]:
    for s1,cap in [(60,1000),(80,1200)]:
        run(f'conf share{share} T{T} s1 {s1} cap{cap} s2 40', share, 40, 3000, conf=(T,s1,cap), reps=2)
