//! Public examples placed into the site's request shapes: every spot puts the value where the
//! featurizer's placement split finds it, decoded, under the expected placement.
use datasets::{Label, Record};
use featurizer::placement::split_request;
use featurizer::{Placement, PlacementConfig};
use rand::SeedableRng;
use trainer::public_examples::{
    add_forwarding_headers, add_site_referer, dress_as_browser, load_user_agents, place,
    share_of_each_class, synthesize, BenignSpots, Spot, Synthesis, PLACEMENTS, TAMPERED_METHODS,
};

mod common;

fn template() -> Record {
    Record {
        method: "POST".into(),
        target: b"/tienda1/publico/anadir.jsp?id=3".to_vec(),
        body: Some(b"nombre=Queso+Manchego&precio=39".to_vec()),
        headers: vec![
            (
                "User-Agent".into(),
                b"Mozilla/5.0 (compatible; Konqueror/3.5; Linux)".to_vec(),
            ),
            (
                "Content-Type".into(),
                b"application/x-www-form-urlencoded".to_vec(),
            ),
            ("Host".into(), b"localhost:8080".to_vec()),
        ],
        label: None,
        line: 1,
        client: None,
    }
}

fn expected(spot: Spot) -> &'static [Placement] {
    match spot {
        Spot::Query => &[Placement::Query],
        Spot::Form => &[Placement::Form],
        Spot::Path => &[Placement::Path],
        Spot::UserAgent => &[Placement::HdrUserAgent],
        Spot::Referer => &[Placement::HdrReferer],
        Spot::Cookie => &[Placement::HdrCookie],
        Spot::Forwarded => &[Placement::HdrForwarded],
        Spot::CustomHeader => &[Placement::HdrOther],
        Spot::Json => &[Placement::JsonValue],
        Spot::Xml => &[Placement::XmlText],
        Spot::MultipartField => &[Placement::MpField],
        Spot::MultipartFilename => &[Placement::MpFilename],
        Spot::Text => &[Placement::Text],
    }
}

#[test]
fn every_spot_puts_the_value_where_the_featurizer_reads_it_plain_and_encoded() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
    let value = b"' union select password from users--";
    for spot in PLACEMENTS {
        for encode in [false, true] {
            let r = place(&template(), value, spot, encode, Label::Malicious, &mut rng);
            assert_eq!(r.label, Some(Label::Malicious));
            let split = split_request(&r.parts(), &PlacementConfig::default(), 3, true);
            let found = split.parts.iter().any(|p| {
                expected(spot).contains(&p.placement)
                    && p.value.contains("' union select password from users--")
            });
            assert!(
                found,
                "{spot:?} encode {encode}: {:?}\n{:?}",
                split.parts, r
            );
        }
    }
}

#[test]
fn synthesize_balances_the_classes_and_uses_the_sites_own_values_for_benign() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let t = template();
    let attacks = vec![b"<script>alert(1)</script>".to_vec()];
    let out = synthesize(
        &[&t],
        &[&t],
        &attacks,
        &Synthesis {
            count: 100,
            benign_spots: BenignSpots::Every,
            tamperings: 0.0,
        },
        &[],
        &mut rng,
    )
    .0;
    assert_eq!(out.len(), 100);
    let malicious = out
        .iter()
        .filter(|r| r.label == Some(Label::Malicious))
        .count();
    assert_eq!(malicious, 50);
    for r in out.iter().filter(|r| r.label == Some(Label::Benign)) {
        let all = format!("{:?}", r);
        assert!(!all.contains("script"), "{all}");
    }
}

/// With `headers_and_bodies`, no benign example moves a site value into a parameter or the path:
/// its path, query and form pairs are the template's (a body example carries them in its body), while
/// the attacks still take every spot.
#[test]
fn benign_examples_can_keep_the_request_line_and_form_as_the_site_sent_them() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let t = template();
    let attacks = vec![b"<script>alert(1)</script>".to_vec()];
    let site_pairs = |r: &Record| {
        let split = split_request(
            &featurizer::RequestParts {
                method: &r.method,
                target: &r.target,
                body: r.body.as_deref(),
                headers: featurizer::Headers::Owned(&r.headers),
                excluded_fields: Default::default(),
            },
            &PlacementConfig::default(),
            3,
            true,
        );
        let mut pairs: Vec<(Placement, String, String)> = split
            .parts
            .into_iter()
            .filter(|p| {
                matches!(
                    p.placement,
                    Placement::Query | Placement::Form | Placement::Path
                )
            })
            .map(|p| (p.placement, p.name, p.value))
            .collect();
        pairs.sort();
        pairs
    };
    let original = site_pairs(&t);
    let mut moved = [0usize; 2];
    for (k, spots) in [BenignSpots::Every, BenignSpots::HeadersAndBodies]
        .into_iter()
        .enumerate()
    {
        let out = synthesize(
            &[&t],
            &[&t],
            &attacks,
            &Synthesis {
                count: 400,
                benign_spots: spots,
                tamperings: 0.0,
            },
            &[],
            &mut rng,
        )
        .0;
        for r in out.iter().filter(|r| r.label == Some(Label::Benign)) {
            // A body example carries the pairs in a JSON/XML/multipart/text body instead, so
            // fewer stay; none may be new.
            if site_pairs(r).iter().any(|p| !original.contains(p)) {
                moved[k] += 1;
            }
        }
        let attacked_line = out
            .iter()
            .filter(|r| r.label == Some(Label::Malicious))
            .any(|r| site_pairs(r).iter().any(|(_, _, v)| v.contains("script")));
        assert!(
            attacked_line,
            "{spots:?}: attacks still ride the request line"
        );
    }
    assert!(moved[0] > 20, "every spot moves values: {moved:?}");
    assert_eq!(moved[1], 0, "headers and bodies only: {moved:?}");
}

