//! `pate-experiments evaluation`: the tables read off run folders (fixtures: a real run's
//! report.json, a trimmed site_eval summary, a replay result), their place in the documents, the
//! derived configs, and that the repository's documents hold the blocks it writes.
use std::path::{Path, PathBuf};

use experiments::evaluation::{doc, plan, tables};
use experiments::Error;
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/evaluation");

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string(value).unwrap()).unwrap();
}

/// A report with this TPR, and labels from the release or assumed benign.
fn report(tpr: f64, no_teachers: bool) -> Value {
    let mut r = fixture("report.json");
    r["metrics"]["tpr"] = tpr.into();
    if no_teachers {
        r["labels_from"] = "assume_benign".into();
    }
    r
}

fn layout(out: &Path) -> plan::Layout {
    plan::Layout {
        out: out.to_owned(),
        runs: 3,
        baseline_runs: 1,
    }
}

/// Every run of every recipe, the `i`-th run's TPR 0.5 + i / 10 (so the order shows).
fn populate(layout: &plan::Layout) {
    for recipe in plan::RECIPES {
        for (i, dir) in layout.run_dirs(recipe).iter().enumerate() {
            let no_teachers = matches!(
                recipe.variant,
                plan::Variant::NoTeachers | plan::Variant::NoTeachersReview(_)
            );
            write(
                &dir.join("report.json"),
                &report(0.5 + (i + 1) as f64 / 10.0, no_teachers),
            );
            if recipe.part == plan::Part::Site {
                let mut s = fixture("site-summary.json");
                if i == 1 {
                    s["placements"]["hdr:cookie"]["content"]["attack"] = serde_json::json!([3, 4]);
                }
                write(&dir.join("eval/summary.json"), &s);
            }
        }
    }
    for i in 1..=layout.runs {
        for checks in [false, true] {
            write(&layout.replay_result(i, checks), &fixture("replay.json"));
        }
    }
}

fn row<'a>(table: &'a str, starts: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(starts))
        .unwrap_or_else(|| panic!("no row {starts:?} in\n{table}"))
}

#[test]
fn tables_show_each_run_in_order_and_no_epsilon_without_teachers() {
    let dir = tempfile::tempdir().unwrap();
    let layout = layout(dir.path());
    populate(&layout);
    let csic = tables::csic_site(&layout).unwrap();
    let pate = row(&csic, "| **`configs/csic-site.yaml`**");
    assert!(pate.contains("| 60.0 / 70.0 / 80.0 % |"), "{pate}");
    assert!(pate.ends_with("| 0.985 |"), "{pate}");
    let none = row(&csic, "| no teachers (");
    assert!(none.contains("| 1 fresh |"), "{none}");
    assert!(none.ends_with("| – |"), "{none}");

    let site = tables::site(&layout).unwrap();
    let pate = row(&site, "| **`configs/site.yaml`**");
    // Run 2's cookie placement blocked 3 of 4 attacks: the worst placement of that run.
    assert!(pate.contains("/ 75.0 (hdr:cookie) /"), "{pate}");
    assert!(pate.contains("0 of 39 / 0 of 39 / 0 of 39"), "{pate}");

    let summary = tables::summary(&layout).unwrap();
    assert!(summary.contains("60.0–80.0 % of attacks"), "{summary}");
    assert!(
        summary.contains("benign values in headers and bodies ≤ "),
        "{summary}"
    );
}

#[test]
fn a_missing_run_leaves_its_table_out_and_the_block_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let layout = layout(dir.path());
    populate(&layout);
    let gone = layout.run_dir(plan::recipe(plan::Part::CsicTest, "pate").unwrap(), 2);
    std::fs::remove_file(gone.join("report.json")).unwrap();
    let rendered = tables::render_all(&layout).unwrap();
    let names: Vec<&str> = rendered.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        ["site", "csic-site", "replay"],
        "summary and csic-test need every csic-test run"
    );
    match tables::csic_test(&layout) {
        Err(Error::MissingResult { path }) => assert_eq!(path, gone.join("report.json")),
        other => panic!("expected the missing report named, got {other:?}"),
    }

    let doc_path = dir.path().join("DOC.md");
    let text = "intro\n<!-- evaluation:csic-test -->\nold table\n<!-- /evaluation:csic-test -->\n\
                mid\n<!-- evaluation:site -->\nold\n<!-- /evaluation:site -->\nend\n";
    std::fs::write(&doc_path, text).unwrap();
    let written = doc::update(&doc_path, &rendered).unwrap();
    assert_eq!(written, ["site"]);
    let after = std::fs::read_to_string(&doc_path).unwrap();
    let site = &rendered[0].1;
    let expected = format!(
        "intro\n<!-- evaluation:csic-test -->\nold table\n<!-- /evaluation:csic-test -->\n\
         mid\n<!-- evaluation:site -->\n{site}<!-- /evaluation:site -->\nend\n"
    );
    assert_eq!(after, expected);
}

#[test]
fn a_document_without_the_block_is_an_error_naming_it() {
    let path = PathBuf::from("EXAMPLE.md");
    let text = "<!-- evaluation:site -->\nno end\n";
    match doc::replace_block(text, &path, "site", "x\n") {
        Err(e @ Error::DocBlock { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("EXAMPLE.md") && m.contains("<!-- /evaluation:site -->"),
                "{m}"
            );
        }
        other => panic!("expected DocBlock, got {other:?}"),
    }
    // A marker inside a line is not a block.
    let inline = "see `<!-- evaluation:site -->` and `<!-- /evaluation:site -->`\n";
    assert!(doc::replace_block(inline, &path, "site", "x\n").is_err());
}

#[test]
fn the_documents_hold_every_block_the_evaluation_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let known: Vec<&str> = tables::BLOCKS.iter().map(|(n, _)| *n).collect();
    let evaluation = std::fs::read_to_string(root.join("EVALUATION.md")).unwrap();
    let names = doc::block_names(&evaluation);
    assert_eq!(names, known, "EVALUATION.md's blocks, in order");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(doc::block_names(&readme), ["summary"], "README.md's blocks");
    for name in names {
        doc::replace_block(&evaluation, Path::new("EVALUATION.md"), &name, "").unwrap();
    }
}

#[test]
fn derived_configs_apply_their_variant() {
    let tools = plan::Tools {
        repo: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        trainer: PathBuf::from("pate-trainer"),
    };
    let both = plan::recipe(plan::Part::CsicSite, "no-teachers-review-200").unwrap();
    let config = plan::derived_config(&tools, both).unwrap();
    assert_eq!(
        config.student.labels_from,
        trainer::config::LabelsFrom::AssumeBenign
    );
    assert_eq!(config.site.as_ref().unwrap().review, 200);
    let pate = plan::recipe(plan::Part::CsicSite, "pate").unwrap();
    let config = plan::derived_config(&tools, pate).unwrap();
    assert_eq!(
        config.student.labels_from,
        trainer::config::LabelsFrom::Release
    );
    assert_eq!(config.site.as_ref().unwrap().review, 0);
}
