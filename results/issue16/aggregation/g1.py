for C in [1.0, 10.0, 100.0]:
    run(f'gnmax s40 share.35 1500 C{C}', 0.35, 40, 1500, C=C, reps=2)
run('noiseless share.2 1500', 0.2, 1e-9, 1500, reps=1)
run('noiseless share.35 1500', 0.35, 1e-9, 1500, reps=1)
