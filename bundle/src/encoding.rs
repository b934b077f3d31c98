//! Request bodies sent with a `Content-Encoding`: decoded before they are scored, bounded
//! (pate-proxy's request path and `pate-trainer score`).
//!
//! An application that inflates request bodies (Apache's `SetInputFilter DEFLATE`, framework
//! middleware) reads what the compressed bytes say; scored as sent, the same bytes are noise to
//! the detector and any attack inside passes. So `gzip` / `x-gzip` / `deflate` bodies are
//! inflated (codings applied in order are undone in reverse), never past `body_limit_bytes` of
//! output — a small body that inflates to gigabytes (a "zip bomb") is cut there and handled by
//! `body_over_limit` like any other body over the limit. A coding the proxy cannot undo (`br`,
//! `zstd`, `compress`, anything else) would hide the body from it, so it is refused (415); a
//! stream that does not inflate is refused as malformed (400). `identity` is no coding. The
//! upstream always gets the body as the client sent it.
//!
//! A transfer coding before the final `chunked` (`Transfer-Encoding: gzip, chunked`) compresses
//! the body the same way: Apache 2.4 accepts it (measured: 200) and hands the application the
//! gzip bytes, which a server or middleware that honours transfer codings inflates. So the codings
//! to undo are every `Content-Encoding`, then every `Transfer-Encoding` but its last `chunked`
//! (the framing the HTTP parser undid), in the order they were applied ([`applied_codings`]).

use std::io::Read;

/// What [`decode`] made of a body.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// No coding to undo (`identity`, or an empty header): score the body as it came.
    AsSent,
    /// The inflated body, at most the limit.
    Body(Vec<u8>),
    /// It inflates to more than the limit: its first `limit` bytes.
    OverLimit(Vec<u8>),
    /// A coding the proxy cannot undo (the coding, lower-cased).
    Unsupported(String),
    /// The body is not a valid stream of its coding.
    Corrupt(String),
}

/// The codings a request body carries, in the order the client applied them, as one
/// comma-separated list for [`decode`]: every `Content-Encoding` line, then every
/// `Transfer-Encoding` line without the final `chunked` (the framing already undone when the body
/// was read). A `chunked` anywhere but last is an error (RFC 9112 §7.1: a sender must not apply
/// chunked more than once, and it must be the final coding); it names the header value.
pub fn applied_codings<'a>(
    content_encoding: impl IntoIterator<Item = &'a [u8]>,
    transfer_encoding: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, String> {
    let mut list: Vec<String> = content_encoding.into_iter().flat_map(tokens).collect();
    let mut transfer: Vec<String> = transfer_encoding.into_iter().flat_map(tokens).collect();
    if transfer.last().is_some_and(|c| c == "chunked") {
        transfer.pop();
    }
    if transfer.iter().any(|c| c == "chunked") {
        return Err(format!(
            "Transfer-Encoding {}: chunked must be the last coding, and only once",
            transfer.join(", ")
        ));
    }
    list.extend(transfer);
    Ok(list.join(",").into_bytes())
}

/// The lower-cased, trimmed, non-empty codings of one header line.
fn tokens(line: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(line)
        .to_ascii_lowercase()
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// Undoes the codings of a `Content-Encoding` header value (or of [`applied_codings`]) on
/// `body`, producing at most `limit` bytes. `complete`: whether `body` is the whole body (when it
/// is only the first bytes of a longer one, a stream that ends early is read as far as it goes).
pub fn decode(content_encoding: &[u8], body: &[u8], limit: usize, complete: bool) -> Decoded {
    let text = String::from_utf8_lossy(content_encoding).to_ascii_lowercase();
    let codings: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && *c != "identity")
        .collect();
    if codings.is_empty() {
        return Decoded::AsSent;
    }
    if let Some(c) = codings
        .iter()
        .find(|c| !matches!(**c, "gzip" | "x-gzip" | "deflate"))
    {
        return Decoded::Unsupported((*c).to_string());
    }
    let mut data = body.to_vec();
    let mut complete = complete;
    let mut over = false;
    for coding in codings.iter().rev() {
        match inflate(coding, &data, limit, complete) {
            Ok((out, cut)) => {
                data = out;
                // A stream cut at the limit is a prefix for the codings inside it.
                over |= cut;
                complete &= !cut;
            }
            Err(e) => return Decoded::Corrupt(format!("{coding}: {e}")),
        }
    }
    if over {
        Decoded::OverLimit(data)
    } else {
        Decoded::Body(data)
    }
}

/// Inflates one coding: the output (at most `limit` bytes) and whether there was more.
fn inflate(
    coding: &str,
    data: &[u8],
    limit: usize,
    complete: bool,
) -> Result<(Vec<u8>, bool), std::io::Error> {
    match coding {
        "deflate" => {
            // HTTP's `deflate` is the zlib format; some clients send raw deflate: try both.
            match read_bounded(flate2::read::ZlibDecoder::new(data), limit, complete) {
                Ok(r) => Ok(r),
                Err(_) => read_bounded(flate2::read::DeflateDecoder::new(data), limit, complete),
            }
        }
        // Several gzip members follow one another in one body; all are read.
        _ => read_bounded(flate2::read::MultiGzDecoder::new(data), limit, complete),
    }
}

