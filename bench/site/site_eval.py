#!/usr/bin/env python3
"""How a bundle does on a real site's held-out traffic (EVALUATION.md, "Any site, no labels").

    python3 bench/site/site_eval.py --bundle RUN/bundle [--trainer target/release/pate-trainer]
        [--heldout data/sites/semicomplete/heldout.log]
        [--suspicious data/sites/semicomplete/heldout-suspicious.txt]
        [--attacks ../shared/datasets/httpparams/payload_test.csv]
        [--per-class 2000] [--seed 1] [--no-extended] --out DIR

1. The held-out log scored as Apache lines (`pate-trainer score --format apache`), with the
   site's format checks (default) and content only (`--no-format-checks`): share of the NORMAL
   requests (held-out lines minus the suspicious ones) blocked, the 20 highest-scoring normal
   requests, blocked normal requests by first path segment, share of suspicious lines blocked.
   The Apache reader keeps the method, the target and, in the combined format, the Referer and
   User-Agent (no Host, no other header).
2. Public values (payload_test.csv: `anom` = attacks, `norm` = benign values, the benign-value
   control) placed into the held-out normal GET requests, written as a `target,label` CSV and
   scored with `--format csv` (every record a GET without headers), both modes:
     none        the carrier unchanged (baseline of the carriers as CSV records)
     query       replaces the value of one (random) query parameter (carriers with a query)
     query-new   appended as a new parameter `q` (`&q=` or `?q=`)
     path        a new path segment before the last one (`/a/b.html` -> `/a/V/b.html`)
   Values are percent-encoded as a browser would (everything outside unreserved chars:
   urllib.parse.quote(v, safe="")), as bench/placements/replay.py does.
3. Unless --no-extended: the header and body placements of bench/placements/replay.py
   (hdr:user-agent, hdr:referer, hdr:cookie, hdr:x-forwarded, hdr:other, form, json:value,
   xml:text, text) on the same carriers, written in CSIC 2010's raw-request format (the only
   `--input` format that carries headers and bodies) and scored with `--format csic`. Header
   placements keep the carrier's GET target; body placements are a POST to the carrier's path.
   The two multipart placements (mp:field, mp:filename) need a blank line inside the body, which
   CSIC's format cannot carry: they are written as pate-proxy capture lines (JSON, whole
   requests) and scored with `--format capture`.
4. The held-out normal requests again as capture lines with a Host header (the site's name; an
   IP and port; that with a load balancer's X-Forwarded-For and X-Forwarded-Proto) beside the
   log's Referer and User-Agent; and a fixed list of
   ordinary pages of any site (`/`, search, feed, static files, login and contact forms) with a
   browser's headers: none of them should be blocked.
Same seed -> same values, carriers and parameters. Writes DIR/summary.json, DIR/summary.md, the
placed requests (placed.csv, placed-meta.jsonl, placed-*.csic.txt) and the raw scores (scores/).
"""
import argparse, collections, csv, json, os, random, re, subprocess, sys, time, urllib.parse

REQ = re.compile(r'\[[^\]]*\] "(\S+) (\S+)(?: (\S+))?"')
COMBINED_TAIL = re.compile(r'" \d{3} \S+ "([^"]*)" "([^"]*)"')
SITE = "www.semicomplete.com"
# The Host a request carries: the site's name; an IP and port, as the onboarding e2e sends it;
# and that with the headers a load balancer in front adds.
HOSTS = (("site name", [("Host", SITE)]), ("ip:port", [("Host", "127.0.0.1:8080")]),
         ("behind a proxy", [("Host", "127.0.0.1:8080"), ("X-Forwarded-For", "203.0.113.7"),
                             ("X-Forwarded-Proto", "https")]))
BROWSER = [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
           ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
           ("Accept-Language", "en-US,en;q=0.5"), ("Accept-Encoding", "gzip, deflate")]
