#!/usr/bin/env python3
"""The requests of the end-to-end test tests/tests/placements.rs, scored with `pate-trainer score`
(bundle::score_request, as pate-proxy scores them): for each of 13 placements an SQLi, an XSS and
the site's benign value "Queso Manchego" in the site's own request, plus the padding / encoding
cases. Prints one JSON line: the bundle, its threshold, the placements where both attacks are
blocked and the benign value passes ("ok"), every score and verdict.

    bench/placements/e2e_cases.py BUNDLE_DIR [BENIGN_VALUE]

Keep the requests in step with tests/tests/placements.rs. Run by bench/placements/e2e_reliability.sh.
"""
import json, os, subprocess, sys, tempfile
SQLI = "' union select password from usuarios where '1'='1"
XSS = "<script>alert(document.cookie)</script>"
BENIGN = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else "Queso Manchego"
P = "/tienda1/publico/anadir.jsp"
FORM = "application/x-www-form-urlencoded"
def enc(s): return "".join(c if c.isascii() and c.isalnum() else "".join(f"%{b:02X}" for b in c.encode()) for c in s)
def json_u(s): return "".join(c if c.isascii() and c.isalnum() else f"\\u{ord(c):04x}" for c in s)
def xml_esc(s): return s.replace("&","&amp;").replace("<","&lt;").replace(">","&gt;").replace("'","&#39;").replace('"',"&quot;")
Q = "id=2&nombre={}&precio=100&cantidad=28&B1=A%F1adir+al+carrito"
def site(v): return Q.format(enc(v))
GET = f"{P}?" + Q.format("Queso+Manchego")
def fields(v): return [("id","2"),("nombre",v),("precio","100"),("cantidad","28"),("B1","Añadir al carrito")]
def cases():
    return [
      ("query", lambda v: ("GET", f"{P}?{site(v)}", [], None)),
      ("form", lambda v: ("POST", P, [], (FORM, site(v)))),
      ("path", lambda v: ("GET", f"/tienda1/publico/{enc(v)}/anadir.jsp?" + Q.format("Queso+Manchego"), [], None)),
      ("hdr:user-agent", lambda v: ("GET", GET, [("User-Agent", v)], None)),
      ("hdr:referer", lambda v: ("GET", GET, [("Referer", f"http://localhost:8080/tienda1/?q={enc(v)}")], None)),
      ("hdr:cookie", lambda v: ("GET", GET, [("Cookie", f"JSESSIONID=ABC123; pref={enc(v)}")], None)),
      ("hdr:x-forwarded", lambda v: ("GET", GET, [("X-Forwarded-For", v)], None)),
      ("hdr:other", lambda v: ("GET", GET, [("X-Search", v)], None)),
      ("json:value", lambda v: ("POST", P, [], ("application/json", "{" + ", ".join('"%s": "%s"' % (n, json_u(x) if n == "nombre" else x) for n, x in fields(v)) + "}"))),
      ("xml:text", lambda v: ("POST", P, [], ("text/xml", '<?xml version="1.0"?><soap:Envelope><soap:Body>' + "".join(f"<{n}>{xml_esc(x)}</{n}>" for n, x in fields(v)) + "</soap:Body></soap:Envelope>"))),
      ("mp:field", lambda v: ("POST", P, [], ("multipart/form-data; boundary=XyZ", "".join(f'--XyZ\r\nContent-Disposition: form-data; name="{n}"\r\n\r\n{x}\r\n' for n, x in fields(v)) + "--XyZ--\r\n"))),
      ("mp:filename", lambda v: ("POST", P, [], ("multipart/form-data; boundary=XyZ", "".join(f'--XyZ\r\nContent-Disposition: form-data; name="{n}"\r\n\r\n{x}\r\n' for n, x in fields("Queso Manchego")) + '--XyZ\r\nContent-Disposition: form-data; name="f"; filename="%s"\r\n\r\nhello\r\n--XyZ--\r\n' % v.replace('"', "%22")))),
      ("text", lambda v: ("POST", P, [], ("text/plain", v))),
    ]
def score(trainer, bundle, req):
    method, target, headers, body = req
    hs = [("Host", "localhost:8080"), ("Connection", "close")] + headers
    args = [trainer, "score", "-qq", "--bundle", bundle, "--method", method, "--target", target]
    f = None
    if body:
        ct, b = body
        hs += [("Content-Type", ct), ("Content-Length", str(len(b.encode())))]
        f = tempfile.NamedTemporaryFile(delete=False); f.write(b.encode()); f.close()
        args += ["--body-file", f.name]
    for n, v in hs: args += ["--header", f"{n}: {v}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if f: os.unlink(f.name)
    if out.returncode: raise SystemExit(out.stderr)
    j = json.loads(out.stdout)
    return j["score"], j["verdict"] == "block", j["threshold"]
trainer = os.environ.get("PATE_TRAINER_BIN", "target/release/pate-trainer")
bundle = sys.argv[1]
res = {}
for name, build in cases():
    r = {}
    for what, v in (("sqli", SQLI), ("xss", XSS), ("benign", BENIGN)):
        s, b, t = score(trainer, bundle, build(v))
        r[what] = (round(s, 4), b)
    res[name] = r
import base64 as B
def b64(v): return B.b64encode(v.encode()).decode()
_site = "id=2&nombre=Queso+Manchego&precio=100&cantidad=28&B1=A%F1adir+al+carrito&"
pad = _site * (9300 // len(_site) + 1)
extra = {
  "padded form": ("POST", P, [], (FORM, f"{pad}nombre={enc(SQLI)}")),
  "padded text": ("POST", P, [], ("text/plain", f"{'a ' * 5000} {XSS}")),
  "base64 query": ("GET", f"{GET}&data={enc(b64(SQLI))}", [], None),
  "base64 header": ("GET", GET, [("X-Data", b64(XSS))], None),
  "json u": ("POST", P, [], ("application/json", '{"q": "%s"}' % json_u(SQLI))),
  "xml entities": ("POST", P, [], ("application/soap+xml", f"<q>{xml_esc(XSS)}</q>")),
  "double percent": ("GET", f"{P}?{site(enc(SQLI))}", [], None),
}
enc_res = {k: score(trainer, bundle, v)[:2] for k, v in extra.items()}
padded_benign = score(trainer, bundle, ("POST", P, [], (FORM, f"{pad}nombre={enc(BENIGN)}")))[:2]
ok = {n: r["sqli"][1] and r["xss"][1] and not r["benign"][1] for n, r in res.items()}
print(json.dumps({"bundle": bundle, "threshold": t, "ok": sum(ok.values()), "cases": res, "enc": enc_res, "padded_benign": padded_benign}))