/// Reads at most `limit` bytes from `reader`, and whether it had more. When the input is only a
/// prefix (`!complete`), an early end of the stream keeps what was read.
fn read_bounded(
    reader: impl Read,
    limit: usize,
    complete: bool,
) -> Result<(Vec<u8>, bool), std::io::Error> {
    let mut out = Vec::new();
    let mut bounded = reader.take(limit as u64 + 1);
    match bounded.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) if !complete && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e),
    }
    if out.len() > limit {
        out.truncate(limit);
        return Ok((out, true));
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn codings_are_undone_in_reverse_order_and_bounded() {
        let body = b"q=%27+union+select+password+from+users--";
        assert_eq!(
            decode(b"gzip", &gzip(body), 1000, true),
            Decoded::Body(body.to_vec())
        );
        assert_eq!(
            decode(b" X-GZIP ", &gzip(body), 1000, true),
            Decoded::Body(body.to_vec())
        );
        assert_eq!(
            decode(b"deflate", &zlib(body), 1000, true),
            Decoded::Body(body.to_vec())
        );
        let mut d = DeflateEncoder::new(Vec::new(), Compression::default());
        d.write_all(body).unwrap();
        let raw = d.finish().unwrap();
        assert_eq!(
            decode(b"deflate", &raw, 1000, true),
            Decoded::Body(body.to_vec())
        );
        // gzip then deflate was applied: deflate is undone first.
        let both = zlib(&gzip(body));
        assert_eq!(
            decode(b"gzip, identity, deflate", &both, 1000, true),
            Decoded::Body(body.to_vec())
        );
        assert_eq!(decode(b"identity", body, 1000, true), Decoded::AsSent);
        assert_eq!(decode(b"", body, 1000, true), Decoded::AsSent);
        // Inflated past the limit inside another coding: the inner stream is inflated from the
        // cut outer one (text that does not compress, so the outer output is over the limit).
        let mut x = 12345u32;
        let text: Vec<u8> = (0..20_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b'a' + (x >> 16) as u8 % 26
            })
            .collect();
        assert!(gzip(&text).len() > 4096);
        match decode(b"gzip, deflate", &zlib(&gzip(&text)), 4096, true) {
            Decoded::OverLimit(out) => assert!(text.starts_with(&out) && !out.is_empty()),
            other => panic!("{other:?}"),
        }
        // A bomb: 10 MB of zeros inflated no further than the limit.
        let bomb = gzip(&vec![0u8; 10_000_000]);
        assert!(bomb.len() < 20_000);
        assert_eq!(
            decode(b"gzip", &bomb, 4096, true),
            Decoded::OverLimit(vec![0; 4096])
        );
    }

    #[test]
    fn transfer_codings_before_chunked_are_undone_after_the_content_codings() {
        let applied =
            |ce: &[&[u8]], te: &[&[u8]]| applied_codings(ce.iter().copied(), te.iter().copied());
        assert_eq!(applied(&[], &[b"chunked"]), Ok(Vec::new()));
        assert_eq!(applied(&[], &[b" Chunked "]), Ok(Vec::new()));
        assert_eq!(applied(&[], &[b"gzip, chunked"]), Ok(b"gzip".to_vec()));
        // Two lines read as one list; the content coding was applied first.
        assert_eq!(
            applied(&[b"deflate"], &[b"gzip", b"chunked"]),
            Ok(b"deflate,gzip".to_vec())
        );
        // Without chunked (pingora refuses it before the body is read; `pate-trainer score`
        // has no framing to undo) the codings are all kept.
        assert_eq!(applied(&[b"gzip"], &[]), Ok(b"gzip".to_vec()));
        assert!(applied(&[], &[b"chunked, chunked"]).is_err());
        assert!(applied(&[], &[b"chunked, gzip, chunked"]).is_err());
        // A body compressed by the content coding, then by the transfer coding: undone in reverse.
        let body = b"q=%27+union+select+password+from+users--";
        let codings = applied(&[b"gzip"], &[b"deflate, chunked"]).unwrap();
        assert_eq!(
            decode(&codings, &zlib(&gzip(body)), 1000, true),
            Decoded::Body(body.to_vec())
        );
        assert_eq!(
            decode(&applied(&[], &[b"br, chunked"]).unwrap(), b"x", 1000, true),
            Decoded::Unsupported("br".into())
        );
    }

    #[test]
    fn what_cannot_be_inflated_is_refused_and_a_prefix_is_read_as_far_as_it_goes() {
        assert_eq!(
            decode(b"br", b"\x1b\x00", 1000, true),
            Decoded::Unsupported("br".into())
        );
        assert_eq!(
            decode(b"gzip, zstd", b"x", 1000, true),
            Decoded::Unsupported("zstd".into())
        );
        assert!(matches!(
            decode(b"gzip", b"not gzip at all", 1000, true),
            Decoded::Corrupt(_)
        ));
        let body: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let gz = gzip(&body);
        let prefix = &gz[..gz.len() / 2];
        // Cut short: malformed when it claims to be whole, the readable start when it is not.
        assert!(matches!(
            decode(b"gzip", prefix, 1 << 20, true),
            Decoded::Corrupt(_)
        ));
        match decode(b"gzip", prefix, 1 << 20, false) {
            Decoded::Body(out) => {
                assert!(!out.is_empty() && body.starts_with(&out), "{}", out.len())
            }
            other => panic!("{other:?}"),
        }
    }
}
