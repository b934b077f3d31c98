//! Public labelled examples placed into the protected site's own request shapes (the student's
//! `public_examples` option).
//!
//! Public attack corpora (Fwaf, HttpParamsDataset, ...) are public data: training the student on
//! them costs no privacy budget (only the private data, seen through the teachers' noisy votes,
//! is under ε). They know what SQL injection or XSS looks like, which one site's logs do not;
//! but their requests do not look like the site's. So each public value (an attack, or a benign
//! value of the same corpora, so that where a value rides does not decide its label) is put into
//! a request of the site's own public split — its paths, its parameter names, its headers — in
//! one of the placements the featurizer reads ([`PLACEMENTS`]: a query or form parameter, a path
//! segment, User-Agent, Referer, a cookie, X-Forwarded-For, a custom header, a JSON value, an
//! XML element, a multipart field or file name, a text/plain body), sometimes encoded as
//! attackers do (Base64, `\uXXXX`, XML entities). The result is a labelled [`datasets::Record`]
//! featurized like any other and added to the student's training rows beside the PATE-labelled
//! queries.

use rand::{Rng, RngExt};

use datasets::{Label, Record};

/// Where a public value is put ([`place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spot {
    /// Replaces (or adds) a query parameter value.
    Query,
    /// Replaces (or adds) a form-body parameter value (a POST).
    Form,
    /// Appended as a path segment.
    Path,
    /// The `User-Agent` header.
    UserAgent,
    /// The `Referer` header (as a query value of a URL).
    Referer,
    /// A cookie value.
    Cookie,
    /// `X-Forwarded-For`.
    Forwarded,
    /// A custom header.
    CustomHeader,
    /// A JSON body string value (sometimes `\uXXXX`-escaped).
    Json,
    /// An XML / SOAP element's text (entity-escaped).
    Xml,
    /// A multipart field value.
    MultipartField,
    /// A multipart file name.
    MultipartFilename,
    /// A `text/plain` body (the value alone).
    Text,
}

impl Spot {
    /// The featurizer's placement of the part the value makes here (a custom header's is
    /// `hdr:other`, a JSON value's `json:value`, ...).
    pub fn placement(self) -> featurizer::Placement {
        use featurizer::Placement as P;
        match self {
            Spot::Query => P::Query,
            Spot::Form => P::Form,
            Spot::Path => P::Path,
            Spot::UserAgent => P::HdrUserAgent,
            Spot::Referer => P::HdrReferer,
            Spot::Cookie => P::HdrCookie,
            Spot::Forwarded => P::HdrForwarded,
            Spot::CustomHeader => P::HdrOther,
            Spot::Json => P::JsonValue,
            Spot::Xml => P::XmlText,
            Spot::MultipartField => P::MpField,
            Spot::MultipartFilename => P::MpFilename,
            Spot::Text => P::Text,
        }
    }
}

/// Every spot, each drawn with the same probability.
pub const PLACEMENTS: [Spot; 13] = [
    Spot::Query,
    Spot::Form,
    Spot::Path,
    Spot::UserAgent,
    Spot::Referer,
    Spot::Cookie,
    Spot::Forwarded,
    Spot::CustomHeader,
    Spot::Json,
    Spot::Xml,
    Spot::MultipartField,
    Spot::MultipartFilename,
    Spot::Text,
];

/// Where the benign (re-shaped) examples are put ([`synthesize`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenignSpots {
    /// Every spot of [`PLACEMENTS`], as the attacks.
    #[default]
    Every,
    /// Headers and bodies only: the request line and the form keep the pairs the site sent. A
    /// site value moved into another parameter or appended to the path is what the parameter
    /// and rarity features (and the site's own data) call anomalous; labelled benign, it taught
    /// a CSIC student that those features are not signs (EVALUATION.md, "The whole request on
    /// full CSIC").
    HeadersAndBodies,
}

impl BenignSpots {
    /// The spots a benign example may take.
    pub fn spots(self) -> Vec<Spot> {
        let line = |s: &Spot| matches!(s, Spot::Query | Spot::Form | Spot::Path);
        PLACEMENTS
            .into_iter()
            .filter(|s| self == BenignSpots::Every || !line(s))
            .collect()
    }
}

/// Percent-encodes everything but unreserved characters.
pub fn url_encode(value: &[u8]) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Standard Base64 with padding.
pub fn base64(value: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in value.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn json_string(value: &str, unicode_escape: bool) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || (unicode_escape && !c.is_ascii_alphanumeric()) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn xml_escape(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The `name=value` pairs of a query string or form body (raw, still encoded).
fn pairs(s: &[u8]) -> Vec<(String, String)> {
    s.split(|&b| b == b'&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let p = String::from_utf8_lossy(p);
            match p.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => (p.to_string(), String::new()),
            }
        })
        .collect()
}

