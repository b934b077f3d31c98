#!/usr/bin/env python3
"""Replays held-out public payloads in every placement through a running WAF (pate-proxy in block
mode, or Apache + ModSecurity CRS: bench/placements/run.sh runs both).

    bench/placements/replay.py --proxy 127.0.0.1:PORT [--per-class N] [--seed S] [--out FILE]
                               [--detector TEXT] [--fit-to CSIC_NORMAL_FILE]

Held-out data: HttpParamsDataset's payload_test.csv (never used for training: the
`student.public_examples` of configs/whole-request.yaml read payload_train.csv and Fwaf's bad
queries only). `anom` rows are attacks (sqli, xss, path-traversal, cmdi), `norm` rows benign
parameter values. Each value is put into each placement the way a client sends it (the same
shapes as tests/tests/placements.rs) and sent as raw HTTP/1.1; blocked = HTTP 403. The upstream
may be down (allowed requests then get 502): only the proxy's verdict is measured.
Prints one markdown table: per placement, attacks blocked and benign blocked. `--out` writes the
counts and every status code seen (per placement and class) as JSON.

`--fit-to` (CSIC 2010's normal traffic file) adds two placements, `query-fit` and `form-fit`:
the value goes into the field of the site's registration form (GET query, or urlencoded POST
body, every other field as in a normal registration) whose normal values most often have the
value's kind — the classes of characters it has (letters, digits, space, each other character)
and its log2 length, else its classes alone, else `nombre` — so that a benign address goes where
the site takes addresses and a card number where it takes card numbers. The `query` and `form`
placements put every value into `nombre` (a name field), where CSIC calls any value of another
kind an anomaly. Which field each value went to is in the JSON (`fit_fields`).
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


def percent_decode(s):
    """trainer::public_examples::percent_decode: one round, `+` a space, `%XX` (two bytes
    that Rust's u8::from_str_radix(_, 16) reads: hex digits, or `+` and one) a byte."""
    b, out, i = s.encode("utf-8"), bytearray(), 0
    while i < len(b):
        c = b[i]
        if c == 0x2B:
            out.append(0x20); i += 1
        elif c == 0x25 and i + 2 < len(b):
            h = b[i + 1:i + 3]
            hexd = b"0123456789abcdefABCDEF"
            if all(x in hexd for x in h) or (h[0:1] == b"+" and h[1] in hexd):
                out.append(int(h.decode(), 16)); i += 3
            else:
                out.append(0x25); i += 1
        else:
            out.append(c); i += 1
    return bytes(out)


def held_out(v):
    """trainer::part_model::held_out: FNV-1a (64-bit) of the decoded value, 0 modulo 10."""
    h = 0xCBF29CE484222325
    for c in percent_decode(v):
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % 10 == 0


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


def kind(v, with_length=True):
    """The classes of characters of v (letters, digits, space, each other character) and, with
    with_length, its log2 length bucket."""
    classes = frozenset("a" if c.isalpha() else "9" if c.isdigit() else c for c in v)
    return (classes, len(v).bit_length()) if with_length else classes


def registration_fields(path):
    """The registration form of CSIC's site: (one normal request's fields in order, raw as sent;
    per field a Counter of kind() and of kind(with_length=False) over its normal values). A
    field with one value only (`modo`, the button) takes none."""
    import collections
    template, by_kind, by_classes, values = None, {}, {}, {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            line = line.strip()
            if line.startswith("GET ") and "/registro.jsp?modo=registro" in line:
                query = line.split(" ")[1].split("?", 1)[1]
            elif line.startswith("modo=registro&"):
                query = line
            else:
                continue
            raw = [pair.partition("=")[::2] for pair in query.split("&")]
            if template is None:
                template = raw
            for name, value in raw:
                value = urllib.parse.unquote_plus(value, encoding="latin-1")
                by_kind.setdefault(name, collections.Counter())[kind(value)] += 1
                by_classes.setdefault(name, collections.Counter())[kind(value, False)] += 1
                values.setdefault(name, set()).add(value)
    if template is None:
        sys.exit(f"{path}: no registration request (registro.jsp, modo=registro) found")
    for name in [n for n, v in values.items() if len(v) == 1]:
        del by_kind[name], by_classes[name]
    return template, by_kind, by_classes


def fit_field(v, by_kind, by_classes):
    """The registration field whose normal values most often have v's kind (see --fit-to)."""
    for table, key in ((by_kind, kind(v)), (by_classes, kind(v, False))):
        best = max(table, key=lambda name: table[name][key])
        if table[best][key] > 0:
            return best
    return "nombre"


def fitted_cases(path):
    """The query-fit and form-fit placements, and the field each value went to."""
    template, by_kind, by_classes = registration_fields(path)
    page = "/tienda1/publico/registro.jsp"
    chosen = {}

    def fields(v):
        field = fit_field(v, by_kind, by_classes)
        chosen[v] = field
        return "&".join(f"{n}={enc(v) if n == field else x}" for n, x in template)

    return {
        "query-fit": lambda v: request("GET", f"{page}?{fields(v)}"),
        "form-fit": lambda v: request("POST", page, body=(FORM, fields(v))),
    }, chosen


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
    ap.add_argument("--fit-to", help="CSIC 2010's normal traffic file: add the query-fit and "
                    "form-fit placements (the value in the registration field of its kind)")
    ap.add_argument("--held-out-tenth", action="store_true",
                    help="only the values a bundle's part model never trained on: the tenth whose "
                    "FNV-1a hash of the percent-decoded value is 0 modulo 10 "
                    "(trainer::part_model::held_out)")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.data, newline="", encoding="utf-8")))
    rng = random.Random(a.seed)
    attacks = [r["payload"] for r in rows if r["label"] == "anom"]
    benign = [r["payload"] for r in rows if r["label"] == "norm"]
    if a.held_out_tenth:
        attacks = [v for v in attacks if held_out(v)]
        benign = [v for v in benign if held_out(v)]
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

    cases, chosen = dict(CASES), {}
    if a.fit_to:
        fitted, chosen = fitted_cases(a.fit_to)
        cases.update(fitted)
    total = {"attack": [0, 0], "benign": [0, 0]}
    for name, build in cases.items():
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
        if a.fit_to:
            import collections
            out["fit_fields"] = {
                cls: dict(collections.Counter(chosen[v] for v in values).most_common())
                for cls, values in (("attack", attacks), ("benign", benign))
            }
        with open(a.out + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    sys.exit(main())