/// The Referer header `place` set on `r`.
fn referer_of(r: &Record) -> String {
    let (_, v) = r
        .headers
        .iter()
        .find(|(n, _)| n == "Referer")
        .expect("a Referer spot sets the header");
    String::from_utf8_lossy(v).into_owned()
}

#[test]
fn referer_examples_of_both_classes_come_from_the_site_and_from_search_engines() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    for label in [Label::Benign, Label::Malicious] {
        let urls: Vec<String> = (0..300)
            .map(|_| {
                referer_of(&place(
                    &template(),
                    b"queso",
                    Spot::Referer,
                    false,
                    label,
                    &mut rng,
                ))
            })
            .collect();
        // Every URL carries the value as a query value, on the template's host or elsewhere.
        assert!(urls.iter().all(|u| u.ends_with("=queso")), "{urls:?}");
        let own_page =
            |u: &&String| u.starts_with("http://localhost:8080/tienda1/publico/anadir.jsp?");
        let own_dir = |u: &&String| u.starts_with("http://localhost:8080/tienda1/publico/?");
        let elsewhere = |u: &&String| !u.starts_with("http://localhost:8080/");
        // Each shape about a third of the time (300 draws: far from 0 and from all).
        for (what, n) in [
            ("the site's page", urls.iter().filter(own_page).count()),
            ("the site's directory", urls.iter().filter(own_dir).count()),
            ("a search engine", urls.iter().filter(elsewhere).count()),
        ] {
            assert!((60..=140).contains(&n), "{label:?}: {what} {n} of 300");
        }
        // The site's page keeps one of its own parameter names.
        assert!(urls
            .iter()
            .filter(own_page)
            .all(|u| ["?id=", "?nombre=", "?precio="]
                .iter()
                .any(|p| u.contains(p))));
    }
}

fn header<'a>(r: &'a Record, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| std::str::from_utf8(v).unwrap())
}

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// A browser's request: its User-Agent and its family's Accept headers replace the site
/// client's, the headers browsers no longer send are gone, the rest (Host, Content-Type) stays;
/// a value riding in the User-Agent is kept.
#[test]
fn dressing_as_a_browser_sets_its_headers_and_keeps_the_rest() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let mut t = template();
    t.headers
        .push(("Accept-Charset".into(), b"utf-8, utf-8;q=0.5".to_vec()));
    t.headers.push(("Pragma".into(), b"no-cache".to_vec()));
    let mut r = t.clone();
    dress_as_browser(&mut r, FIREFOX, false, &mut rng);
    assert_eq!(header(&r, "user-agent"), Some(FIREFOX));
    assert_eq!(
        header(&r, "accept"),
        Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
    );
    assert!(header(&r, "accept-language").unwrap().ends_with(";q=0.5"));
    assert_eq!(header(&r, "accept-charset"), None);
    assert_eq!(header(&r, "pragma"), None);
    assert_eq!(header(&r, "host"), Some("localhost:8080"));
    assert_eq!(
        header(&r, "content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(r.target, t.target);
    assert_eq!(r.body, t.body);
    let names: Vec<String> = r.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a header twice: {names:?}");

    let mut chrome = t.clone();
    dress_as_browser(&mut chrome, CHROME, false, &mut rng);
    assert!(header(&chrome, "accept").unwrap().contains("image/avif"));
    // The example's value rides in the User-Agent: it stays.
    let mut kept = t.clone();
    dress_as_browser(&mut kept, CHROME, true, &mut rng);
    assert_eq!(
        header(&kept, "user-agent"),
        Some("Mozilla/5.0 (compatible; Konqueror/3.5; Linux)")
    );
}

/// Half the examples of each class carry a browser's User-Agent (so the browser does not decide
/// the label), and an attack placed in the User-Agent is never overwritten by one.
#[test]
fn synthesize_dresses_both_classes_alike_and_keeps_attacks_in_the_user_agent() {
    let t = template();
    let attacks = vec![b"<script>alert(1)</script>".to_vec()];
    let uas = vec![FIREFOX.to_owned(), CHROME.to_owned()];
    let out = examples_of(&t, &attacks, 2000, 0.0, &uas, 11);
    for label in [Label::Benign, Label::Malicious] {
        let of: Vec<&Record> = out.iter().filter(|r| r.label == Some(label)).collect();
        let dressed = of
            .iter()
            .filter(|r| header(r, "accept-encoding").is_some_and(|v| v.contains("br")))
            .count() as f64
            / of.len() as f64;
        assert!((0.44..0.56).contains(&dressed), "{label:?}: {dressed}");
    }
    let in_ua = out
        .iter()
        .filter(|r| header(r, "user-agent").is_some_and(|v| v.contains("script")))
        .count();
    assert!(in_ua > 30, "{in_ua} attacks in the User-Agent");
    // Without a list nothing is dressed (and the draws are those of before).
    let plain = synthesize(
        &[&t],
        &[&t],
        &attacks,
        &Synthesis {
            count: 200,
            benign_spots: BenignSpots::Every,
            tamperings: 0.0,
        },
        &[],
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(11),
    )
    .0;
    assert!(plain.iter().all(|r| header(r, "accept-encoding").is_none()));
}

/// The User-Agent file: comments and blank lines skipped, CRLF accepted; a control character
/// or an empty list is an error naming the file (and line).
#[test]
fn user_agent_files_are_read_line_by_line_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.txt");
    std::fs::write(&ok, format!("# browsers\r\n{FIREFOX}\r\n\r\n{CHROME}\n")).unwrap();
    assert_eq!(load_user_agents(&ok).unwrap(), vec![FIREFOX, CHROME]);
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, format!("{FIREFOX}\nMozilla/5.0\tX\n")).unwrap();
    let e = load_user_agents(&bad).unwrap_err().to_string();
    assert!(e.contains("bad.txt:2: a control character"), "{e}");
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "# nothing\n\n").unwrap();
    let e = load_user_agents(&empty).unwrap_err().to_string();
    assert!(
        e.contains("empty.txt") && e.contains("no User-Agent"),
        "{e}"
    );
}

