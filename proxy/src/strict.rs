//! Strict request-head parsing: never repair a request the upstream would reject.
//!
//! pingora 0.9 is lenient where Apache is not: a request line with raw spaces in the target
//! (`GET /?q=1 union select password from users HTTP/1.1`) is percent-encoded and forwarded,
//! while Apache alone answers 400 — through the WAF, a malformed attack would reach the backend
//! in a form its author did not send and the WAF did not score. [`HeadCheck`] reads every byte of
//! a request head as it arrives (no allocation, no buffering) and names the first violation:
//!
//! - `target_space`: more than two spaces in the request line (a raw space in the target);
//! - `target_control`: a control byte (0x00–0x1F but the line's CR, or 0x7F) in the request line;
//! - `target_fragment`: a `#` in the target (a fragment is no part of a request target, RFC 9112
//!   §3.2; Apache answers 400, pingora would drop the fragment and forward the rest);
//! - `bare_lf`: a line ended by LF without CR;
//! - `obs_fold`: a header line starting with a space or tab (obsolete line folding, RFC 9112
//!   §5.2);
//! - `header_control`: a control byte (but tab) in a header line;
//! - `cl_and_te`: both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1: a request
//!   smuggling vector; the proxy and the upstream could frame the body differently);
//! - `request_line`: a request line that is not `method SP target SP HTTP/1.x` (an empty method
//!   or target, a method byte that is not a token character, one space only as in HTTP/0.9's
//!   `GET /`, another version);
//! - `header_syntax`: a header line without a colon, with an empty name, or with a name byte that
//!   is not a token character (a space before the colon, RFC 9112 §5.1).
//!
//! The last two are what pingora's parser (httparse) rejects on its own; checked here, they are
//! answered and counted like the others instead of by pingora's bare 400, which no metric saw.
//! One of them is stricter than Apache 2.4: a version other than 1.0 and 1.1 (`HTTP/1.2`,
//! `HTTP/2.0` in an HTTP/1 request line), which Apache serves as 1.1 (measured: 200) and
//! httparse cannot read at all.
//!
//! What Apache reads raw and pingora cannot is not refused but passed on in a form pingora reads:
//! a raw `"`, `<` or `>` in the target (`/?q=<b>`; RFC 3986 does not allow them, Apache 2.4
//! serves them) makes pingora's request header fail to build (the `http` crate's URI rejects
//! them), so [`HeadCheck::escape_target`] percent-encodes them (`%22`, `%3C`, `%3E`) before
//! pingora parses the head. Apache decodes the path to the same file and the application the
//! query to the same values; the featurizer percent-decodes as well, so the request is scored
//! (and audited, and forwarded) in that form. `{}|\^` and a backtick pass as they are.
//!
//! The proxy answers each with 400 and closes the connection before pingora parses the head
//! (`slowloris.rs` runs the check on the connection's bytes), counted in
//! `patewaf_malformed_requests_total{reason}`. The e2e test `tests/tests/strict.rs` checks each
//! case against Apache alone: Apache 2.4 answers 400 to the first four and to `header_control`
//! too; it accepts obs-fold (it unfolds) and Content-Length + Transfer-Encoding (it drops
//! Content-Length), which the proxy refuses on purpose: both are request-smuggling vectors where
//! two parsers can disagree, and RFC 9112 (§5.2, §6.1) lets a server reject them.

/// Why a request head was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A raw space in the request target (more than two spaces in the request line).
    TargetSpace,
    /// A control byte in the request line.
    TargetControl,
    /// A `#` (fragment) in the request target.
    TargetFragment,
    /// A line ended by a bare LF.
    BareLf,
    /// Obsolete line folding (a header line starting with SP or HT).
    ObsFold,
    /// A control byte in a header line.
    HeaderControl,
    /// Both Content-Length and Transfer-Encoding.
    ClAndTe,
    /// A request line that is not `method SP target SP HTTP/1.0|HTTP/1.1`.
    RequestLine,
    /// A header line without a colon, with an empty name or a non-token byte in the name.
    HeaderSyntax,
}

