//! `exclude_parts: {param: NAME}` reaches the fields of JSON, multipart and XML bodies (issue
//! 44): with a bundle whose featurizer reads the whole request, an SQL injection in an excluded
//! field is not scored (the request passes a threshold that blocks it without the exclusion), the
//! same in any other field still is, and a request without exclusions scores as before.

use featurizer::{Headers, RequestParts};
use proxy::config::ExcludedPart;
use proxy::exclude::without_excluded;
use proxy::model::ServingModel;
use test_support::{write_part_model_fixture_bundle, write_placement_fixture_bundle};

const SQLI: &str = "' UNION SELECT password FROM usuarios--";

fn model(name: &str) -> ServingModel {
    bundle::init_onnxruntime(None).unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("excluded-fields-{name}-{}", std::process::id()));
    write_placement_fixture_bundle(&dir, 0.5).expect("placement fixture bundle");
    ServingModel::load(&dir, None, 1).expect("the bundle loads")
}

/// A JSON, a multipart and an XML body (with their Content-Type) with the fields `comment`
/// (nested in the JSON) and `name`.
fn bodies(comment: &str, name: &str) -> [(&'static str, String); 3] {
    [
        (
            "application/json",
            format!(r#"{{"user":{{"comment":"{comment}","name":"{name}"}},"qty":2}}"#),
        ),
        (
            "multipart/form-data; boundary=B",
            format!(
                "--B\r\nContent-Disposition: form-data; name=\"comment\"\r\n\r\n{comment}\r\n\
                 --B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n--B--\r\n"
            ),
        ),
        (
            "application/xml",
            format!("<order><comment>{comment}</comment><name>{name}</name></order>"),
        ),
    ]
}

/// The score of a POST of `body` as `content_type`, with `excluded` param names left out.
fn score(model: &ServingModel, content_type: &str, body: &str, excluded: &[&str]) -> f32 {
    score_checked(model, true, content_type, body, excluded)
}

/// [`score`] with (`format_checks`) or without the site's format checks: content alone scores
/// the windows and, with a part model, every part alone.
fn score_checked(
    model: &ServingModel,
    format_checks: bool,
    content_type: &str,
    body: &str,
    excluded: &[&str],
) -> f32 {
    let headers: [(&str, &[u8]); 2] = [
        ("Host", b"shop.example"),
        ("Content-Type", content_type.as_bytes()),
    ];
    let request = RequestParts {
        method: "POST",
        target: b"/tienda1/publico/anadir.jsp",
        body: Some(body.as_bytes()),
        headers: Headers::Pairs(&headers),
        excluded_fields: Default::default(),
    };
    let excluded: Vec<ExcludedPart> = excluded
        .iter()
        .map(|n| ExcludedPart::Param(n.to_string()))
        .collect();
    let refs: Vec<&ExcludedPart> = excluded.iter().collect();
    let kept = without_excluded(&request, &refs);
    let scoring = kept.as_ref().map_or(request, |k| k.parts());
    model
        .score_checked(&scoring, format_checks)
        .expect("scored")
        .score
}

#[test]
fn an_excluded_body_field_is_not_scored_and_the_others_still_are() {
    let model = model("fields");
    let threshold = model.threshold;
    for (content_type, body) in bodies(SQLI, "bob") {
        let blocked = score(&model, content_type, &body, &[]);
        assert!(blocked >= threshold, "{content_type}: {blocked} blocks");
        let passed = score(&model, content_type, &body, &["comment"]);
        assert!(
            passed < threshold,
            "{content_type}: {passed} passes excluded"
        );
        // Another field's exclusion, or the name in another case, leaves it scored.
        let other = score(&model, content_type, &body, &["name", "Comment"]);
        assert!(other >= threshold, "{content_type}: {other} still blocks");
    }
    // The same attack in the field not excluded.
    for (content_type, body) in bodies("fine", SQLI) {
        let in_name = score(&model, content_type, &body, &["comment"]);
        assert!(in_name >= threshold, "{content_type}: {in_name} in `name`");
    }
}

#[test]
fn without_exclusions_the_score_is_the_same_as_with_an_absent_name() {
    let model = model("absent");
    for (content_type, body) in bodies(SQLI, "bob") {
        let plain = score(&model, content_type, &body, &[]);
        let absent = score(&model, content_type, &body, &["nothing"]);
        assert_eq!(plain.to_bits(), absent.to_bits(), "{content_type}");
    }
}

/// Content alone with a part model scores every part of the request alone too: an excluded
/// field is in none of them.
#[test]
fn an_excluded_body_field_is_in_no_part_the_part_model_scores() {
    bundle::init_onnxruntime(None).unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("excluded-fields-parts-{}", std::process::id()));
    write_part_model_fixture_bundle(&dir, 0.5, true).expect("part model fixture bundle");
    let model = ServingModel::load(&dir, None, 1).expect("the bundle loads");
    let threshold = model.threshold_for(false);
    for (content_type, body) in bodies(SQLI, "bob") {
        let blocked = score_checked(&model, false, content_type, &body, &[]);
        assert!(blocked >= threshold, "{content_type}: {blocked} blocks");
        let passed = score_checked(&model, false, content_type, &body, &["comment"]);
        assert!(
            passed < threshold,
            "{content_type}: {passed} passes excluded"
        );
    }
}