const SPLIT: &str = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";

/// `featurizer.known_browsers` adds to the known header values, so it needs them on.
#[test]
fn known_browsers_needs_known_header_values() {
    let without = trainer::config::RunConfig::parse(&common::legacy(&format!(
        "{SPLIT}featurizer: {{known_browsers: ua.txt, config: {{placements: {{}}}}}}\n"
    )))
    .unwrap_err()
    .to_string();
    assert!(
        without.contains("featurizer.known_browsers") && without.contains("known_header_permille"),
        "{without}"
    );
    trainer::config::RunConfig::parse(
        &format!("{SPLIT}featurizer: {{known_browsers: ua.txt, config: {{placements: {{known_header_permille: 10, known_digit_runs: true}}}}}}\n"),
    )
    .unwrap();
}

/// The headers `featurizer.known_browsers` makes known are those the dressing sends.
#[test]
fn browser_headers_cover_every_header_the_dressing_sends() {
    use trainer::public_examples::browser_headers;
    let all = browser_headers(CHROME);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
    for _ in 0..50 {
        let mut r = template();
        dress_as_browser(&mut r, CHROME, false, &mut rng);
        for (name, value) in r.headers.iter().filter(|(n, _)| {
            ["user-agent", "accept", "accept-encoding", "accept-language"]
                .contains(&n.to_lowercase().as_str())
        }) {
            assert!(
                all.iter().any(|(n, v)| n == name && v == value),
                "{name}: {}",
                String::from_utf8_lossy(value)
            );
        }
    }
}

/// `public_examples.validation_fpr`: the threshold is the higher of the one that holds FPR ≤
/// `target_fpr` on the site's validation requests and the one that holds FPR ≤ `validation_fpr`
/// on the placed examples (the run says both); out of (0, 1) it is refused.
#[test]
fn the_placed_examples_get_their_own_false_positive_budget() {
    let dir = tempfile::tempdir().unwrap();
    let config = |validation_fpr: &str| {
        sample_run_config(
            "{top_k: 300, value_shapes: true, placements: {}}",
            "threshold_rule: target_fpr, target_fpr: 0.01,",
            &format!("count: 200, validation: 200, {validation_fpr}"),
        )
    };
    let run =
        |validation_fpr: &str, out: &str| run_config(dir.path(), out, &config(validation_fpr));
    let out = run("validation_fpr: 1.5,", "refused");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("student.public_examples.validation_fpr"),
        "{err}"
    );
    let out = run("validation_fpr: 0.05,", "run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // `student: threshold S holds FPR <= 0.01 on the site's validation traffic, P FPR <= 0.05 on
    // the placed public examples: the higher is taken`, then `student: threshold T (target_fpr …`.
    let word_after = |line: &str, after: &str| -> f32 {
        let rest = &line[line.find(after).unwrap() + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let budgets = log
        .lines()
        .find(|l| l.contains("the higher is taken"))
        .unwrap_or_else(|| panic!("no budgets line: {log}"));
    let site = word_after(budgets, "student: threshold ");
    let placed = word_after(budgets, "on the site's validation traffic, ");
    let chosen_line = log
        .lines()
        .find(|l| l.contains("student: threshold ") && l.contains("(target_fpr"))
        .unwrap_or_else(|| panic!("no threshold line: {log}"));
    let chosen = word_after(chosen_line, "student: threshold ");
    assert_eq!(chosen, site.max(placed), "{budgets}\n{chosen_line}");
}

/// `content_only_copies`: the student also trains on a copy of every example that is not a
/// tampered request, featurized without the site's format checks — when the featurizer has
/// format checks (a rarity table); without one there is nothing to leave out and no copy.
#[test]
fn content_only_copies_add_the_untampered_examples_again() {
    let dir = tempfile::tempdir().unwrap();
    let public_examples = |name: &str, featurizer: &str, copies: bool| -> usize {
        let config = sample_run_config(
            featurizer,
            "",
            &format!("count: 200, tamperings: 0.5, content_only_copies: {copies},"),
        );
        let out = run_config(dir.path(), name, &config);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(name).join("report.json")).unwrap(),
        )
        .unwrap();
        report["public_examples"].as_u64().unwrap() as usize
    };
    let checked = "{top_k: 300, value_shapes: true, params: true, rarity_min_count: 3, \
                   odd_permille: [10, 50], placements: {}}";
    assert_eq!(public_examples("plain", checked, false), 200);
    // 100 benign, about 50 placed attacks and 50 tampered requests: about 150 copies.
    let copied = public_examples("copies", checked, true) - 200;
    assert!((110..=190).contains(&copied), "{copied} copies");
    let unchecked = "{top_k: 300, value_shapes: true, placements: {}}";
    assert_eq!(public_examples("no-checks", unchecked, true), 200);
}