fn join(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// A JSON object body of `params` with parameter `pick` set to `text` (`\uXXXX`-escaped with
/// `encode`).
fn json_body(params: &[(String, String)], pick: usize, text: &str, encode: bool) -> Vec<u8> {
    let fields: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(k, (n, v))| {
            let v = if k == pick {
                json_string(text, encode)
            } else {
                json_string(
                    &String::from_utf8_lossy(&percent_decode(v.as_bytes())),
                    false,
                )
            };
            format!("{}: {v}", json_string(n, false))
        })
        .collect();
    format!("{{{}}}", fields.join(", ")).into_bytes()
}

/// A SOAP envelope body of `params` with parameter `pick` set to `shown`.
fn xml_body(params: &[(String, String)], pick: usize, shown: &str) -> Vec<u8> {
    let fields: String = params
        .iter()
        .enumerate()
        .map(|(k, (n, v))| {
            let name: String = n.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            let name = if name.is_empty() {
                "v".to_string()
            } else {
                name
            };
            let v = if k == pick {
                xml_escape(shown)
            } else {
                xml_escape(&String::from_utf8_lossy(&percent_decode(v.as_bytes())))
            };
            format!("<{name}>{v}</{name}>")
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><request>{fields}</request></soap:Body></soap:Envelope>"
    )
    .into_bytes()
}

/// A multipart/form-data body of `params` with `shown` in field `pick`
/// (`Spot::MultipartField`) or as an extra file part's file name (`Spot::MultipartFilename`);
/// returns the body and its content type.
fn multipart_body(
    params: &[(String, String)],
    pick: usize,
    shown: &str,
    header_safe: &str,
    spot: Spot,
) -> (Vec<u8>, String) {
    let boundary = "----pateWafBoundary7MA4YWxk";
    let mut b = String::new();
    for (k, (n, v)) in params.iter().enumerate() {
        let v = String::from_utf8_lossy(&percent_decode(v.as_bytes())).into_owned();
        if k == pick && spot == Spot::MultipartField {
            b.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{shown}\r\n"
            ));
        } else {
            b.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n"
            ));
        }
    }
    if spot == Spot::MultipartFilename {
        let name = header_safe.replace('"', "%22");
        b.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\nfile\r\n"
        ));
    }
    b.push_str(&format!("--{boundary}--\r\n"));
    (
        b.into_bytes(),
        format!("multipart/form-data; boundary={boundary}"),
    )
}

/// Puts `value` (decoded bytes) into a copy of the site request `template` at `spot`, encoded
/// the way the spot carries it; with `encode`, the value is first Base64-encoded (or, in JSON,
/// `\uXXXX`-escaped), as attackers hide payloads. The label is `label`.
pub fn place(
    template: &Record,
    value: &[u8],
    spot: Spot,
    encode: bool,
    label: Label,
    rng: &mut impl Rng,
) -> Record {
    let text = String::from_utf8_lossy(value).into_owned();
    let shown: String = if encode && spot != Spot::Json {
        base64(value)
    } else {
        text.clone()
    };
    let target = String::from_utf8_lossy(&template.target).into_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target.clone(), None),
    };
    let params = template_params(template, query.as_deref());
    let pick = rng.random_range(0..params.len());
    let Placed {
        mut method,
        target: mut new_target,
        mut body,
        mut content_type,
        mut headers,
    } = Placed::from(template);
    // Header values cannot carry raw line breaks.
    let header_safe = shown.replace(['\r', '\n'], " ");
    match spot {
        Spot::Query => {
            let mut q = pairs(query.as_deref().unwrap_or("").as_bytes());
            if q.is_empty() {
                q.push((params[pick].0.clone(), String::new()));
            }
            let k = rng.random_range(0..q.len());
            q[k].1 = url_encode(shown.as_bytes());
            new_target = format!("{path}?{}", join(&q));
        }
        Spot::Form => {
            let mut f = params.clone();
            f[pick].1 = url_encode(shown.as_bytes());
            method = "POST".into();
            new_target = path.clone();
            body = Some(join(&f).into_bytes());
            content_type = Some("application/x-www-form-urlencoded".into());
        }
        Spot::Path => {
            new_target = format!(
                "{}/{}{}",
                path.trim_end_matches('/'),
                url_encode(shown.as_bytes()),
                query.map(|q| format!("?{q}")).unwrap_or_default()
            );
        }
        Spot::UserAgent | Spot::Referer | Spot::Cookie | Spot::Forwarded | Spot::CustomHeader => {
            let (name, v) = header_spot(
                spot,
                &host_of(template),
                &path,
                &params[pick].0,
                &shown,
                header_safe,
                rng,
            );
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            headers.push((name.to_string(), v.into_bytes()));
        }
        Spot::Json | Spot::Xml | Spot::MultipartField | Spot::MultipartFilename | Spot::Text => {
            let (b, ct) = match spot {
                Spot::Text => (shown.clone().into_bytes(), "text/plain".to_string()),
                Spot::Json => (
                    json_body(&params, pick, &text, encode),
                    "application/json".to_string(),
                ),
                Spot::Xml => (
                    xml_body(&params, pick, &shown),
                    "text/xml; charset=utf-8".to_string(),
                ),
                _ => multipart_body(&params, pick, &shown, &header_safe, spot),
            };
            method = "POST".into();
            new_target = path.clone();
            body = Some(b);
            content_type = Some(ct);
        }
    }
    Placed {
        method,
        target: new_target,
        body,
        content_type,
        headers,
    }
    .into_record(label, template.line)
}