# Ordinary pages of any site (not from the log): none should be blocked.
ORDINARY = [("GET", "/", None), ("GET", "/index.html", None), ("GET", "/search?q=hello+world", None),
            ("GET", "/feed/", None), ("GET", "/css/style.css", None), ("GET", "/favicon.ico", None),
            ("GET", "/login.php", None), ("GET", "/wp-login.php", None),
            ("GET", "/contact.php?name=Jane+Doe&email=jane%40example.com", None),
            ("POST", "/contact.php", ("application/x-www-form-urlencoded",
                                      "name=Jane+Doe&email=jane%40example.com&message=Hello%2C+nice+blog%21")),
            ("POST", "/login.php", ("application/x-www-form-urlencoded", "user=jane&password=s3cret%21")),
            ("GET", "/blog/2009/03/01/some-post-title/", None), ("GET", "/images/photo_01.jpg", None)]


def enc(v):
    return urllib.parse.quote(v, safe="")


def hdr(v):
    return "".join(c for c in v if c >= " " and c != "\x7f")


def json_u(v):
    return "".join(c if c.isascii() and c.isalnum() else "\\u%04x" % ord(c) for c in v if ord(c) < 0x10000)


def xml_esc(v):
    return v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;").replace('"', "&quot;")


def origin_form(t):
    low = t.lower()
    for p in ("http://", "https://"):
        if low.startswith(p):
            rest = t[len(p):]
            m = re.search(r"[/?]", rest)
            if not m:
                return "/"
            return rest[m.start():] if rest[m.start()] == "/" else "/" + rest[m.start():]
    return t


def split_target(t):
    path, q, query = t.partition("?")
    return path, (query if q else None)


# -- placements that need only a target (CSV) -------------------------------------------------

def place_query(t, v, rng):
    path, query = split_target(t)
    parts = re.split(r"([&;])", query)
    idx = [i for i in range(0, len(parts), 2) if parts[i] != ""]
    i = rng.choice(idx)
    name = parts[i].partition("=")[0]
    parts[i] = f"{name}={enc(v)}"
    return f"{path}?{''.join(parts)}"


def place_query_new(t, v, rng):
    path, query = split_target(t)
    if query is None:
        return f"{t}?q={enc(v)}"
    sep = "" if query == "" or query.endswith("&") else "&"
    return f"{t}{sep}q={enc(v)}"


def place_path(t, v, rng):
    path, query = split_target(t)
    segs = path.split("/")
    segs.insert(max(1, len(segs) - 1), enc(v))
    return "/".join(segs) + ("" if query is None else "?" + query)


TARGET_PLACEMENTS = {
    "none": lambda t, v, rng: t,
    "query": place_query,
    "query-new": place_query_new,
    "path": place_path,
}


# -- header and body placements (CSIC raw-request format) -------------------------------------

FORM = "application/x-www-form-urlencoded"
EXTENDED = {
    "hdr:user-agent": lambda t, v: ("GET", t, [("User-Agent", hdr(v))], None),
    "hdr:referer": lambda t, v: ("GET", t, [("Referer", f"http://{SITE}/?q={enc(v)}")], None),
    "hdr:cookie": lambda t, v: ("GET", t, [("Cookie", f"sid=ABC123; pref={enc(v)}")], None),
    "hdr:x-forwarded": lambda t, v: ("GET", t, [("X-Forwarded-For", hdr(v))], None),
    "hdr:other": lambda t, v: ("GET", t, [("X-Search", hdr(v))], None),
    "form": lambda t, v: ("POST", split_target(t)[0], [], (FORM, f"q={enc(v)}")),
    "json:value": lambda t, v: ("POST", split_target(t)[0], [], ("application/json", '{"id": 2, "q": "' + json_u(v) + '"}')),
    "xml:text": lambda t, v: ("POST", split_target(t)[0], [], ("text/xml", f"<?xml version=\"1.0\"?><soap:Envelope><soap:Body><q>{xml_esc(v)}</q></soap:Body></soap:Envelope>")),
    "text": lambda t, v: ("POST", split_target(t)[0], [], ("text/plain", v)),
}