/// `content_only_validation`: the run chooses a content-only threshold — at least the one that
/// holds `target_fpr` on the site's validation traffic, and at it no placement's public benign
/// values blocked above `validation_fpr` — records it in the report, the student file and
/// bundle.yaml, and `pate-trainer score --no-format-checks` judges at it (without the flag, at
/// the bundle's threshold). Without benign values in the files it is refused, naming the key.
#[test]
fn the_content_only_threshold_holds_every_placements_benign_budget() {
    let dir = tempfile::tempdir().unwrap();
    let config = |with_benign: bool| {
        let plain = sample_run_config(
            "{top_k: 300, value_shapes: true, params: true, rarity_min_count: 3, \
             odd_permille: [10, 50], placements: {}}",
            "threshold_rule: target_fpr, target_fpr: 0.01,",
            "count: 200, validation: 100, validation_fpr: 0.05, content_only_validation: 20,",
        );
        if with_benign {
            with_benign_file(&plain)
        } else {
            plain
        }
    };
    let out = run_config(dir.path(), "no-benign", &config(false));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("content_only_validation"),
        "{err}"
    );
    let out = run_config(dir.path(), "run", &config(true));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.path().join("run");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    let chosen = &report["student_options"]["content_only_threshold"];
    let threshold = chosen["threshold"].as_f64().unwrap() as f32;
    assert!(
        threshold >= chosen["site_threshold"].as_f64().unwrap() as f32,
        "{chosen}"
    );
    let placements = chosen["placements"].as_array().unwrap();
    assert_eq!(placements.len(), 13, "{chosen}");
    for p in placements {
        assert!(p["benign_blocked"].as_f64().unwrap() <= 0.05, "{p}");
    }
    let manifest = bundle::Bundle::load(&run.join("bundle")).unwrap().manifest;
    assert_eq!(manifest.content_only_threshold, Some(threshold));
    let judged_at = |no_format_checks: bool| -> f32 {
        score_target(
            &run.join("bundle"),
            "/tienda1/index.jsp?id=1",
            no_format_checks,
        )
        .1
    };
    assert_eq!(judged_at(true), threshold);
    assert_eq!(judged_at(false), manifest.threshold);
    // Re-exported from the run directory, the student file carries it again.
    assert_eq!(
        reexport(&run, &dir.path().join("again"))
            .manifest
            .content_only_threshold,
        Some(threshold)
    );
}