/// The template's parameters, query then form body; `id=1` when it has none.
fn template_params(template: &Record, query: Option<&str>) -> Vec<(String, String)> {
    let mut params = pairs(query.unwrap_or("").as_bytes());
    params.extend(pairs(template.body.as_deref().unwrap_or_default()));
    if params.is_empty() {
        params.push(("id".to_string(), "1".to_string()));
    }
    params
}

/// The template's `Host`, or `localhost`.
fn host_of(template: &Record) -> std::borrow::Cow<'_, str> {
    template
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or_else(|| "localhost".into(), |(_, v)| String::from_utf8_lossy(v))
}

/// A request being placed into: the template's method, target and body, its content type, and
/// its other headers (content type and length are written last, from the body).
struct Placed {
    method: String,
    target: String,
    body: Option<Vec<u8>>,
    content_type: Option<String>,
    headers: Vec<(String, Vec<u8>)>,
}

impl Placed {
    fn from(template: &Record) -> Placed {
        let is_content = |n: &str| {
            n.eq_ignore_ascii_case("content-type") || n.eq_ignore_ascii_case("content-length")
        };
        Placed {
            method: template.method.clone(),
            target: String::from_utf8_lossy(&template.target).into_owned(),
            body: template.body.clone(),
            content_type: template
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned()),
            headers: template
                .headers
                .iter()
                .filter(|(n, _)| !is_content(n))
                .cloned()
                .collect(),
        }
    }

    /// The record, with `Content-Type` and `Content-Length` of its body.
    fn into_record(mut self, label: Label, line: usize) -> Record {
        if let Some(b) = &self.body {
            if let Some(ct) = &self.content_type {
                self.headers
                    .push(("Content-Type".into(), ct.clone().into_bytes()));
            }
            self.headers
                .push(("Content-Length".into(), b.len().to_string().into_bytes()));
        }
        Record {
            method: self.method,
            target: self.target.into_bytes(),
            body: self.body,
            headers: self.headers,
            label: Some(label),
            line,
            client: None,
        }
    }
}

/// Methods a site's pages do not take, for [`tamper`]'s verb tampering.
pub const TAMPERED_METHODS: [&str; 4] = ["PUT", "DELETE", "PATCH", "TRACE"];