MULTIPART_CT = "multipart/form-data; boundary=XyZ"
MULTIPART = {
    "mp:field": lambda t, v: ("POST", split_target(t)[0], [], (MULTIPART_CT,
        f"--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n{v}\r\n--XyZ--\r\n")),
    "mp:filename": lambda t, v: ("POST", split_target(t)[0], [], (MULTIPART_CT,
        "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"%s\"\r\n\r\nhello\r\n--XyZ--\r\n"
        % hdr(v).replace('"', "%22"))),
}


def capture_line(method, target, headers, body):
    """One pate-proxy capture line (JSON): the request as the proxy recorded it."""
    hs = list(headers)
    line = {"capture": 1, "method": method, "target": target, "headers": hs}
    if body is not None:
        ct, text = body
        hs.append(["Content-Type", ct])
        line["body"] = text
    return json.dumps(line) + "\n"


def csic_request(method, target, headers, body):
    def clean(s):  # CSIC's format is line based: no line breaks, no blank body lines
        return s.replace("\r", " ").replace("\n", " ")
    out = [f"{method} {target} HTTP/1.1"]
    out += [f"{n}: {clean(x).strip()}" for n, x in headers]
    if body is not None:
        ct, text = body
        b = clean(text)
        out += [f"Content-Type: {ct}", f"Content-Length: {len(b.encode())}", "", b]
    else:
        out += [""]
    return "\r\n".join(out) + "\r\n\r\n"


# -- scoring ----------------------------------------------------------------------------------

def score(a, path, fmt, nofc, log):
    cmd = [a.trainer, "-q", "score", "--bundle", a.bundle, "--input", path, "--format", fmt]
    if nofc:
        cmd.append("--no-format-checks")
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    log.append({"cmd": " ".join(cmd), "seconds": round(time.time() - t0, 2)})
    rows = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    return rows, p.stdout


def pct(b, n):
    return f"{100 * b / n:.1f} % ({b}/{n})" if n else "n/a"