/// `part_model`: the run trains a model of single parts on public values, saves it beside the
/// student and exports it as `part_model.onnx`; `pate-trainer score --no-format-checks` scores
/// the highest of the windows (student) and every part alone (part model), judged at the
/// content-only threshold chosen on both; with the checks, the windows alone, as before. With
/// `placement_offsets` each part's score is shifted by its placement's offset (bundle.yaml
/// `part_model_offsets`), chosen so that no placement's benign values are blocked above the
/// budget. A re-export from the run directory carries both again.
#[test]
fn the_part_model_scores_every_part_alone_beside_the_windows() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample_run_config(
        "{top_k: 300, value_shapes: true, params: true, rarity_min_count: 3, \
         odd_permille: [10, 50], placements: {request_line_whole: true}}",
        "threshold_rule: target_fpr, target_fpr: 0.01,",
        "count: 200, validation: 100, validation_fpr: 0.05, content_only_validation: 20, \
         part_model: {per_spot: 10, copies_cap: 5, training: {hidden: [], optimizer: fista, \
         l1: 0.0001, learning_rate: 2.0, max_epochs: 50, patience: 50}, \
         placement_offsets: true},",
    );
    let out = run_config(dir.path(), "run", &with_benign_file(&plain));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.path().join("run");
    assert!(run.join("part_model.safetensors").exists());
    let loaded = bundle::Bundle::load(&run.join("bundle")).unwrap();
    let summary = loaded.manifest.part_model.clone().expect("a part model");
    assert_eq!(summary.widths, vec![loaded.featurizer.dim(), 1]);
    let threshold = loaded.manifest.content_only_threshold.expect("chosen");
    // One form of many pairs with an attack in one of them.
    let target = "/tienda1/publico/registro.jsp?modo=registro&login=bob&password=x1y2z3&nombre=Ana\
                  &apellidos=Ruiz&email=ana%40example.com&dni=12345678Z&direccion=Calle+Mayor+1\
                  &ciudad=Madrid&cp=28001&provincia=Madrid&ntc=1234567890123456\
                  &B1=Registrar&comentario=1%27+union+all+select+password+from+users--";
    let scored =
        |no_format_checks: bool| score_target(&run.join("bundle"), target, no_format_checks);
    bundle::init_onnxruntime(None).unwrap();
    let req = featurizer::RequestParts::get(target);
    let content = loaded.featurizer.clone().without_format_checks();
    let mut windows = bundle::Scorer::new(&loaded).unwrap();
    let mut parts = bundle::Scorer::from_onnx(
        loaded.part_model_onnx.as_deref().unwrap(),
        loaded.manifest.input_dim,
    )
    .unwrap();
    let window_score = windows.score_request(&content, &req).unwrap().score;
    let offsets = &loaded.manifest.part_model_offsets;
    assert!(
        offsets.iter().any(|(_, d)| d > 0.0),
        "some placement's budget was left for the parts: {offsets:?}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    for p in report["student_options"]["content_only_threshold"]["placements"]
        .as_array()
        .unwrap()
    {
        assert!(p["benign_blocked"].as_f64().unwrap() <= 0.05, "{p}");
    }
    let alone = content.part_vectors(&req);
    // The method, the path and the pairs whose values have a feature of the vocabulary (read by
    // their values alone: `part_values_only`), the attack pair among them.
    let quote = content.vocabulary().iter().position(|v| v == "'").unwrap() as u32;
    assert!(alone.len() >= 3, "{} parts", alone.len());
    assert!(alone
        .iter()
        .any(|(p, v)| *p == featurizer::Placement::Query && v.indices.contains(&quote)));
    let part_score = alone
        .iter()
        .map(|(p, v)| offsets.shift(*p, parts.score_sparse(&v.indices, &v.values).unwrap()))
        .fold(f32::NEG_INFINITY, f32::max);
    let (score, judged_at) = scored(true);
    assert_eq!(judged_at, threshold);
    assert!(
        (score - window_score.max(part_score)).abs() < 1e-6,
        "{score} vs windows {window_score}, parts {part_score}"
    );
    let with_checks = windows
        .score_request(&loaded.featurizer, &req)
        .unwrap()
        .score;
    assert!((scored(false).0 - with_checks).abs() < 1e-6);
    let again = reexport(&run, &dir.path().join("again"));
    assert_eq!(again.part_model_onnx, loaded.part_model_onnx);
    assert_eq!(&again.manifest.part_model_offsets, offsets);
}

/// `student.forwarding_headers`: the same share of each class gets a load balancer's headers —
/// the header's presence does not tell the label (the student read `X-Forwarded-For`'s name as
/// an attack sign when only placed examples, half attacks, carried one) — and the augmented
/// request keeps its label and every other header, with 1–3 public addresses in
/// `X-Forwarded-For` and `X-Forwarded-Proto: https`; a value already placed there stays.
#[test]
fn forwarding_headers_go_to_both_classes_alike_and_keep_the_labels() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    // 900 benign rows, 300 malicious, interleaved.
    let malicious: Vec<bool> = (0..1200).map(|i| i % 4 == 0).collect();
    for share in [0.0, 0.25, 0.5, 1.0] {
        let chosen = share_of_each_class(&malicious, share, &mut rng);
        let of = |class: bool| {
            (0..malicious.len())
                .filter(|&i| malicious[i] == class && chosen[i])
                .count()
        };
        assert_eq!(of(false), (900.0 * share) as usize, "share {share}");
        assert_eq!(of(true), (300.0 * share) as usize, "share {share}");
    }
    // Different rows on another draw, not always the first ones.
    let a = share_of_each_class(&malicious, 0.25, &mut rng);
    let b = share_of_each_class(&malicious, 0.25, &mut rng);
    assert_ne!(a, b);

    for label in [Label::Benign, Label::Malicious] {
        for _ in 0..200 {
            let mut r = template();
            r.label = Some(label);
            add_forwarding_headers(&mut r, &mut rng);
            assert_eq!(r.label, Some(label));
            let t = template();
            assert_eq!(
                (&r.method, &r.target, &r.body),
                (&t.method, &t.target, &t.body)
            );
            assert_eq!(&r.headers[..t.headers.len()], &t.headers[..]);
            assert_eq!(header(&r, "X-Forwarded-Proto"), Some("https"));
            let xff = header(&r, "X-Forwarded-For").expect("X-Forwarded-For");
            let hops: Vec<&str> = xff.split(", ").collect();
            assert!((1..=3).contains(&hops.len()), "{xff}");
            for hop in hops {
                let ip: std::net::Ipv4Addr = hop.parse().expect(hop);
                assert!(
                    !(ip.is_private()
                        || ip.is_loopback()
                        || ip.is_link_local()
                        || ip.is_multicast())
                        && ip.octets()[0] != 0,
                    "{ip}"
                );
            }
        }
    }
    let mut placed = place(
        &template(),
        b"<script>alert(1)</script>",
        Spot::Forwarded,
        false,
        Label::Malicious,
        &mut rng,
    );
    let before = header(&placed, "X-Forwarded-For").unwrap().to_string();
    add_forwarding_headers(&mut placed, &mut rng);
    assert_eq!(header(&placed, "X-Forwarded-For"), Some(before.as_str()));
    assert_eq!(header(&placed, "X-Forwarded-Proto"), Some("https"));
}