impl Malformed {
    /// Every reason (the metric's label values).
    pub const ALL: [Malformed; 9] = [
        Malformed::TargetSpace,
        Malformed::TargetControl,
        Malformed::TargetFragment,
        Malformed::BareLf,
        Malformed::ObsFold,
        Malformed::HeaderControl,
        Malformed::ClAndTe,
        Malformed::RequestLine,
        Malformed::HeaderSyntax,
    ];

    /// The metric label and log name.
    pub fn as_str(self) -> &'static str {
        match self {
            Malformed::TargetSpace => "target_space",
            Malformed::TargetControl => "target_control",
            Malformed::TargetFragment => "target_fragment",
            Malformed::BareLf => "bare_lf",
            Malformed::ObsFold => "obs_fold",
            Malformed::HeaderControl => "header_control",
            Malformed::ClAndTe => "cl_and_te",
            Malformed::RequestLine => "request_line",
            Malformed::HeaderSyntax => "header_syntax",
        }
    }
}

/// Longest header name prefix compared (`transfer-encoding` is 17 bytes).
const NAME_BYTES: usize = 18;

/// Bytes of the request line's version kept (`HTTP/1.1` is 8; one more tells a longer one).
const VERSION_BYTES: usize = 9;

/// A token character (RFC 9110 §5.6.2): what a method and a header name are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A target byte that Apache reads raw but pingora cannot: percent-encoded before pingora parses
/// the head ([`HeadCheck::escape_target`]).
pub fn needs_escape(b: u8) -> bool {
    matches!(b, b'"' | b'<' | b'>')
}

/// A streaming checker of one request head; feed it bytes with [`HeadCheck::feed`] until the head
/// ends, then [`HeadCheck::reset`] for the next request on the connection.
#[derive(Debug, Clone)]
pub struct HeadCheck {
    /// Still before the request line (empty lines before it are allowed, RFC 9112 §2.2).
    before_request: bool,
    /// In the request line (else in a header line).
    request_line: bool,
    /// At the first byte of a line.
    line_start: bool,
    /// The previous byte was CR.
    prev_cr: bool,
    /// Spaces seen in the request line.
    spaces: u32,
    /// Bytes of the request line's current field (method, target, version) so far.
    field_len: usize,
    /// The request line's version (after the second space), first [`VERSION_BYTES`] bytes.
    version: [u8; VERSION_BYTES],
    /// The current header line's name, lower-cased (first [`NAME_BYTES`] bytes), and its length.
    name: [u8; NAME_BYTES],
    name_len: usize,
    /// The name ended (a `:` was seen) on this line.
    in_value: bool,
    content_length: bool,
    transfer_encoding: bool,
    /// The head ended (blank line).
    ended: bool,
}

impl Default for HeadCheck {
    fn default() -> Self {
        HeadCheck {
            before_request: true,
            request_line: true,
            line_start: true,
            prev_cr: false,
            spaces: 0,
            field_len: 0,
            version: [0; VERSION_BYTES],
            name: [0; NAME_BYTES],
            name_len: 0,
            in_value: false,
            content_length: false,
            transfer_encoding: false,
            ended: false,
        }
    }
}

impl HeadCheck {
    /// Starts over for the next request head.
    pub fn reset(&mut self) {
        *self = HeadCheck::default();
    }

    /// Whether the head's blank line was seen.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Whether the next byte fed belongs to the request target.
    fn in_target(&self) -> bool {
        self.request_line && self.spaces == 1
    }

    /// `bytes`, the next bytes of the head (call before [`HeadCheck::feed`] with the same
    /// bytes), with each `"`, `<` and `>` of the request target percent-encoded; `None` when
    /// there is none (the bytes go on as they are) or the bytes are malformed (`feed` says why).
    pub fn escape_target(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if !self.request_line || !bytes.iter().any(|&b| needs_escape(b)) {
            return None;
        }
        let mut check = self.clone();
        let mut out = Vec::with_capacity(bytes.len() + 16);
        let mut escaped = false;
        for (i, &b) in bytes.iter().enumerate() {
            if !check.request_line {
                out.extend_from_slice(&bytes[i..]);
                break;
            }
            if check.in_target() && needs_escape(b) {
                out.extend_from_slice(format!("%{b:02X}").as_bytes());
                escaped = true;
            } else {
                out.push(b);
            }
            check.byte(b).ok()?;
        }
        escaped.then_some(out)
    }

