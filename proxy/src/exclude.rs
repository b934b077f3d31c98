//! Parts of a request left out of scoring (`exclude_parts`, global and per route): the one place
//! where they are dropped, before the request reaches the featurizer, so that every way a
//! request is scored (its windows, the part model, the worst placement, the shadow model) sees
//! the same request without them.
//!
//! - `{param: NAME}`: each `NAME=value` pair of the query string and of an urlencoded form
//!   body (split on `&` as applications do; the name compared once percent-decoded, `+` as a
//!   space, case-sensitive), removed here from the bytes every view of the request reads; and
//!   the field NAME of a JSON, multipart or XML body, which the featurizer leaves out where it
//!   parses that body ([`featurizer::ExcludedFields`]: the same parse, so the same names).
//! - `{header: NAME}`: every field of that header (names compare case-insensitively).
//! - `{cookie: NAME}`: each `NAME=value` pair of the `Cookie` header(s) (case-sensitive).
//!
//! The request forwarded upstream, the audit line and the capture file keep the request as sent.

use featurizer::{ExcludedFields, Headers, RequestParts};

use crate::config::ExcludedPart;

/// A request's scored parts rewritten without the excluded ones (owned; borrowed back as
/// [`RequestParts`] by [`Kept::parts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    method: String,
    target: Vec<u8>,
    body: Option<Vec<u8>>,
    headers: Option<Vec<(String, Vec<u8>)>>,
    /// The `param` names, for the featurizer to leave out of JSON, multipart and XML bodies.
    fields: Vec<String>,
}

impl Kept {
    /// The request as the featurizer reads it.
    pub fn parts(&self) -> RequestParts<'_> {
        RequestParts {
            method: &self.method,
            target: &self.target,
            body: self.body.as_deref(),
            headers: match &self.headers {
                Some(headers) => Headers::Owned(headers),
                None => Headers::None,
            },
            excluded_fields: ExcludedFields::new(&self.fields),
        }
    }
}

/// `request` without the `excluded` parts; `None` when nothing is excluded (the request is
/// scored as it is, without a copy).
pub fn without_excluded(request: &RequestParts<'_>, excluded: &[&ExcludedPart]) -> Option<Kept> {
    if excluded.is_empty() {
        return None;
    }
    let params: Vec<&str> = names(excluded, |p| match p {
        ExcludedPart::Param(n) => Some(n),
        _ => None,
    });
    let headers: Vec<&str> = names(excluded, |p| match p {
        ExcludedPart::Header(n) => Some(n),
        _ => None,
    });
    let cookies: Vec<&str> = names(excluded, |p| match p {
        ExcludedPart::Cookie(n) => Some(n),
        _ => None,
    });
    let target = target_without(request.target, &params);
    let form = is_form_body(request);
    let body = request.body.map(|b| {
        if form {
            pairs_without(b, b'&', &params)
        } else {
            b.to_vec()
        }
    });
    let kept_headers = match request.headers {
        Headers::None => None,
        all => Some(headers_without(all, &headers, &cookies)),
    };
    Some(Kept {
        method: request.method.to_string(),
        target,
        body,
        headers: kept_headers,
        fields: params.iter().map(|p| p.to_string()).collect(),
    })
}

fn names<'p>(
    excluded: &[&'p ExcludedPart],
    pick: impl Fn(&'p ExcludedPart) -> Option<&'p String>,
) -> Vec<&'p str> {
    excluded
        .iter()
        .filter_map(|p| pick(p))
        .map(String::as_str)
        .collect()
}

/// Whether the body is read as urlencoded pairs: its `Content-Type` says so, or the request
/// carries no headers (the featurizer's view without `placements`, where the proxy reads only
/// urlencoded bodies).
fn is_form_body(request: &RequestParts<'_>) -> bool {
    if request.headers.is_empty() {
        return true;
    }
    const FORM: &[u8] = b"application/x-www-form-urlencoded";
    request.headers.get("content-type").is_some_and(|v| {
        let v = v.trim_ascii_start();
        v.len() >= FORM.len() && v[..FORM.len()].eq_ignore_ascii_case(FORM)
    })
}

/// The target with the query's pairs named in `params` removed (and its `?` when none is left).
fn target_without(target: &[u8], params: &[&str]) -> Vec<u8> {
    let Some(q) = target.iter().position(|&b| b == b'?') else {
        return target.to_vec();
    };
    if params.is_empty() {
        return target.to_vec();
    }
    let query = pairs_without(&target[q + 1..], b'&', params);
    let mut out = target[..q].to_vec();
    if !query.is_empty() {
        out.push(b'?');
        out.extend_from_slice(&query);
    }
    out
}

/// `sep`-separated `name=value` pairs without those whose decoded name is in `names`.
fn pairs_without(pairs: &[u8], sep: u8, names: &[&str]) -> Vec<u8> {
    if names.is_empty() {
        return pairs.to_vec();
    }
    let mut out = Vec::with_capacity(pairs.len());
    for pair in pairs.split(|&b| b == sep) {
        let name = pair.split(|&b| b == b'=').next().unwrap_or_default();
        let decoded = form_decode(name);
        if names.iter().any(|n| n.as_bytes() == decoded.as_slice()) {
            continue;
        }
        if !out.is_empty() {
            out.push(sep);
        }
        out.extend_from_slice(pair);
    }
    out
}