/// `student.site_referers`: a Referer names one of the given pages on the request's own Host —
/// the page alone, or one of its query values under its own name, a search name of its directory
/// or a search engine — and is read by the featurizer as a Referer; the request keeps its label
/// and every other part; nothing is added without a Host, over a Referer already there, or
/// without pages.
#[test]
fn site_referers_name_the_sites_pages_on_its_own_host() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
    let pages: [&[u8]; 2] = [
        b"/tienda1/index.jsp",
        b"/tienda1/publico/pagar.jsp?modo=insertar&precio=85",
    ];
    let mut shapes = std::collections::BTreeSet::new();
    for label in [Label::Benign, Label::Malicious] {
        for _ in 0..300 {
            let mut r = template();
            r.label = Some(label);
            assert!(add_site_referer(&mut r, &pages, &mut rng));
            let t = template();
            assert_eq!(
                (&r.method, &r.target, &r.body, r.label),
                (&t.method, &t.target, &t.body, Some(label))
            );
            assert_eq!(&r.headers[..t.headers.len()], &t.headers[..]);
            let referer = header(&r, "Referer").expect("Referer").to_string();
            let shape = if referer == "http://localhost:8080/tienda1/index.jsp" {
                "page"
            } else if referer.starts_with("http://localhost:8080/tienda1/publico/pagar.jsp?") {
                "own name"
            } else if referer.starts_with("http://localhost:8080/tienda1/publico/?") {
                "directory"
            } else {
                assert!(referer.starts_with("https://"), "{referer}");
                "search engine"
            };
            shapes.insert(shape);
            if shape != "page" {
                assert!(
                    referer.ends_with("=insertar") || referer.ends_with("=85"),
                    "{referer}"
                );
            }
            let split = split_request(&r.parts(), &PlacementConfig::default(), 3, true);
            assert!(
                split
                    .parts
                    .iter()
                    .any(|p| p.placement == Placement::HdrReferer),
                "{referer}"
            );
        }
    }
    assert_eq!(shapes.len(), 4, "{shapes:?}");
    let mut bare = template();
    bare.headers.retain(|(n, _)| n != "Host");
    assert!(!add_site_referer(&mut bare, &pages, &mut rng));
    assert!(header(&bare, "Referer").is_none());
    let mut placed = template();
    placed
        .headers
        .push(("Referer".into(), b"http://elsewhere/".to_vec()));
    assert!(!add_site_referer(&mut placed, &pages, &mut rng));
    assert_eq!(header(&placed, "Referer"), Some("http://elsewhere/"));
    let mut r = template();
    assert!(!add_site_referer(&mut r, &[], &mut rng));
}

/// `student.forwarding_headers` and `student.site_referers` are shares: shown by
/// `--print-config` at their default, and refused outside [0, 1].
#[test]
fn forwarding_headers_and_site_referers_are_shares() {
    let c = trainer::config::RunConfig::parse(SPLIT).unwrap();
    assert_eq!(c.student.forwarding_headers, 0.25);
    assert_eq!(c.student.site_referers, 0.25);
    let shown = serde_yaml::to_string(&c).unwrap();
    for key in ["forwarding_headers", "site_referers"] {
        assert!(shown.contains(&format!("{key}: 0.25")), "{shown}");
        for bad in ["-0.1", "1.5"] {
            let e =
                trainer::config::RunConfig::parse(&format!("{SPLIT}student: {{{key}: {bad}}}\n"))
                    .unwrap_err()
                    .to_string();
            assert!(e.contains(&format!("student.{key}")), "{e}");
        }
    }
}

/// `validation_fpr` is a budget for the placed validation examples under `target_fpr`: without
/// them, or under another rule, it would do nothing, so it is refused.
#[test]
fn validation_fpr_needs_placed_examples_and_the_target_fpr_rule() {
    let files = "files: [{path: a.csv, format: httpparams}]";
    for student in [
        format!("{{threshold_rule: youden, public_examples: {{count: 10, validation: 10, validation_fpr: 0.05, {files}}}}}"),
        format!("{{threshold_rule: target_fpr, public_examples: {{count: 10, validation_fpr: 0.05, {files}}}}}"),
    ] {
        let e = trainer::config::RunConfig::parse(&common::legacy(&format!(
            "{SPLIT}student: {student}\n"
        )))
            .unwrap_err()
            .to_string();
        assert!(e.contains("validation_fpr") && e.contains("target_fpr"), "{e}");
    }
    trainer::config::RunConfig::parse(&format!(
        "{SPLIT}student: {{threshold_rule: target_fpr, public_examples: {{count: 10, validation: 10, validation_fpr: 0.05, {files}}}}}\n"
    ))
    .unwrap();
}

