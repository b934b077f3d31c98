#!/usr/bin/env bash
cd "$(dirname "$0")/.."
GRID=grid2 CSV=seeded.csv SEEDS="1 2" ONLY="p_10k_share50 q_10k_twd2e-4" bash .gpu/grid.sh
GRID=grid2 CSV=fresh.csv SEEDS="fresh fresh fresh" ONLY="d_topk10k p_10k_share50 q_10k_twd2e-4" bash .gpu/grid.sh
GRID=grid2 CSV=fresh_eps.csv SEEDS="fresh" ONLY="s_10k_eps2 t_10k_eps1 u_seeds" bash .gpu/grid.sh