/// One round of `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte (a
/// malformed escape stays as it is).
fn form_decode(raw: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < raw.len() => match (hex(raw[i + 1]), hex(raw[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    out
}

/// The header fields without those named in `headers` (lower-case names), and each `Cookie`
/// field without the cookies named in `cookies` (a field left empty is dropped).
fn headers_without(all: Headers<'_>, headers: &[&str], cookies: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut kept = Vec::with_capacity(all.len());
    for (name, value) in all.iter() {
        if headers.iter().any(|h| h.eq_ignore_ascii_case(name)) {
            continue;
        }
        if name.eq_ignore_ascii_case("cookie") && !cookies.is_empty() {
            let value = cookies_without(value, cookies);
            if !value.is_empty() {
                kept.push((name.to_string(), value));
            }
            continue;
        }
        kept.push((name.to_string(), value.to_vec()));
    }
    kept
}

/// A `Cookie` value (`a=1; b=2`) without the cookies named in `names` (compared trimmed, as
/// sent: cookie names are not decoded).
fn cookies_without(value: &[u8], names: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    for pair in value.split(|&b| b == b';') {
        let name = pair.split(|&b| b == b'=').next().unwrap_or_default();
        if names.iter().any(|n| n.as_bytes() == name.trim_ascii()) {
            continue;
        }
        if !out.is_empty() {
            out.push(b';');
        }
        out.extend_from_slice(pair);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(request: &RequestParts<'_>, excluded: &[ExcludedPart]) -> Kept {
        let refs: Vec<&ExcludedPart> = excluded.iter().collect();
        without_excluded(request, &refs).expect("something excluded")
    }

    #[test]
    fn nothing_excluded_is_no_copy() {
        assert_eq!(without_excluded(&RequestParts::get("/?q=1"), &[]), None);
    }

    #[test]
    fn a_param_leaves_the_query_and_the_form_body() {
        let body = b"q=%27+or+1%3D1&name=x&q=2";
        let request = RequestParts {
            method: "POST",
            target: b"/search?q=%3Cscript%3E&page=2&%71=encoded&Q=upper&q",
            body: Some(body),
            headers: Headers::None,
            excluded_fields: Default::default(),
        };
        let k = kept(&request, &[ExcludedPart::Param("q".into())]);
        assert_eq!(k.target, b"/search?page=2&Q=upper");
        assert_eq!(k.body.as_deref(), Some(&b"name=x"[..]));
        assert_eq!(k.parts().method, "POST");
        // Only the excluded name goes; a query of it alone leaves no `?`.
        let k = kept(
            &RequestParts::get("/a?q=1"),
            &[ExcludedPart::Param("q".into())],
        );
        assert_eq!(k.target, b"/a");
        let k = kept(&RequestParts::get("/a"), &[ExcludedPart::Param("q".into())]);
        assert_eq!(k.target, b"/a");
        let k = kept(
            &RequestParts::get("/a?first+name=1&b=2"),
            &[ExcludedPart::Param("first name".into())],
        );
        assert_eq!(k.target, b"/a?b=2");
    }

    #[test]
    fn a_json_body_is_left_to_the_featurizer() {
        let pairs: [(&str, &[u8]); 1] = [("Content-Type", b"application/json")];
        let request = RequestParts {
            method: "POST",
            target: b"/api?q=1",
            body: Some(br#"{"q":"x"}"#),
            headers: Headers::Pairs(&pairs),
            excluded_fields: Default::default(),
        };
        let k = kept(
            &request,
            &[
                ExcludedPart::Param("q".into()),
                ExcludedPart::Header("x-a".into()),
            ],
        );
        assert_eq!(k.target, b"/api");
        // The body is as sent; the featurizer reads it without `q`.
        assert_eq!(k.body.as_deref(), Some(&br#"{"q":"x"}"#[..]));
        assert_eq!(k.parts().excluded_fields.names(), ["q".to_string()]);
        let k = kept(&request, &[ExcludedPart::Header("x-a".into())]);
        assert!(k.parts().excluded_fields.is_empty());
    }

    #[test]
    fn headers_go_by_any_case_and_cookies_by_exact_name() {
        let pairs: [(&str, &[u8]); 5] = [
            ("Host", b"shop.example"),
            ("X-Foo", b"<script>"),
            ("x-foo", b"again"),
            ("Cookie", b"session=' or 1=1; theme=dark;Session=kept"),
            ("Cookie", b"session=only"),
        ];
        let request = RequestParts {
            method: "GET",
            target: b"/",
            body: None,
            headers: Headers::Pairs(&pairs),
            excluded_fields: Default::default(),
        };
        let k = kept(
            &request,
            &[
                ExcludedPart::Header("x-foo".into()),
                ExcludedPart::Cookie("session".into()),
            ],
        );
        assert_eq!(
            k.headers,
            Some(vec![
                ("Host".to_string(), b"shop.example".to_vec()),
                ("Cookie".to_string(), b" theme=dark;Session=kept".to_vec()),
            ])
        );
        let parts = k.parts();
        assert_eq!(
            parts.headers.get("cookie"),
            Some(&b" theme=dark;Session=kept"[..])
        );
    }

    #[test]
    fn form_decoding_keeps_a_malformed_escape() {
        assert_eq!(form_decode(b"a%2"), b"a%2");
        assert_eq!(form_decode(b"%zz+%41"), b"%zz A");
        assert_eq!(form_decode(b"%"), b"%");
    }
}