/// `tamperings`: that share of the malicious examples are the site's benign requests tampered —
/// another method (never GET or POST) with the request unchanged, or one parameter name edited
/// with every value unchanged — and without tamperings there are none.
#[test]
fn tampered_requests_take_a_share_of_the_malicious_examples() {
    let t = template();
    let attacks = vec![b"<script>alert(1)</script>".to_vec()];
    // (verb tamperings, renamed parameters, malicious examples)
    let count = |share: f64| {
        let out = examples_of(&t, &attacks, 2000, share, &[], 3);
        let (mut verbs, mut renamed, mut malicious) = (0, 0, 0);
        for r in out.iter().filter(|r| r.label == Some(Label::Malicious)) {
            malicious += 1;
            if TAMPERED_METHODS.contains(&r.method.as_str()) {
                assert_eq!((&r.target, &r.body), (&t.target, &t.body));
                verbs += 1;
                continue;
            }
            let (a, b) = (pairs_of(r), pairs_of(&t));
            let names_differ = a.iter().zip(&b).filter(|(x, y)| x.0 != y.0).count();
            let values_same = a.iter().zip(&b).all(|(x, y)| x.1 == y.1);
            if a.len() == b.len() && names_differ == 1 && values_same {
                assert_eq!(r.method, t.method);
                renamed += 1;
            }
        }
        (verbs, renamed, malicious)
    };
    let (verbs, renamed, malicious) = count(0.25);
    let share = f64::from(verbs + renamed) / f64::from(malicious);
    assert!((0.18..0.32).contains(&share), "{share}");
    assert!(verbs > 50 && renamed > 50, "{verbs} {renamed}");
    assert_eq!(count(0.0).0 + count(0.0).1, 0);
}

/// `synthesize` says which examples are tampered requests (what
/// `student.public_examples.content_only_copies` leaves uncopied): exactly the malicious ones
/// that are the template with another method or one parameter renamed.
#[test]
fn tagged_examples_name_the_tampered_ones() {
    let t = template();
    let attacks = vec![b"<script>alert(1)</script>".to_vec()];
    let (out, tampered) = synthesize(
        &[&t],
        &[&t],
        &attacks,
        &Synthesis {
            count: 400,
            benign_spots: BenignSpots::Every,
            tamperings: 0.5,
        },
        &[],
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(5),
    );
    assert_eq!(out.len(), tampered.len());
    let tamper_like = |r: &Record| {
        if TAMPERED_METHODS.contains(&r.method.as_str()) {
            return (&r.target, &r.body) == (&t.target, &t.body);
        }
        let (a, b) = (pairs_of(r), pairs_of(&t));
        a.len() == b.len()
            && a.iter().zip(&b).filter(|(x, y)| x.0 != y.0).count() == 1
            && a.iter().zip(&b).all(|(x, y)| x.1 == y.1)
    };
    let mut n = 0;
    for (r, &is_tampered) in out.iter().zip(&tampered) {
        if r.label == Some(Label::Malicious) {
            assert_eq!(is_tampered, tamper_like(r), "{r:?}");
        } else {
            assert!(!is_tampered);
        }
        n += usize::from(is_tampered);
    }
    assert!((50..150).contains(&n), "{n} tampered of 200 malicious");
}

/// The (name, value) pairs of a request's query and body, in order, as sent.
fn pairs_of(r: &Record) -> Vec<(String, String)> {
    let target = String::from_utf8_lossy(&r.target).into_owned();
    let query = target.split_once('?').map(|(_, q)| q.to_string());
    let body = String::from_utf8_lossy(r.body.as_deref().unwrap_or_default()).into_owned();
    query
        .unwrap_or_default()
        .split('&')
        .chain(body.split('&'))
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            (n.to_string(), v.to_string())
        })
        .collect()
}

