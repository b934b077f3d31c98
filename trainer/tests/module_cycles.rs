//! The trainer's modules import each other in one direction: no cycle. A module's imports are
//! the `crate::…` and `super::…` paths its code names (comments and `#[cfg(test)]` modules left
//! out), resolved to the longest path that is a module of `trainer/src`.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`stages::split`) → source text, for every `.rs` file under `dir`.
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            modules(&path, &format!("{prefix}{name}::"), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let module = match name.as_str() {
                "mod" => prefix.trim_end_matches("::").to_string(),
                "lib" | "main" if prefix.is_empty() => continue,
                _ => format!("{prefix}{name}"),
            };
            out.insert(module, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The code of `text` without comment lines and without what follows its first `#[cfg(test)]`.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after each occurrence of `anchor` (`crate::`), as lists of identifiers.
fn paths_after<'a>(text: &'a str, anchor: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(anchor) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + anchor.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        out.push(rest[..end].split("::").filter(|s| !s.is_empty()).collect());
    }
    out
}

/// Each module's imports of other modules.
fn imports(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (module, text) in modules {
        let text = code(text);
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
        let mut to = BTreeSet::new();
        for (anchor, base) in [("crate::", ""), ("super::", parent)] {
            for path in paths_after(&text, anchor) {
                let target = (1..=path.len()).rev().find_map(|i| {
                    let joined = path[..i].join("::");
                    let name = if base.is_empty() {
                        joined
                    } else {
                        format!("{base}::{joined}")
                    };
                    modules.contains_key(&name).then_some(name)
                });
                if let Some(t) = target.filter(|t| t != module) {
                    to.insert(t);
                }
            }
        }
        edges.insert(module.clone(), to);
    }
    edges
}

/// A cycle through `start` if there is one (depth-first search back to it).
fn cycle_through(edges: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in &edges[&node] {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn the_trainer_modules_import_each_other_without_a_cycle() {
    let mut found = BTreeMap::new();
    modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut found,
    );
    let edges = imports(&found);
    // Not vacuous: the reader sees the imports that exist.
    assert!(edges["stages::teach"].contains("teachers"), "{edges:?}");
    assert!(edges["stages::student"].contains("stages::featurize"));
    for module in edges.keys() {
        if let Some(cycle) = cycle_through(&edges, module) {
            panic!("import cycle: {} -> {module}", cycle.join(" -> "));
        }
    }
}

#[test]
fn a_cycle_is_found() {
    let mut m = BTreeMap::new();
    m.insert("a".to_string(), "use crate::b::X;".to_string());
    m.insert("b".to_string(), "fn f() { crate::c::g() }".to_string());
    m.insert(
        "c".to_string(),
        "// crate::a::h in a comment only\nfn g() {}".to_string(),
    );
    m.insert("d::e".to_string(), "use super::f::Y;".to_string());
    m.insert("d::f".to_string(), "use crate::a::Z;".to_string());
    let edges = imports(&m);
    assert_eq!(edges["d::e"], BTreeSet::from(["d::f".to_string()]));
    assert!(cycle_through(&edges, "a").is_none(), "{edges:?}");
    m.insert("c".to_string(), "use super::a::h;".to_string());
    let edges = imports(&m);
    assert_eq!(
        cycle_through(&edges, "a"),
        Some(vec!["a".to_string(), "b".to_string(), "c".to_string()])
    );
}
