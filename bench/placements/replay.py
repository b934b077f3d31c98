#!/usr/bin/env python3
"""Replays held-out public payloads in every placement through a running WAF (pate-proxy in block
mode, or Apache + ModSecurity CRS: bench/placements/run.sh runs both).

    bench/placements/replay.py --proxy 127.0.0.1:PORT [--per-class N] [--seed S] [--out FILE]
                               [--detector TEXT]

Held-out data: HttpParamsDataset's payload_test.csv (never used for training: the
`student.public_examples` of configs/whole-request.yaml read payload_train.csv and Fwaf's bad
queries only). `anom` rows are attacks (sqli, xss, path-traversal, cmdi), `norm` rows benign
parameter values. Each value is put into each placement the way a client sends it (the same
shapes as tests/tests/placements.rs) and sent as raw HTTP/1.1; blocked = HTTP 403. The upstream
may be down (allowed requests then get 502): only the proxy's verdict is measured.
Prints one markdown table: per placement, attacks blocked and benign blocked. `--out` writes the
counts and every status code seen (per placement and class) as JSON.
"""
import argparse, csv, json, os, random, socket, sys, time, urllib.parse

P = "/tienda1/publico/anadir.jsp"


def enc(v):
    return urllib.parse.quote(v, safe="")


def json_u(v):
    return "".join(c if c.isascii() and c.isalnum() else "\\u%04x" % ord(c) for c in v if ord(c) < 0x10000)


def xml_esc(v):
    return v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;").replace('"', "&quot;")


def hdr(v):
    return "".join(c for c in v if c >= " " and c != "\x7f")


def request(method, target, headers=(), body=None):
    r = f"{method} {target} HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n"
    for n, v in headers:
        r += f"{n}: {v}\r\n"
    b = b""
    if body is not None:
        ct, text = body
        b = text.encode("utf-8", "surrogatepass")
        r += f"Content-Type: {ct}\r\nContent-Length: {len(b)}\r\n"
    return r.encode("utf-8", "surrogatepass") + b"\r\n" + b


FORM = "application/x-www-form-urlencoded"
CASES = {
    "query": lambda v: request("GET", f"{P}?id=2&nombre={enc(v)}"),
    "form": lambda v: request("POST", P, body=(FORM, f"id=2&nombre={enc(v)}&precio=39")),
    "path": lambda v: request("GET", f"/tienda1/publico/{enc(v)}/anadir.jsp"),
    "hdr:user-agent": lambda v: request("GET", P, [("User-Agent", hdr(v))]),
    "hdr:referer": lambda v: request("GET", P, [("Referer", f"http://localhost:8080/tienda1/?q={enc(v)}")]),
    "hdr:cookie": lambda v: request("GET", P, [("Cookie", f"JSESSIONID=ABC123; pref={enc(v)}")]),
    "hdr:x-forwarded": lambda v: request("GET", P, [("X-Forwarded-For", hdr(v))]),
    "hdr:other": lambda v: request("GET", P, [("X-Search", hdr(v))]),
    "json:value": lambda v: request("POST", P, body=("application/json", json.dumps({"id": 2, "nombre": "@@"}).replace('"@@"', '"' + json_u(v) + '"'))),
    "xml:text": lambda v: request("POST", P, body=("text/xml", f"<?xml version=\"1.0\"?><soap:Envelope><soap:Body><nombre>{xml_esc(v)}</nombre></soap:Body></soap:Envelope>")),
    "mp:field": lambda v: request("POST", P, body=("multipart/form-data; boundary=XyZ", f"--XyZ\r\nContent-Disposition: form-data; name=\"nombre\"\r\n\r\n{v}\r\n--XyZ--\r\n")),
    "mp:filename": lambda v: request("POST", P, body=("multipart/form-data; boundary=XyZ", f"--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{hdr(v).replace(chr(34), '%22')}\"\r\n\r\nhello\r\n--XyZ--\r\n")),
    "text": lambda v: request("POST", P, body=("text/plain", v)),
}


def status(addr, raw):
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--data", default="../shared/datasets/httpparams/payload_test.csv")
    ap.add_argument("--per-class", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--detector", default="", help="what was replayed through (written to --out)")
    ap.add_argument("--audit", help="pate-proxy's audit log: read each request's score from it (run "
                    "the proxy in detect mode with threshold: 0.0 so that every scored request is "
                    "audited); --out then holds every score (bench/placements/calibrate.sh)")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.data, newline="", encoding="utf-8")))
    rng = random.Random(a.seed)
    attacks = [r["payload"] for r in rows if r["label"] == "anom"]
    benign = [r["payload"] for r in rows if r["label"] == "norm"]
    attacks = rng.sample(attacks, min(a.per_class, len(attacks)))
    benign = rng.sample(benign, min(a.per_class, len(benign)))
    results = {}
    statuses = {}
    scores = {}
    audit = {"file": None, "partial": ""}

    def send(build, v):
        code = status(a.proxy, build(v))
        if not a.audit:
            return code, None
        # The request's audit line (requests are sent one at a time); a refused request has none.
        for _ in range(100):
            if audit["file"] is None and os.path.exists(a.audit):
                audit["file"] = open(a.audit, encoding="utf-8")
            if audit["file"] is not None:
                audit["partial"] += audit["file"].read()
                if "\n" in audit["partial"]:
                    line, audit["partial"] = audit["partial"].split("\n", 1)
                    return code, json.loads(line).get("score")
            time.sleep(0.01)
        return code, None

    total = {"attack": [0, 0], "benign": [0, 0]}
    for name, build in CASES.items():
        res = {}
        for cls, values in (("attack", attacks), ("benign", benign)):
            sent = [send(build, v) for v in values]
            codes = [c for c, _ in sent]
            scores.setdefault(name, {})[cls] = [sc for _, sc in sent]
            blocked = sum(1 for c in codes if c == 403)
            statuses.setdefault(name, {})[cls] = {str(c): codes.count(c) for c in sorted(set(codes))}
            res[cls] = (blocked, len(values))
            total[cls][0] += blocked
            total[cls][1] += len(values)
        results[name] = res
    lines = ["| placement | attacks blocked | benign blocked |", "|---|---:|---:|"]
    for name, res in results.items():
        (ab, an), (bb, bn) = res["attack"], res["benign"]
        lines.append(f"| {name} | {100*ab/an:.1f} % ({ab}/{an}) | {100*bb/bn:.1f} % ({bb}/{bn}) |")
    (ab, an), (bb, bn) = total["attack"], total["benign"]
    lines.append(f"| **all** | {100*ab/an:.1f} % ({ab}/{an}) | {100*bb/bn:.1f} % ({bb}/{bn}) |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        out = {"detector": a.detector, "data": a.data, "per_class": a.per_class, "seed": a.seed,
               "results": results, "status_counts": statuses}
        if a.audit:
            out["scores"] = scores
        with open(a.out + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    sys.exit(main())