/// A seeded run configuration on the in-repo CSIC sample (10 teachers, 200 queries, LNMax) with
/// `featurizer` as the featurizer's config, `student` more student keys (each ending in `,`) and
/// `public_examples` the public examples' keys but `files` (the sample's attacks).
fn sample_run_config(featurizer: &str, student: &str, public_examples: &str) -> String {
    let sample = common::repo().join("data/sample");
    let s = |f: &str| sample.join(f).display().to_string();
    common::legacy(&format!(
        "seed: 3\ndevice: cpu\nthreads: 1\nsplit:\n\
         \x20 simulate_from:\n\
         \x20   - {{path: {n1}, format: csic, label: benign}}\n\
         \x20   - {{path: {n2}, format: csic, label: benign}}\n\
         \x20   - {{path: {a}, format: csic, label: malicious}}\n\
         \x20 private: 0.55\n\x20 public: 0.2\n\x20 validation: 0.1\n\x20 test: 0.15\n\
         featurizer: {{config: {featurizer}}}\n\
         teachers: {{count: 10, training: {{hidden: [16], max_epochs: 20, patience: 3}}}}\n\
         student: {{queries: 200, {student} training: {{hidden: [16], max_epochs: 20, patience: 3}}, \
         public_examples: {{{public_examples} files: [{{path: {a}, format: csic, label: malicious}}]}}}}\n\
         privacy: {{mechanism: lnmax, gamma: 1.0}}\n",
        n1 = s("csic_normalTrafficTraining_sample.txt"),
        n2 = s("csic_normalTrafficTest_A_sample.txt"),
        a = s("csic_anomalousTrafficTest_A_sample.txt"),
    ))
}

/// `config` (of [`sample_run_config`]) with the sample's normal requests as a public file of
/// benign values beside its attacks.
fn with_benign_file(config: &str) -> String {
    let benign = common::repo().join("data/sample/csic_normalTrafficTest_A_sample.txt");
    let mut value: serde_yaml::Value = serde_yaml::from_str(config).unwrap();
    let files = value["student"]["public_examples"]["files"]
        .as_sequence_mut()
        .expect("public_examples.files");
    files.push(
        serde_yaml::from_str(&format!(
            "{{path: {}, format: csic, label: benign}}",
            benign.display()
        ))
        .unwrap(),
    );
    serde_yaml::to_string(&value).unwrap()
}

/// `pate-trainer score --bundle BUNDLE --target TARGET [--no-format-checks]`: the score and the
/// threshold it was judged at.
fn score_target(bundle: &std::path::Path, target: &str, no_format_checks: bool) -> (f32, f32) {
    let mut score = common::trainer();
    score
        .args(["score", "--bundle"])
        .arg(bundle)
        .args(["--target", target]);
    if no_format_checks {
        score.arg("--no-format-checks");
    }
    let out = score.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["score"].as_f64().unwrap() as f32,
        v["threshold"].as_f64().unwrap() as f32,
    )
}

/// `pate-trainer export --run RUN --out OUT --not-private`, and the bundle it wrote.
fn reexport(run: &std::path::Path, out: &std::path::Path) -> bundle::Bundle {
    let result = common::trainer()
        .args(["export", "--run"])
        .arg(run)
        .arg("--out")
        .arg(out)
        .arg("--not-private")
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    bundle::Bundle::load(out).unwrap()
}

/// `pate-trainer run --config DIR/NAME.yaml --out DIR/NAME` with `config` written there.
fn run_config(dir: &std::path::Path, name: &str, config: &str) -> std::process::Output {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, config).unwrap();
    common::trainer()
        .args(["run", "--config"])
        .arg(&path)
        .arg("--out")
        .arg(dir.join(name))
        .output()
        .unwrap()
}

/// `synthesize` with `t` as the only template of both classes, every spot, a seeded stream.
fn examples_of(
    t: &Record,
    attacks: &[Vec<u8>],
    count: usize,
    tamperings: f64,
    user_agents: &[String],
    seed: u64,
) -> Vec<Record> {
    synthesize(
        &[t],
        &[t],
        attacks,
        &Synthesis {
            count,
            benign_spots: BenignSpots::Every,
            tamperings,
        },
        user_agents,
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(seed),
    )
    .0
}

/// A Fwaf attack line is placed as its query's most symbol-laden value, without the scanner's
/// path and parameter names; a line without a query as its path when the path holds an
/// attack's character; a bare file path or an empty query not at all.
#[test]
fn a_fwaf_line_is_placed_as_its_attack_without_the_scanners_path() {
    let value = |line: &str| {
        let record = Record {
            method: "GET".into(),
            target: line.as_bytes().to_vec(),
            body: None,
            headers: Vec::new(),
            label: Some(Label::Malicious),
            line: 1,
            client: None,
        };
        trainer::public_examples::fwaf_attack_value(&record).map(|v| String::from_utf8(v).unwrap())
    };
    assert_eq!(
        value("/top.php?stuff='uname >q36497765 #").as_deref(),
        Some("'uname >q36497765 #")
    );
    assert_eq!(
        value("/cgi/ion-p?x=1&page=..%2F..%2Fetc%2Fpasswd&y=abc").as_deref(),
        Some("../../etc/passwd")
    );
    assert_eq!(
        value("/a.htm?<img src=\"javascript:alert(1);\">").as_deref(),
        Some("<img src=\"javascript:alert(1);\">")
    );
    assert_eq!(
        value("/<script>alert(1)</script>.do").as_deref(),
        Some("/<script>alert(1)</script>.do")
    );
    assert_eq!(value("/c%27hoario/").as_deref(), Some("/c'hoario/"));
    assert_eq!(value("/htbin/windmail.exe"), None);
    assert_eq!(value("/scripts/cfooter.php3"), None);
    assert_eq!(value("/contact.php?"), None);
    assert_eq!(value("/contact.php?q=&r="), None);
}