/// `template` (a request of the site) tampered the way web attacks and scanners do, labelled
/// malicious — public knowledge, no value of any corpus: with probability 1/2 its method replaced
/// by one of [`TAMPERED_METHODS`] (verb tampering; CRS's rule 911100 refuses methods outside GET,
/// HEAD, POST and OPTIONS), otherwise one parameter's name edited (a letter or digit appended,
/// or its last character replaced: a name the page never receives, what a positive-security WAF
/// calls an illegal parameter). A template without parameters gets the method.
pub fn tamper(template: &Record, rng: &mut impl Rng) -> Record {
    const NAME_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = template.clone();
    out.label = Some(Label::Malicious);
    let target = String::from_utf8_lossy(&template.target).into_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target.clone(), None),
    };
    let mut in_query = pairs(query.as_deref().unwrap_or("").as_bytes());
    let mut in_body = pairs(template.body.as_deref().unwrap_or_default());
    let verb = rng.random_range(0..2) == 0 || (in_query.is_empty() && in_body.is_empty());
    if verb {
        let others: Vec<&str> = TAMPERED_METHODS
            .into_iter()
            .filter(|m| !m.eq_ignore_ascii_case(&template.method))
            .collect();
        out.method = others[rng.random_range(0..others.len())].to_string();
        return out;
    }
    let pick = rng.random_range(0..in_query.len() + in_body.len());
    let name = if pick < in_query.len() {
        &mut in_query[pick].0
    } else {
        &mut in_body[pick - in_query.len()].0
    };
    let popped = if name.len() > 1 && rng.random_range(0..2) == 0 {
        name.pop()
    } else {
        None
    };
    // Never the character just removed: the name must change.
    let choices: Vec<char> = NAME_CHARS
        .iter()
        .map(|&b| b as char)
        .filter(|&c| Some(c) != popped)
        .collect();
    name.push(choices[rng.random_range(0..choices.len())]);
    if pick < in_query.len() {
        out.target = format!("{path}?{}", join(&in_query)).into_bytes();
    } else {
        let body = join(&in_body).into_bytes();
        for (n, v) in &mut out.headers {
            if n.eq_ignore_ascii_case("content-length") {
                *v = body.len().to_string().into_bytes();
            }
        }
        out.body = Some(body);
    }
    out
}

/// The header a header `spot` sets and its value carrying `shown` (`header_safe`: `shown` without
/// line breaks; User-Agent for any spot that is not a header); `host`, `path` and `param` (a
/// parameter name of the site request) shape the Referer ([`referer`]) and Cookie values.
fn header_spot(
    spot: Spot,
    host: &str,
    path: &str,
    param: &str,
    shown: &str,
    header_safe: String,
    rng: &mut impl Rng,
) -> (&'static str, String) {
    match spot {
        Spot::Referer => ("Referer", referer(host, path, param, shown, rng)),
        Spot::Cookie => (
            "Cookie",
            format!(
                "JSESSIONID=1A2B3C4D; {param}={}",
                url_encode(shown.as_bytes())
            ),
        ),
        Spot::Forwarded => ("X-Forwarded-For", header_safe),
        Spot::CustomHeader => ("X-Api-Filter", header_safe),
        _ => ("User-Agent", header_safe),
    }
}

/// Search engines a visitor may come from ([`referer`]).
const SEARCH_ENGINES: [&str; 4] = [
    "https://www.google.com/search",
    "https://www.bing.com/search",
    "https://duckduckgo.com/",
    "https://search.yahoo.com/search",
];

/// Query parameter names of search pages ([`referer`]).
const SEARCH_NAMES: [&str; 5] = ["q", "query", "search", "s", "term"];

/// A `Referer` URL carrying `shown` as a query value: the page a visitor came from. A third of
/// the time one of the site's pages (on `host`) with its own parameter (`path`, `param`), a third
/// a page of the site's directory with a search parameter, a third a search engine's result
/// page. The query of a Referer belongs to the referring page, not to the site, so the examples
/// do not only carry the site's own parameters there (the featurizer's `referer_as_url` reads it
/// the same way); both classes get the same shapes, so the shape does not decide the label.
fn referer(host: &str, path: &str, param: &str, shown: &str, rng: &mut impl Rng) -> String {
    let value = url_encode(shown.as_bytes());
    let name = SEARCH_NAMES[rng.random_range(0..SEARCH_NAMES.len())];
    match rng.random_range(0..3) {
        0 => format!("http://{host}{path}?{param}={value}"),
        1 => {
            let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
            format!("http://{host}{dir}?{name}={value}")
        }
        _ => {
            let engine = SEARCH_ENGINES[rng.random_range(0..SEARCH_ENGINES.len())];
            format!("{engine}?{name}={value}")
        }
    }
}