MODES = (("format", False), ("content", True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # defaults: from the repo root
    ap.add_argument("--trainer", default=os.path.join(root, "target/release/pate-trainer"))
    ap.add_argument("--heldout", default=os.path.join(root, "data/sites/semicomplete/heldout.log"))
    ap.add_argument("--suspicious", default=os.path.join(root, "data/sites/semicomplete/heldout-suspicious.txt"))
    ap.add_argument("--attacks", default=os.path.normpath(os.path.join(root, "../shared/datasets/httpparams/payload_test.csv")))
    ap.add_argument("--per-class", type=int, default=2000, help="attack and benign values per placement")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--no-extended", action="store_true", help="only the target placements (no headers/bodies)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    t_start = time.time()
    os.makedirs(os.path.join(a.out, "scores"), exist_ok=True)
    log = []

    # ---- 1. the held-out log ----
    suspicious = {}
    for line in open(a.suspicious, encoding="utf-8"):
        if line.strip():
            no, _, reason = line.rstrip("\n").partition("\t")
            suspicious[int(no)] = reason
    reqs = {}
    with open(a.heldout, encoding="latin-1") as f:
        for no, line in enumerate(f, 1):
            m = REQ.search(line)
            if m:
                reqs[no] = (m.group(1), origin_form(m.group(2)))
    modes = {}
    for mode, nofc in MODES:
        rows, raw = score(a, a.heldout, "apache", nofc, log)
        open(os.path.join(a.out, "scores", f"heldout-{mode}.jsonl"), "w").write(raw)
        modes[mode] = {r["line"]: r for r in rows}
    scored = set(modes["format"])
    normal = sorted(n for n in scored if n not in suspicious)
    susp = sorted(n for n in scored if n in suspicious)
    heldout_res = {}
    for mode, _ in MODES:
        nb = sum(modes[mode][n]["verdict"] == "block" for n in normal)
        sb = sum(modes[mode][n]["verdict"] == "block" for n in susp)
        heldout_res[mode] = {"normal_blocked": nb, "normal": len(normal), "suspicious_blocked": sb,
                             "suspicious": len(susp)}
    top_rows = {}
    for mode, _ in MODES:
        other = "content" if mode == "format" else "format"
        top_rows[mode] = [{"line": n, "method": reqs.get(n, ("?", "?"))[0], "target": reqs.get(n, ("?", "?"))[1],
                           "score": modes[mode][n]["score"], "verdict": modes[mode][n]["verdict"],
                           "other_mode_score": modes[other][n]["score"], "other_mode_verdict": modes[other][n]["verdict"]}
                          for n in sorted(normal, key=lambda n: (-modes[mode][n]["score"], n))[: a.top]]
    by_seg = {}
    for mode, _ in MODES:
        c = collections.Counter()
        for n in normal:
            if modes[mode][n]["verdict"] == "block":
                path = split_target(reqs.get(n, ("", "/?"))[1])[0]
                seg = "/" + path.lstrip("/").split("/", 1)[0]
                c[seg + ("/…" if path.count("/") > 1 else "")] += 1
        by_seg[mode] = c.most_common(10)

    # ---- 1b. the held-out normal requests with a Host header (and the log's Referer/UA) ----
    heads = {}
    with open(a.heldout, encoding="latin-1") as f:
        for no, line in enumerate(f, 1):
            m = COMBINED_TAIL.search(line)
            heads[no] = [(n, v) for n, v in (("Referer", m.group(1)), ("User-Agent", m.group(2)))
                         if v and v != "-"] if m else []
    host_res = {}
    for hname, host in HOSTS:
        path = os.path.join(a.out, f"heldout-host-{re.sub(r'[^a-z]+', '_', hname)}.capture.jsonl")
        lines = [n for n in normal if n in reqs]
        with open(path, "w", encoding="utf-8") as f:
            for n in lines:
                f.write(capture_line(reqs[n][0], reqs[n][1], host + heads.get(n, []), None))
        for mode, nofc in MODES:
            rs, _ = score(a, path, "capture", nofc, log)
            host_res.setdefault(hname, {})[mode] = [sum(r["verdict"] == "block" for r in rs), len(rs)]

    # ---- 4. ordinary pages of any site ----
    probe_rows = []
    for hname, host in HOSTS:
        path = os.path.join(a.out, f"ordinary-{re.sub(r'[^a-z]+', '_', hname)}.capture.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for method, target, body in ORDINARY:
                f.write(capture_line(method, target, host + BROWSER, body))
        for mode, nofc in MODES:
            rs, _ = score(a, path, "capture", nofc, log)
            for (method, target, _), r in zip(ORDINARY, rs):
                probe_rows.append({"host": hname, "mode": mode, "method": method, "target": target,
                                   "score": r["score"], "verdict": r["verdict"]})

    # ---- 2./3. placements ----
    rows = list(csv.DictReader(open(a.attacks, newline="", encoding="utf-8")))
    rng = random.Random(a.seed)
    values = {
        "attack": rng.sample([r for r in rows if r["label"] == "anom"], min(a.per_class, sum(r["label"] == "anom" for r in rows))),
        "benign": rng.sample([r for r in rows if r["label"] == "norm"], min(a.per_class, sum(r["label"] == "norm" for r in rows))),
    }
    carriers = [reqs[n][1] for n in normal if n in reqs and reqs[n][0] == "GET"]
    with_query = [t for t in carriers if split_target(t)[1] not in (None, "") and re.sub(r"[&;]", "", split_target(t)[1])]
    placed, meta = [], []
    for pl, fn in TARGET_PLACEMENTS.items():
        pool = with_query if pl == "query" else carriers
        for cls in ("attack", "benign"):
            prng = random.Random(f"{a.seed}:{pl}:{cls}")
            for r in values[cls]:
                t = prng.choice(pool)
                placed.append((fn(t, r["payload"], prng), "malicious" if cls == "attack" else "benign"))
                meta.append({"placement": pl, "class": cls, "type": r["attack_type"], "carrier": t})
    csv_path = os.path.join(a.out, "placed.csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["target", "label"])
        w.writerows(placed)
    with open(os.path.join(a.out, "placed-meta.jsonl"), "w") as f:
        for m, (t, _) in zip(meta, placed):
            f.write(json.dumps({**m, "target": t}) + "\n")
    place_scores = {}
    for mode, nofc in MODES:
        rs, raw = score(a, csv_path, "csv", nofc, log)
        open(os.path.join(a.out, "scores", f"placed-{mode}.jsonl"), "w").write(raw)
        if len(rs) != len(meta):
            sys.exit(f"{csv_path}: {len(rs)} scores for {len(meta)} rows")
        place_scores[mode] = [r["verdict"] == "block" for r in rs]
    ext_meta, ext_scores = [], {m: [] for m, _ in MODES}
    if not a.no_extended:
        placements_ext = [(pl, fn, "csic") for pl, fn in EXTENDED.items()]
        placements_ext += [(pl, fn, "capture") for pl, fn in MULTIPART.items()]
        for pl, fn, fmt in placements_ext:
            for cls in ("attack", "benign"):
                prng = random.Random(f"{a.seed}:{pl}:{cls}")
                ext = "csic.txt" if fmt == "csic" else "capture.jsonl"
                path = os.path.join(a.out, f"placed-{pl.replace(':', '_')}-{cls}.{ext}")
                write = csic_request if fmt == "csic" else capture_line
                with open(path, "w", encoding="utf-8", newline="") as f:
                    for r in values[cls]:
                        t = prng.choice(carriers)
                        f.write(write(*fn(t, r["payload"])))
                        ext_meta.append({"placement": pl, "class": cls, "type": r["attack_type"], "carrier": t})
                for mode, nofc in MODES:
                    rs, _ = score(a, path, fmt, nofc, log)
                    if len(rs) != len(values[cls]):
                        sys.exit(f"{path}: {len(rs)} scores for {len(values[cls])} requests")
                    ext_scores[mode] += [r["verdict"] == "block" for r in rs]
    all_meta = meta + ext_meta
    all_scores = {m: place_scores[m] + ext_scores[m] for m, _ in MODES}
    placements = {}
    for i, m in enumerate(all_meta):
        p = placements.setdefault(m["placement"], {})
        for mode, _ in MODES:
            c = p.setdefault(mode, {}).setdefault(m["class"], [0, 0])
            c[0] += all_scores[mode][i]
            c[1] += 1
            if m["class"] == "attack":
                t = p[mode].setdefault("by_type", {}).setdefault(m["type"], [0, 0])
                t[0] += all_scores[mode][i]
                t[1] += 1

    # ---- report ----
    bundle_yaml = open(os.path.join(a.bundle, "bundle.yaml")).read()
    ver = re.search(r"^model_version:\s*(\S+)", bundle_yaml, re.M)
    thr = re.search(r"^threshold:\s*(\S+)", bundle_yaml, re.M)
    cthr = re.search(r"^content_only_threshold:\s*(\S+)", bundle_yaml, re.M)
    md = [f"# Site evaluation: bundle `{a.bundle}`", "",
          f"model_version {ver.group(1) if ver else '?'}, threshold {thr.group(1) if thr else '?'}, "
          f"content_only_threshold {cthr.group(1) if cthr else '-'}; held-out log `{a.heldout}` "
          f"({len(scored)} requests scored: {len(normal)} normal, {len(susp)} suspicious); seed {a.seed}", "",
          "## Held-out traffic blocked", "",
          "| mode | normal blocked | suspicious blocked (informative) |", "|---|---:|---:|"]
    for mode, _ in MODES:
        h = heldout_res[mode]
        md.append(f"| {'format checks' if mode == 'format' else 'content only'} | "
                  f"{pct(h['normal_blocked'], h['normal'])} | {pct(h['suspicious_blocked'], h['suspicious'])} |")
    md += ["", "### Held-out normal requests as whole requests with a Host header (and the log's Referer and "
           "User-Agent), blocked", "", "| Host | format checks | content only |", "|---|---:|---:|"]
    for hname, r in host_res.items():
        md.append(f"| {hname} | {pct(*r['format'])} | {pct(*r['content'])} |")
    md += ["", "### Ordinary pages of any site (browser headers), blocked", "",
           "| request | " + " | ".join(f"{h} {m}" for h, _ in HOSTS for m, _ in MODES) + " |",
           "|---|" + "---:|" * (len(HOSTS) * len(MODES))]
    for method, target, _ in ORDINARY:
        cells = [next(f"{r['score']:.3f} {'**block**' if r['verdict'] == 'block' else 'allow'}" for r in probe_rows
                      if r["host"] == h and r["mode"] == m and r["method"] == method and r["target"] == target)
                 for h, _ in HOSTS for m, _ in MODES]
        md.append(f"| {method} `{target}` | " + " | ".join(cells) + " |")
    ordinary_blocked = {f"{h} {m}": sum(r["verdict"] == "block" for r in probe_rows if r["host"] == h and r["mode"] == m)
                        for h, _ in HOSTS for m, _ in MODES}
    for mode, _ in MODES:
        name, other = ("format checks", "content-only") if mode == "format" else ("content only", "format-checks")
        md += ["", f"### The {a.top} highest-scoring normal requests ({name})", "",
               f"| line | method | target | score | verdict | {other} score | verdict |", "|---:|---|---|---:|---|---:|---|"]
        for r in top_rows[mode]:
            t = r["target"] if len(r["target"]) <= 90 else r["target"][:87] + "..."
            t = t.replace("|", "\\|")
            md.append(f"| {r['line']} | {r['method']} | `{t}` | {r['score']:.4f} | {r['verdict']} | "
                      f"{r['other_mode_score']:.4f} | {r['other_mode_verdict']} |")
    md += ["", "### Blocked normal requests by first path segment", ""]
    for mode, _ in MODES:
        md.append(f"- {mode}: " + (", ".join(f"`{s}` {c}" for s, c in by_seg[mode]) or "none"))
    md += ["", f"## Public values placed into the held-out normal GET requests ({len(carriers)} carriers, "
           f"{len(with_query)} with a query; {len(values['attack'])} attack and {len(values['benign'])} "
           "benign values per placement)", "",
           "| placement | attacks blocked (format checks) | benign blocked (format checks) | attacks blocked (content only) | benign blocked (content only) |",
           "|---|---:|---:|---:|---:|"]
    for pl, p in placements.items():
        cells = []
        for mode, _ in MODES:
            cells += [pct(*p[mode]["attack"]), pct(*p[mode]["benign"])]
        md.append(f"| {pl} | " + " | ".join(cells) + " |")
    md += ["", "Attacks blocked by type, over the placements above except `none`:", "",
           "| type | format checks | content only |", "|---|---:|---:|"]
    types = sorted({t for p in placements.values() for t in p["format"].get("by_type", {})})
    for t in types:
        cells = []
        for mode, _ in MODES:
            b = sum(p[mode]["by_type"].get(t, [0, 0])[0] for pl, p in placements.items() if pl != "none")
            n = sum(p[mode]["by_type"].get(t, [0, 0])[1] for pl, p in placements.items() if pl != "none")
            cells.append(pct(b, n))
        md.append(f"| {t} | " + " | ".join(cells) + " |")
    elapsed = time.time() - t_start
    md += ["", f"Took {elapsed:.1f} s ({len(log)} `score` runs, {sum(l['seconds'] for l in log):.1f} s in them)."]
    text = "\n".join(md) + "\n"
    print(text)
    open(os.path.join(a.out, "summary.md"), "w").write(text)
    summary = {"bundle": a.bundle, "model_version": ver.group(1) if ver else None,
               "threshold": float(thr.group(1)) if thr else None,
               "content_only_threshold": float(cthr.group(1)) if cthr else None,
               "heldout": a.heldout, "suspicious": a.suspicious, "attacks": a.attacks, "seed": a.seed,
               "per_class": a.per_class, "heldout_results": heldout_res,
               "heldout_with_host": host_res, "ordinary": probe_rows, "ordinary_blocked": ordinary_blocked,
               "ordinary_requests": len(ORDINARY), "top_normal": top_rows,
               "blocked_normal_by_segment": by_seg, "carriers": len(carriers),
               "carriers_with_query": len(with_query), "placements": placements,
               "score_runs": log, "seconds": round(elapsed, 1)}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