    /// Reads `bytes` of the head; returns the first violation, and the number of bytes that
    /// belonged to the head when it ended (the rest is body or the next request).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Option<usize>, Malformed> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.ended {
                return Ok(Some(i));
            }
            self.byte(b)?;
            if self.ended {
                return Ok(Some(i + 1));
            }
        }
        Ok(None)
    }

    fn byte(&mut self, b: u8) -> Result<(), Malformed> {
        if b == b'\n' {
            if !self.prev_cr {
                return Err(Malformed::BareLf);
            }
            self.prev_cr = false;
            return self.end_line();
        }
        if self.prev_cr {
            // A CR not followed by LF.
            return Err(if self.request_line {
                Malformed::TargetControl
            } else {
                Malformed::HeaderControl
            });
        }
        if b == b'\r' {
            self.prev_cr = true;
            return Ok(());
        }
        let was_line_start = self.line_start;
        self.line_start = false;
        if self.request_line {
            self.before_request = false;
            match b {
                b' ' => {
                    self.spaces += 1;
                    if self.spaces > 2 {
                        return Err(Malformed::TargetSpace);
                    }
                    if self.field_len == 0 {
                        // An empty method or target (two spaces in a row, or a leading one).
                        return Err(Malformed::RequestLine);
                    }
                    self.field_len = 0;
                    return Ok(());
                }
                0..=0x1F | 0x7F => return Err(Malformed::TargetControl),
                _ => {}
            }
            if self.spaces == 0 && !is_tchar(b) {
                return Err(Malformed::RequestLine);
            }
            if self.spaces == 1 && b == b'#' {
                return Err(Malformed::TargetFragment);
            }
            if self.spaces == 2 && self.field_len < VERSION_BYTES {
                self.version[self.field_len] = b;
            }
            self.field_len += 1;
            return Ok(());
        }
        if was_line_start && (b == b' ' || b == b'\t') {
            return Err(Malformed::ObsFold);
        }
        if (b < 0x20 && b != b'\t') || b == 0x7F {
            return Err(Malformed::HeaderControl);
        }
        if !self.in_value {
            if b == b':' {
                self.in_value = true;
                let name = &self.name[..self.name_len.min(NAME_BYTES)];
                if self.name_len == 14 && name == b"content-length" {
                    self.content_length = true;
                } else if self.name_len == 17 && name == b"transfer-encoding" {
                    self.transfer_encoding = true;
                }
                if self.content_length && self.transfer_encoding {
                    return Err(Malformed::ClAndTe);
                }
                if self.name_len == 0 {
                    return Err(Malformed::HeaderSyntax);
                }
            } else if !is_tchar(b) {
                return Err(Malformed::HeaderSyntax);
            } else {
                if self.name_len < NAME_BYTES {
                    self.name[self.name_len] = b.to_ascii_lowercase();
                }
                self.name_len += 1;
            }
        }
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), Malformed> {
        let empty = self.line_start;
        self.line_start = true;
        let header_without_colon = !self.request_line && !empty && !self.in_value;
        self.name_len = 0;
        self.in_value = false;
        if self.request_line {
            if empty && self.before_request {
                return Ok(()); // an empty line before the request line
            }
            let version = &self.version[..self.field_len.min(VERSION_BYTES)];
            if self.spaces != 2 || !matches!(version, b"HTTP/1.1" | b"HTTP/1.0") {
                return Err(Malformed::RequestLine);
            }
            self.request_line = false;
            return Ok(());
        }
        if header_without_colon {
            return Err(Malformed::HeaderSyntax);
        }
        if empty {
            self.ended = true;
        }
        Ok(())
    }
}

