#!/usr/bin/env python3
"""Ablation input (issue 17): a copy of a CSIC 2010 file with some of its headers removed, to
measure what reading them costs the full-CSIC whole-request student. Content-Type and
Content-Length stay (the body is still read as a form). Not a product path.

    strip_headers.py SRC DST {all|keep-cookie|drop-cookie}
"""
import sys

HEADERS = (b"user-agent", b"pragma", b"cache-control", b"accept", b"accept-encoding",
           b"accept-charset", b"accept-language", b"host", b"cookie", b"connection")


def main():
    src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    out = []
    for line in open(src, "rb").read().split(b"\n"):
        bare = line.rstrip(b"\r")
        if b":" in bare and not bare.startswith((b"GET ", b"POST ", b"PUT ")):
            name = bare.split(b":", 1)[0].lower()
            if name in HEADERS:
                if mode == "all" or (mode == "keep-cookie" and name != b"cookie") or (
                        mode == "drop-cookie" and name == b"cookie"):
                    continue
        out.append(line)
    open(dst, "wb").write(b"\n".join(out))


if __name__ == "__main__":
    main()