/// One round of percent-decoding (`+` is a space).
pub fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' if i + 2 < s.len() => {
                let hex = std::str::from_utf8(&s[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The value a public record carries: an HttpParams payload as it is; a Fwaf line (a path and
/// query) percent-decoded once.
pub fn public_value(record: &Record) -> Vec<u8> {
    percent_decode(&record.target)
}

/// The attack a Fwaf attack line carries, as a value to place, without the scanner's path and
/// parameter names (placed with them, a part model learnt page names such as `/contact.php` and
/// names such as `q` as attack signs): of its query's pieces (split at `&`), the value of the
/// piece (after `name=`, for a plain name) with the most characters other than letters and
/// digits, percent-decoded once; a line without a query, its path when the path holds a
/// character no ordinary path has; `None` for a bare path (a scanner asking for a file,
/// `/htbin/windmail.exe`: what no content model can tell from a page the site has, and the
/// site's format model's to flag) or an empty query.
pub fn fwaf_attack_value(record: &Record) -> Option<Vec<u8>> {
    let target = &record.target;
    let Some(q) = target.iter().position(|&b| b == b'?') else {
        let path = percent_decode(target);
        let ordinary = |b: &u8| b.is_ascii_alphanumeric() || b"/._-~".contains(b);
        return (!path.iter().all(ordinary)).then_some(path);
    };
    let plain_name = |n: &[u8]| {
        !n.is_empty()
            && n.iter()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-[]".contains(b))
    };
    let values = target[q + 1..].split(|&b| b == b'&').map(|piece| {
        let value = match piece.iter().position(|&b| b == b'=') {
            Some(eq) if plain_name(&piece[..eq]) => &piece[eq + 1..],
            _ => piece,
        };
        percent_decode(value)
    });
    let symbols = |v: &Vec<u8>| v.iter().filter(|b| !b.is_ascii_alphanumeric()).count();
    values
        .filter(|v| !v.is_empty())
        .max_by(|a, b| symbols(a).cmp(&symbols(b)).then(a.len().cmp(&b.len())))
}

/// A value the site itself sent in `record`: one of its query or form parameter values
/// (percent-decoded), or its last path segment when it has none.
pub fn own_value(record: &Record, rng: &mut impl Rng) -> Vec<u8> {
    let target = &record.target;
    let query = target
        .iter()
        .position(|&b| b == b'?')
        .map(|q| &target[q + 1..])
        .unwrap_or_default();
    let mut values: Vec<String> = pairs(query).into_iter().map(|(_, v)| v).collect();
    values.extend(
        pairs(record.body.as_deref().unwrap_or_default())
            .into_iter()
            .map(|(_, v)| v),
    );
    values.retain(|v| !v.is_empty());
    if values.is_empty() {
        let path = String::from_utf8_lossy(target);
        let path = path.split('?').next().unwrap_or_default();
        return percent_decode(path.rsplit('/').next().unwrap_or_default().as_bytes());
    }
    percent_decode(values[rng.random_range(0..values.len())].as_bytes())
}

/// Languages a browser asks for (`Accept-Language`), drawn uniformly ([`dress_as_browser`]).
const LANGUAGES: [&str; 12] = [
    "en-US", "en-GB", "es-ES", "es-MX", "fr-FR", "de-DE", "pt-BR", "it-IT", "nl-NL", "pl-PL",
    "ja-JP", "zh-CN",
];

/// The headers a browser sends beside its User-Agent on a top-level navigation, by the family
/// its User-Agent names: `Accept`, `Accept-Encoding`, and the `Accept-Language` for a language
/// tag and its base (the families' documented defaults; public knowledge, no site data).
fn browser_accepts(user_agent: &str, lang: &str, base: &str) -> [(&'static str, String); 3] {
    const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9";
    if user_agent.contains("Firefox/") {
        [
            ("Accept", format!("{HTML},*/*;q=0.8")),
            ("Accept-Encoding", "gzip, deflate, br, zstd".into()),
            ("Accept-Language", format!("{lang},{base};q=0.5")),
        ]
    } else if user_agent.contains("Chrome/") || user_agent.contains("CriOS/") {
        [
            (
                "Accept",
                format!("{HTML},image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
            ),
            ("Accept-Encoding", "gzip, deflate, br, zstd".into()),
            ("Accept-Language", format!("{lang},{base};q=0.9")),
        ]
    } else {
        [
            ("Accept", format!("{HTML},*/*;q=0.8")),
            ("Accept-Encoding", "gzip, deflate, br".into()),
            ("Accept-Language", lang.to_owned()),
        ]
    }
}

/// Whether `featurizer.known_browsers` makes this User-Agent's headers known: nine in ten, by a
/// hash of its text with its numbers collapsed (the shape `known_digit_runs` matches, so that a
/// browser left out is not known through another version of it; public data, the same in every
/// run). The tenth left unknown still dresses public examples of both classes, so that the
/// student also sees browsers it does not know on benign requests: with every one of them
/// known, a browser outside the list (a 9-digit build number of Google's iOS app) was read as
/// n-grams that only attacks in the User-Agent had carried, and blocked.
pub fn is_known_browser(user_agent: &str) -> bool {
    // FNV-1a, 64 bits: stable across platforms and releases (unlike std's hasher).
    let shape = featurizer::placement::collapse_digit_runs(user_agent);
    let hash = shape.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    hash % 10 != 0
}

/// Every header a browser of `user_agent`'s family may send with it by [`dress_as_browser`]:
/// its User-Agent, Accept and Accept-Encoding, and its Accept-Language in each of
/// [`LANGUAGES`] (the known values of `featurizer.known_browsers`).
pub fn browser_headers(user_agent: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("User-Agent".to_owned(), user_agent.as_bytes().to_vec())];
    for (k, lang) in LANGUAGES.iter().enumerate() {
        let base = lang.split('-').next().unwrap_or(lang);
        for (name, value) in browser_accepts(user_agent, lang, base) {
            if k == 0 || name == "Accept-Language" {
                out.push((name.to_owned(), value.into_bytes()));
            }
        }
    }
    out
}

/// Dresses `record` as a request of the browser `user_agent`: its User-Agent (kept as it is
/// when `keep_user_agent`, i.e. the example's value rides there) and the Accept,
/// Accept-Encoding and Accept-Language its family sends, in a language drawn from
/// [`LANGUAGES`]; the headers today's browsers no longer send (`Pragma`, `Cache-Control`,
/// `Accept-Charset`) are dropped. Every other header (Host, Cookie, Referer, the body's) stays.
pub fn dress_as_browser(
    record: &mut Record,
    user_agent: &str,
    keep_user_agent: bool,
    rng: &mut impl Rng,
) {
    let lang = LANGUAGES[rng.random_range(0..LANGUAGES.len())];
    let base = lang.split('-').next().unwrap_or(lang);
    let mut set: Vec<(&str, String)> = browser_accepts(user_agent, lang, base).into();
    if !keep_user_agent {
        set.push(("User-Agent", user_agent.to_owned()));
    }
    const DROPPED: [&str; 3] = ["pragma", "cache-control", "accept-charset"];
    record.headers.retain(|(n, _)| {
        !DROPPED.iter().any(|d| n.eq_ignore_ascii_case(d))
            && !set.iter().any(|(s, _)| n.eq_ignore_ascii_case(s))
    });
    // First, as browsers send them (the featurizer reads headers by name, not by order).
    for (k, (name, value)) in set.into_iter().enumerate() {
        record
            .headers
            .insert(k, (name.to_owned(), value.into_bytes()));
    }
}

/// Reads a file of User-Agent strings (`public_examples.user_agents`): one per line, blank
/// lines and `#` lines skipped; a line that is not UTF-8 or holds a control character (it could
/// not be sent as a header) is an error naming its line.
pub fn load_user_agents(path: &std::path::Path) -> crate::error::Result<Vec<String>> {
    let bytes = std::fs::read(path).map_err(|source| crate::error::Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut out = Vec::new();
    for (k, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bad = |problem| crate::error::Error::HeaderValueLine {
            path: path.to_owned(),
            line: k + 1,
            problem,
        };
        let text = std::str::from_utf8(line)
            .map_err(|_| bad("not UTF-8 (expected one User-Agent string per line)"))?;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        if text.chars().any(char::is_control) {
            return Err(bad("a control character (a header value cannot carry one)"));
        }
        out.push(text.to_owned());
    }
    if out.is_empty() {
        return Err(crate::error::Error::Empty {
            what: path.display().to_string(),
            missing: "no User-Agent line",
        });
    }
    Ok(out)
}

/// How many examples [`synthesize`] draws, where its benign ones go, and the share of tampered
/// requests among the malicious ones.
#[derive(Debug, Clone, Copy)]
pub struct Synthesis {
    /// Examples drawn.
    pub count: usize,
    /// The spots a benign example's value may take.
    pub benign_spots: BenignSpots,
    /// Share of the malicious examples that are tampered benign requests instead.
    pub tamperings: f64,
}

/// `count` labelled examples, half of each class, each at a spot drawn uniformly from
/// [`PLACEMENTS`] (a benign one from `benign_spots`' spots) and encoded one time in five:
/// - malicious: a public attack value (drawn uniformly from `malicious`) placed into a site
///   request drawn from `templates`;
/// - benign: a request the teachers labelled benign (drawn from `benign_templates`), re-shaped
///   with one of its own values at the spot ([`own_value`]). Benign values of public corpora are
///   not used: placed into the site's parameters they look exactly like what the site's own
///   data calls anomalous (a value of the wrong kind), and would teach the opposite of the
///   teachers' labels. The site's own values keep the class boundary where the site's data puts
///   it, while every placement carries both classes, so where a value rides does not decide its
///   label.
///
/// With `tamperings` > 0, that share of the malicious examples is instead a request the teachers
/// labelled benign, tampered ([`tamper`]: another method, or a parameter name edited).
///
/// With `user_agents` (real browsers' User-Agent strings), each example of either class is, with
/// probability 1/2, dressed as a request of one of those browsers ([`dress_as_browser`]): the
/// same share in both classes, so a browser's headers do not decide the label either.
/// Returns the examples and, per example, whether it is a tampered request (`tamperings`) rather
/// than one carrying a value.
pub fn synthesize(
    templates: &[&Record],
    benign_templates: &[&Record],
    malicious: &[Vec<u8>],
    draw: &Synthesis,
    user_agents: &[String],
    rng: &mut impl Rng,
) -> (Vec<Record>, Vec<bool>) {
    let Synthesis {
        count,
        benign_spots,
        tamperings,
    } = *draw;
    let mut out = Vec::with_capacity(count);
    let mut tampered = Vec::with_capacity(count);
    if templates.is_empty() || malicious.is_empty() {
        return (out, tampered);
    }
    let benign = benign_spots.spots();
    for k in 0..count {
        let mut spot = PLACEMENTS[rng.random_range(0..PLACEMENTS.len())];
        let encode = rng.random_range(0..5) == 0;
        if k % 2 == 1 && !benign_templates.is_empty() {
            if benign_spots != BenignSpots::Every {
                // A draw of its own (the default's draws are unchanged).
                spot = benign[rng.random_range(0..benign.len())];
            }
            let template = benign_templates[rng.random_range(0..benign_templates.len())];
            let value = own_value(template, rng);
            out.push(place(template, &value, spot, encode, Label::Benign, rng));
            tampered.push(false);
        } else if tamperings > 0.0
            && !benign_templates.is_empty()
            && rng.random_range(0.0..1.0) < tamperings
        {
            // Drawn only with tamperings, so that runs without are as before.
            let template = benign_templates[rng.random_range(0..benign_templates.len())];
            out.push(tamper(template, rng));
            tampered.push(true);
        } else {
            let value = &malicious[rng.random_range(0..malicious.len())];
            let template = templates[rng.random_range(0..templates.len())];
            out.push(place(template, value, spot, encode, Label::Malicious, rng));
            tampered.push(false);
        }
        // Draws only with a User-Agent list, so that runs without one are as before.
        if !user_agents.is_empty() && rng.random_range(0..2) == 0 {
            let ua = &user_agents[rng.random_range(0..user_agents.len())];
            let last = out.last_mut().expect("pushed above");
            dress_as_browser(last, ua, spot == Spot::UserAgent, rng);
        }
    }
    (out, tampered)
}

/// A plausible public IPv4 address (not private, loopback, link-local, shared or multicast), as a
/// load balancer writes a client's address.
pub fn public_ipv4(rng: &mut impl Rng) -> String {
    loop {
        let a: u8 = rng.random_range(1..=223);
        let b: u8 = rng.random_range(0..=255);
        let c: u8 = rng.random_range(0..=255);
        let d: u8 = rng.random_range(1..=254);
        let reserved = matches!(a, 10 | 127)
            || (a == 169 && b == 254)
            || (a == 172 && (16..32).contains(&b))
            || (a == 192 && b == 168)
            || (a == 100 && (64..128).contains(&b));
        if !reserved {
            return format!("{a}.{b}.{c}.{d}");
        }
    }
}

/// Adds the headers a load balancer or reverse proxy in front of the site writes: an
/// `X-Forwarded-For` of 1–3 comma-separated public addresses ([`public_ipv4`]) and
/// `X-Forwarded-Proto: https`, each only where the request has none (a placed value in
/// `X-Forwarded-For` stays). The label is left as it is.
pub fn add_forwarding_headers(record: &mut Record, rng: &mut impl Rng) {
    let has = |record: &Record, name: &str| header_value(record, name).is_some();
    if !has(record, "X-Forwarded-For") {
        let hops = rng.random_range(1..=3);
        let value = (0..hops)
            .map(|_| public_ipv4(rng))
            .collect::<Vec<_>>()
            .join(", ");
        record
            .headers
            .push(("X-Forwarded-For".to_string(), value.into_bytes()));
    }
    if !has(record, "X-Forwarded-Proto") {
        record
            .headers
            .push(("X-Forwarded-Proto".to_string(), b"https".to_vec()));
    }
}

/// The value of the request's first header `name` (any case).
fn header_value<'a>(record: &'a Record, name: &str) -> Option<&'a [u8]> {
    record
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice())
}

/// Adds a `Referer` naming one of the site's `pages` (targets, path and query as sent) on the
/// request's own `Host`, shaped as [`referer`] shapes the placed examples' (one of the page's
/// query values under its own name, a search parameter of the page's directory or a search
/// engine's), or the bare page where it has no query. Only where the request has a `Host` and no
/// `Referer`; returns whether it added one. The label is left as it is.
pub fn add_site_referer(record: &mut Record, pages: &[&[u8]], rng: &mut impl Rng) -> bool {
    if pages.is_empty() || header_value(record, "Referer").is_some() {
        return false;
    }
    let Some(host) = header_value(record, "Host").map(|h| String::from_utf8_lossy(h).into_owned())
    else {
        return false;
    };
    let page = String::from_utf8_lossy(pages[rng.random_range(0..pages.len())]);
    let (path, query) = page.split_once('?').unwrap_or((&page, ""));
    let named: Vec<(String, String)> = pairs(query.as_bytes())
        .into_iter()
        .filter(|(name, _)| !name.is_empty())
        .collect();
    let url = if named.is_empty() {
        format!("http://{host}{path}")
    } else {
        let (name, value) = &named[rng.random_range(0..named.len())];
        let shown = String::from_utf8_lossy(&percent_decode(value.as_bytes())).into_owned();
        referer(&host, path, name, &shown, rng)
    };
    record
        .headers
        .push(("Referer".to_string(), url.into_bytes()));
    true
}

/// Which rows get a header added after their label is fixed ([`add_forwarding_headers`],
/// [`add_site_referer`]): in each class of `malicious` (one per row), a random `share` of its
/// rows (rounded), so that both classes carry the header at the same rate and its presence does
/// not tell the label. The draw depends on the labels only through the classes' sizes.
pub fn share_of_each_class(malicious: &[bool], share: f64, rng: &mut impl Rng) -> Vec<bool> {
    let mut chosen = vec![false; malicious.len()];
    if share <= 0.0 {
        return chosen;
    }
    for class in [false, true] {
        let rows: Vec<usize> = (0..malicious.len())
            .filter(|&i| malicious[i] == class)
            .collect();
        let take = ((rows.len() as f64) * share.min(1.0)).round() as usize;
        let order = crate::rng::shuffled(rows.len(), rng);
        for &k in order.iter().take(take) {
            chosen[rows[k]] = true;
        }
    }
    chosen
}

/// For the content-only threshold (`student.public_examples.content_only_validation`): in each
/// spot of [`PLACEMENTS`], `per_spot` public benign values and as many public attack values, each
/// drawn at random and placed into a random template (one in five encoded), labelled as their
/// value is. Half the templates are first stripped to their `Host` and `Connection` headers, as
/// a script, a scanner or an API client sends a request: content alone, a value weighs more in a
/// request with few other features (each window is l2-normalized), and a benign header value
/// scored twice as high in such a request (median 0.22 against 0.11 with a browser's headers), so a
/// threshold held only on the site's full requests blocked 15–26 % of benign header values sent
/// by a bare client (EVALUATION.md). Empty when a list is empty.
pub fn placed_in_every_spot(
    templates: &[&Record],
    benign: &[Vec<u8>],
    malicious: &[Vec<u8>],
    per_spot: usize,
    rng: &mut impl Rng,
) -> Vec<(Spot, Record)> {
    let mut out = Vec::with_capacity(PLACEMENTS.len() * per_spot * 2);
    if templates.is_empty() || benign.is_empty() || malicious.is_empty() {
        return out;
    }
    for spot in PLACEMENTS {
        for (values, label) in [(benign, Label::Benign), (malicious, Label::Malicious)] {
            for _ in 0..per_spot {
                let value = &values[rng.random_range(0..values.len())];
                let template = templates[rng.random_range(0..templates.len())];
                let encode = rng.random_range(0..5) == 0;
                let placed = if rng.random_range(0..2) == 0 {
                    let mut bare = template.clone();
                    bare.headers.retain(|(name, _)| {
                        name.eq_ignore_ascii_case("host") || name.eq_ignore_ascii_case("connection")
                    });
                    place(&bare, value, spot, encode, label, rng)
                } else {
                    place(template, value, spot, encode, label, rng)
                };
                out.push((spot, placed));
            }
        }
    }
    out
}