/// Checks a whole head at once (tests, tools).
pub fn check_head(head: &[u8]) -> Result<(), Malformed> {
    let mut check = HeadCheck::default();
    check.feed(head).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_heads_pass_and_each_violation_is_named() {
        let ok: &[&[u8]] = &[
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"\r\nGET /a?b=%20c HTTP/1.1\r\nHost: a\r\nUser-Agent: x\ty\r\n\r\n",
            b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET / HTTP/1.0\r\n\r\n",
            b"M-SEARCH * HTTP/1.1\r\nX-Custom_Name.v2: a:b\r\nEmpty:\r\n\r\n",
            b"GET /a?q=<b>&r=\"{}|\\^`[] HTTP/1.1\r\nX-A: #<\">\r\n\r\n",
        ];
        for head in ok {
            assert_eq!(check_head(head), Ok(()), "{}", head.escape_ascii());
        }
        let bad: &[(&[u8], Malformed)] = &[
            (
                b"GET /?q=1 union select password from users HTTP/1.1\r\nHost: a\r\n\r\n",
                Malformed::TargetSpace,
            ),
            (b"GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::TargetControl),
            (b"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::TargetControl),
            (b"GET /a?b=c#d HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::TargetFragment),
            (b"GET /#<b> HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::TargetFragment),
            (b"GET / HTTP/1.1\nHost: a\r\n\r\n", Malformed::BareLf),
            (b"GET / HTTP/1.1\r\nHost: a\n\r\n", Malformed::BareLf),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", Malformed::ObsFold),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n", Malformed::HeaderControl),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", Malformed::HeaderControl),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                Malformed::ClAndTe,
            ),
            (
                b"POST / HTTP/1.1\r\nTRANSFER-ENCODING: chunked\r\ncontent-length: 3\r\n\r\n",
                Malformed::ClAndTe,
            ),
            (b"GET /\r\n\r\n", Malformed::RequestLine),
            (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b" GET / HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"GET / http/1.1\r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"GET / \r\nHost: a\r\n\r\n", Malformed::RequestLine),
            (b"GET / HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n", Malformed::HeaderSyntax),
            (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", Malformed::HeaderSyntax),
            (b"GET / HTTP/1.1\r\n: a\r\n\r\n", Malformed::HeaderSyntax),
            (b"GET / HTTP/1.1\r\nX(A): a\r\n\r\n", Malformed::HeaderSyntax),
        ];
        for (head, why) in bad {
            assert_eq!(check_head(head), Err(*why), "{}", head.escape_ascii());
        }
    }

    #[test]
    fn byte_by_byte_equals_at_once_and_the_head_end_is_found() {
        let head = b"GET /?a=1 HTTP/1.1\r\nHost: a\r\nX-B: c d\r\n\r\nBODY";
        let mut check = HeadCheck::default();
        let mut end = None;
        for (i, b) in head.iter().enumerate() {
            if let Some(n) = check.feed(std::slice::from_ref(b)).unwrap() {
                end = Some(i + n);
                break;
            }
        }
        assert_eq!(end, Some(head.len() - 4));
        let mut once = HeadCheck::default();
        assert_eq!(once.feed(head), Ok(Some(head.len() - 4)));
    }

    #[test]
    fn quotes_and_angle_brackets_of_the_target_only_are_escaped_whatever_the_reads() {
        let head: &[u8] = b"GET /p<a>?q=\"<b>\"&r={|} HTTP/1.1\r\nX-A: <\"b\">\r\n\r\n<body\">";
        let want: &[u8] =
            b"GET /p%3Ca%3E?q=%22%3Cb%3E%22&r={|} HTTP/1.1\r\nX-A: <\"b\">\r\n\r\n<body\">";
        assert_eq!(
            HeadCheck::default().escape_target(head).as_deref(),
            Some(want)
        );
        for size in [1, 2, 5, 7] {
            let mut check = HeadCheck::default();
            let mut out = Vec::new();
            for part in head.chunks(size) {
                let escaped = if check.ended() {
                    None
                } else {
                    check.escape_target(part)
                };
                out.extend_from_slice(escaped.as_deref().unwrap_or(part));
                if !check.ended() {
                    check.feed(part).unwrap();
                }
            }
            assert_eq!(out, want, "reads of {size} bytes");
        }
        let plain: &[u8] = b"GET /a?q=%3Cb%3E HTTP/1.1\r\nX-A: <b>\r\n\r\n";
        assert_eq!(HeadCheck::default().escape_target(plain), None);
        assert_eq!(check_head(want), Ok(()));
    }
}
