#!/usr/bin/env python3
"""Dilution by distinct benign pairs: an SQLi form value (and a benign one) after N distinct
benign pairs in the same form body, scored by `pate-trainer score` exactly as pate-proxy scores
it, for N = 0, 10, 30, 100, 300.

    bench/placements/dilution.py BUNDLE_DIR [THRESHOLD]
"""
import json, subprocess, sys, urllib.parse

WORDS = ["queso", "jamon", "vino", "aceite", "pan", "miel", "cafe", "arroz"]
TAILS = {"attack": "' union select password from usuarios where '1'='1", "benign": "Queso Manchego"}
bundle = sys.argv[1]
extra = ["--threshold", sys.argv[2]] if len(sys.argv) > 2 else []
for n in (0, 10, 30, 100, 300):
    pad = "".join(f"{WORDS[i % 8]}{i}=unidad{i * 7 + 3}&" for i in range(n))
    row = []
    for kind, tail in TAILS.items():
        body = f"id=2&{pad}nombre={urllib.parse.quote_plus(tail)}&precio=39"
        out = subprocess.run(
            ["target/release/pate-trainer", "score", "--bundle", bundle, "--method", "POST",
             "--target", "/tienda1/publico/anadir.jsp", "--header", "Host: localhost:8080",
             "--header", "Content-Type: application/x-www-form-urlencoded", "--body", body] + extra,
            check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        row.append(f"{kind} {r['score']:.4g} {r['verdict']}")
    print(f"{n:3d} pairs ({len(body)} bytes): " + "; ".join(row))
