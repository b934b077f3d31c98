//! Attack signatures as features: a public prior, like libinjection's, for the attack classes
//! libinjection does not look at (path traversal, system file names, shell commands, long runs
//! of one byte).
//!
//! The teachers learn the site's own shapes from private logs, the student learns from their
//! labels and from public attack examples; neither has seen every way to spell `../` or every
//! system file. Measured on the generic validation split (HttpParamsDataset's `payload_train.csv`
//! in 13 placements, EVALUATION.md): nearly all the attacks the full-CSIC bundles missed in the
//! header and body placements were of these kinds — traversal spelled with hexadecimal literals
//! (`/0x2e0x2e0x2f…`, `/..0x5c..0x5c…`), `/usr/bin/id`, `file:/boot.ini`, `; /bin/sleep 31 ;`,
//! 100 bytes of `/aaaa…` — scored 0.1–0.7 there. Each [`SIGNATURE_FEATURES`] entry is one
//! feature the model weighs (it is not a rule that blocks); the patterns are public knowledge,
//! read from no private data, so they cost no privacy.

use std::sync::OnceLock;

/// Placement-feature body of a value with a path traversal (`../`, `..\`, `/..`, also spelled
/// with the hexadecimal literals `0x2e`, `0x2f`, `0x5c`); `pl:sig:traversal` in the vocabulary.
pub const SIGNATURE_TRAVERSAL: &str = "sig:traversal";
/// Placement-feature body of a value naming a system file or directory (`/etc/passwd`,
/// `/usr/bin/`, `boot.ini`, `c:\`, a `file:` URL, …); `pl:sig:system_file`.
pub const SIGNATURE_SYSTEM_FILE: &str = "sig:system_file";
/// Placement-feature body of a value with a shell command after a command separator
/// (`; sleep 5`, `| id`, `` `whoami` ``, `$(cat …)`); `pl:sig:shell`.
pub const SIGNATURE_SHELL: &str = "sig:shell";
/// Placement-feature body of a value with one byte repeated [`LONG_RUN`] times or more in a row
/// (a buffer-overflow probe); `pl:sig:long_run`.
pub const SIGNATURE_LONG_RUN: &str = "sig:long_run";
/// Every signature feature body, in vocabulary order.
pub const SIGNATURE_FEATURES: [&str; 4] = [
    SIGNATURE_TRAVERSAL,
    SIGNATURE_SYSTEM_FILE,
    SIGNATURE_SHELL,
    SIGNATURE_LONG_RUN,
];

/// The shortest run of one repeated byte that counts as [`SIGNATURE_LONG_RUN`].
pub const LONG_RUN: usize = 64;

/// Which of [`SIGNATURE_FEATURES`] `value` (a decoded part's value) fires, in that order.
pub fn signature_flags(value: &[u8]) -> [bool; 4] {
    let long_run = has_long_run(value);
    // Letters and digits alone can be none of the others (every pattern needs a `.`, `/`, `\`,
    // `:` or separator), and most parameter values are such: skip the normalization.
    if value.iter().all(u8::is_ascii_alphanumeric) {
        return [false, false, false, long_run];
    }
    let text = normalized(value);
    let [traversal, system_file, shell] = patterns();
    [
        traversal.is_match(&text),
        system_file.is_match(&text),
        shell.is_match(&text),
        long_run,
    ]
}

/// Lower-cased, `\` read as `/`, and the hexadecimal literals of `.`, `/` and `\` (`0x2e`,
/// `0x2f`, `0x5c`, which some decoders and file APIs accept) read as the characters.
fn normalized(value: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(value).to_ascii_lowercase();
    // One allocation for most values (the proxy's hot path): the rewrites only where they apply.
    if text.contains("0x") {
        text = text
            .replace("0x2e", ".")
            .replace("0x2f", "/")
            .replace("0x5c", "/");
    }
    if text.contains('\\') {
        text = text.replace('\\', "/");
    }
    text
}

fn has_long_run(value: &[u8]) -> bool {
    let mut run = 0usize;
    let mut last = None;
    for &b in value {
        if Some(b) == last {
            run += 1;
            if run >= LONG_RUN {
                return true;
            }
        } else {
            last = Some(b);
            run = 1;
        }
    }
    false
}

/// The traversal, system-file and shell patterns (over [`normalized`] text), compiled once.
fn patterns() -> &'static [regex::Regex; 3] {
    static RE: OnceLock<[regex::Regex; 3]> = OnceLock::new();
    RE.get_or_init(|| {
        let compile = |p: &str| regex::Regex::new(p).expect("signature pattern compiles");
        [
            // `../`, `/..` (also `/...`, `..//`, and `..` alone as a whole value).
            compile(r"\.\./|/\.\.|^\.\.$"),
            compile(concat!(
                r"/etc/(?:passwd|shadow|group|hosts|issue|motd|crontab)",
                r"|/(?:usr/)?s?bin/|/proc/(?:self|version|cpuinfo)|/var/log/|/dev/(?:null|tcp)",
                r"|(?:boot|win|system)\.ini|system32|global\.asa|web\.config|\.ht(?:access|passwd)",
                r"|wwwroot|inetpub|^file:|^[a-z]:/",
            )),
            // A command after a separator (`;`, `|`, `&`, a backtick, `$(`, a newline),
            // optionally through /bin/, and followed by a space, the end or a metacharacter
            // (not by `=`: a cookie `a=1; id=2` names no command).
            compile(concat!(
                r"(?:[;|&`\n]|\$\()\s*(?:/(?:usr/)?s?bin/)?",
                r"(?:sleep|id|cat|ls|wget|curl|nc|netcat|ncat|bash|sh|zsh|ping|whoami|uname|echo",
                r"|ifconfig|ipconfig|netstat|ps|kill|rm|chmod|perl|python[0-9.]*|php|ruby",
                r"|nslookup|dir|type|net|cmd|powershell|tftp|telnet|uptime|hostname)",
                r"(?:\s|$|[;|&`'\x22)<>])",
            )),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signature_fires_on_its_kind_and_not_on_plain_values() {
        let fires = |v: &str| signature_flags(v.as_bytes());
        for v in [
            "../../etc/hosts",
            "/0x2e0x2e0x2f0x2e0x2e0x2f{file}",
            "/..0x5c..0x5c..0x5c{file}",
            "/...{file}",
            "..\\..\\boot",
            "..",
        ] {
            assert!(fires(v)[0], "traversal: {v}");
        }
        for v in [
            "/usr/bin/id",
            "file:/boot.ini",
            "d:inetpubwwwrootglobal.asa",
            "/etc/passwd",
            "C:\\Windows\\win.ini",
        ] {
            assert!(fires(v)[1], "system file: {v}");
        }
        for v in [
            "; /bin/sleep 31 ;",
            "a|id",
            "`whoami`",
            "$(cat x)",
            "1 && ping -c 3 x",
        ] {
            assert!(fires(v)[2], "shell: {v}");
        }
        assert!(fires(&format!("/{}", "a".repeat(LONG_RUN)))[3]);
        assert!(!fires(&"a".repeat(LONG_RUN - 1))[3]);
        for v in [
            "Queso Manchego",
            "jose.garcia@example.com",
            "Calle Mayor 3, 2º",
            "/tienda1/publico/anadir.jsp",
            "id=5; path=/",
            "sid=1; id=2; type=3",
            "2445",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
            "text/html,application/xhtml+xml;q=0.9",
            "wait... what",
            "identity",
        ] {
            assert_eq!(fires(v), [false; 4], "benign: {v}");
        }
    }
}
