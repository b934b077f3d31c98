#!/usr/bin/env python3
"""Real browsers' headers on the site's own requests: what share does a bundle block?

CSIC 2010's clients all send one Konqueror User-Agent and one set of Accept headers, so a
detector trained on it has never seen a benign request from another browser. This script takes
CSIC requests (N normal, N anomalous, drawn with a fixed seed) and writes them three ways, in
CSIC's format, for `pate-trainer score --input F --format csic`:

- `csic`: as recorded;
- `ua`: the User-Agent replaced by a real browser's, from a held-out list (`held_out_uas.tsv`:
  300 User-Agents of the npm package `user-agents` 2.1.198, BSD-2-Clause, none of them in the
  training list `data/public/user-agents.txt`, which comes from another package: README.md);
- `browser`: the same User-Agent with the Accept, Accept-Encoding and Accept-Language a browser of
  that family sends (the family's documented defaults; the language from the same npm record),
  Pragma, Cache-control and Accept-Charset dropped as today's browsers do.

Then it scores each file with the bundle and prints, per variant, the share of normal and of
anomalous requests blocked at the bundle's threshold (JSON lines to --out when given).

    python3 bench/browsers/browsers.py --bundle RUN/bundle [--n 300] [--out FILE]
"""
import argparse, json, os, random, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CSIC = os.path.join(ROOT, "..", "shared", "datasets", "csic2010")

# The defaults each family sends on a top-level navigation (MDN, "List of default Accept values").
FAMILIES = {
    "firefox": ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "gzip, deflate, br, zstd", "{lang},{base};q=0.5"),
    "chrome": ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7", "gzip, deflate, br, zstd", "{lang},{base};q=0.9"),
    "safari": ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "gzip, deflate, br", "{lang}"),
}


def family(ua):
    if "Firefox/" in ua:
        return "firefox"
    if "Chrome/" in ua or "CriOS/" in ua:
        return "chrome"
    return "safari"


def records(path):
    """CSIC records: (request line, [(name, value)], body)."""
    text = open(path, encoding="latin-1").read().replace("\r\n", "\n")
    out, cur = [], None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("GET ", "POST ", "PUT ")) and line.endswith("HTTP/1.1"):
            req, headers = line, []
            i += 1
            while i < len(lines) and lines[i] != "":
                n, _, v = lines[i].partition(": ")
                headers.append((n, v))
                i += 1
            i += 1
            body = ""
            if req.startswith(("POST", "PUT")) and i < len(lines) and not lines[i].startswith(("GET ", "POST ", "PUT ")):
                body = lines[i]
                i += 1
            out.append((req, headers, body))
        else:
            i += 1
    return out


def variant(rec, kind, ua, lang):
    req, headers, body = rec
    if kind == "csic":
        return rec
    h = [(n, ua if n.lower() == "user-agent" else v) for n, v in headers]
    if kind == "browser":
        accept, encoding, language = FAMILIES[family(ua)]
        base = lang.split("-")[0]
        repl = {"accept": accept, "accept-encoding": encoding, "accept-language": language.format(lang=lang, base=base)}
        h = [(n, repl.get(n.lower(), v)) for n, v in h if n.lower() not in ("pragma", "cache-control", "accept-charset")]
    return (req, h, body)


def write(path, recs):
    with open(path, "w", encoding="latin-1", newline="") as f:
        for req, headers, body in recs:
            f.write(req + "\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n")
            f.write((body + "\r\n" if body else "") + "\r\n")


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--bundle", required=True)
    a.add_argument("--n", type=int, default=300)
    a.add_argument("--out")
    a.add_argument("--trainer", default=os.path.join(ROOT, "target", "release", "pate-trainer"))
    args = a.parse_args()
    uas = [l.rstrip("\n").split("\t") for l in open(os.path.join(HERE, "held_out_uas.tsv"), encoding="utf-8")]
    rng = random.Random(1)
    normal = rng.sample(records(os.path.join(CSIC, "normalTrafficTest_A.txt")), args.n)
    anomalous = rng.sample(records(os.path.join(CSIC, "anomalousTrafficTest_A.txt")), args.n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("csic", "ua", "browser"):
            row = {"bundle": args.bundle, "variant": kind}
            for cls, recs in (("normal", normal), ("anomalous", anomalous)):
                f = os.path.join(tmp, f"{cls}-{kind}.txt")
                write(f, [variant(r, kind, *uas[k % len(uas)]) for k, r in enumerate(recs)])
                out = subprocess.run([args.trainer, "-q", "score", "--bundle", args.bundle, "--input", f, "--format", "csic", "--label", "benign"],
                                     check=True, capture_output=True, text=True).stdout
                verdicts = [json.loads(l)["verdict"] for l in out.splitlines() if l.strip()]
                if len(verdicts) != len(recs):
                    sys.exit(f"{f}: {len(verdicts)} scores for {len(recs)} requests")
                row[f"{cls}_blocked"] = round(sum(v == "block" for v in verdicts) / len(verdicts), 4)
            rows.append(row)
            print(f"{kind:8s} normal blocked {row['normal_blocked']*100:5.1f} %   anomalous blocked {row['anomalous_blocked']*100:5.1f} %")
    if args.out:
        with open(args.out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
