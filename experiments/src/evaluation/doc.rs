//! Writing the rendered tables into the documents: each table sits between two comment lines,
//! `<!-- evaluation:NAME -->` and `<!-- /evaluation:NAME -->`; the text between them is replaced,
//! everything else is kept byte for byte.
use std::path::Path;

use crate::error::{Error, Result};

/// The opening and closing lines of block `name`.
pub fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- evaluation:{name} -->"),
        format!("<!-- /evaluation:{name} -->"),
    )
}

/// The names of the blocks `text` holds, in order.
pub fn block_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("<!-- evaluation:")?
                .strip_suffix(" -->")
                .map(str::to_string)
        })
        .collect()
}

/// `text` with block `name`'s content replaced by `content`; `path` names the document in errors.
pub fn replace_block(text: &str, path: &Path, name: &str, content: &str) -> Result<String> {
    let (begin, end) = markers(name);
    let missing = || Error::DocBlock {
        path: path.to_owned(),
        begin: begin.clone(),
        end: end.clone(),
    };
    let line_start = |needle: &str, from: usize| {
        text[from..]
            .match_indices(needle)
            .map(|(i, _)| from + i)
            .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
    };
    let open = line_start(&begin, 0).ok_or_else(missing)?;
    let body = open + begin.len();
    let body = body + usize::from(text[body..].starts_with('\n'));
    let close = line_start(&end, body).ok_or_else(missing)?;
    let mut out = String::with_capacity(text.len() + content.len());
    out.push_str(&text[..body]);
    out.push_str(content);
    if !content.is_empty() && !content.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&text[close..]);
    Ok(out)
}

/// Writes every rendered block the document holds into it (atomically); returns the names
/// written. A document without any of the blocks is an error (it is not one the evaluation
/// keeps).
pub fn update(path: &Path, rendered: &[(&str, String)]) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let names = block_names(&text);
    if names.is_empty() {
        let (begin, end) = markers("NAME");
        return Err(Error::DocBlock {
            path: path.to_owned(),
            begin,
            end,
        });
    }
    let mut out = text.clone();
    let mut written = Vec::new();
    for (name, content) in rendered {
        if names.iter().any(|n| n == name) {
            out = replace_block(&out, path, name, content)?;
            written.push(name.to_string());
        }
    }
    if out != text {
        atomic_write::write_atomic(path, out.as_bytes()).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
    }
    Ok(written)
}
