//! Issue 8, privacy hygiene of the trainer's outputs (docs/bad-input.md, "Privacy hygiene"):
//! noise comes from the OS-seeded CSPRNG unless `--seed` says otherwise, the choice is recorded in
//! every sidecar, and no private record or vote vector is printed to the logs (stdout/stderr).
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run pate-trainer");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn logs(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn sidecar(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn noise_is_os_seeded_unless_asked_and_the_choice_is_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let votes = tmp.path().join("votes.csv");
    // Distinctive vote vectors, to look for in the logs.
    std::fs::write(&votes, "181,69\n3,247\n126,124\n").unwrap();
    for (seed, want) in [
        (None, serde_json::json!({"rng": "os"})),
        (Some("5"), serde_json::json!({"rng": "seeded", "seed": 5})),
    ] {
        let labels = tmp.path().join(format!("labels-{}", seed.unwrap_or("os")));
        let mut args = vec![
            "aggregate",
            "--votes",
            s(&votes),
            "--mechanism",
            "gnmax",
            "--sigma",
            "40",
            "--out",
            s(&labels),
        ];
        if let Some(seed) = seed {
            args.extend(["--seed", seed]);
        }
        let out = run(&args);
        let mut json_path = labels.clone().into_os_string();
        json_path.push(".json");
        assert_eq!(sidecar(Path::new(&json_path))["rng"], want);
        let text = logs(&out);
        for vector in ["181,69", "3,247", "126,124"] {
            assert!(
                !text.contains(vector),
                "vote vector {vector} in the aggregate output: {text}"
            );
        }
    }

    // privatize: the same for the local-DP noise on the query features.
    let matrix = tmp.path().join("queries.f32");
    let mut bytes = b"PATEF32\0".to_vec();
    bytes.extend_from_slice(&2u64.to_le_bytes());
    bytes.extend_from_slice(&2u64.to_le_bytes());
    for v in [0.25f32, 0.75, 1.0, 0.0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&matrix, bytes).unwrap();
    for (seed, want) in [
        (None, serde_json::json!({"rng": "os"})),
        (Some("9"), serde_json::json!({"rng": "seeded", "seed": 9})),
    ] {
        let noisy = tmp
            .path()
            .join(format!("noisy-{}.f32", seed.unwrap_or("os")));
        let mut args = vec![
            "privatize",
            "--rho",
            "2",
            "--in",
            s(&matrix),
            "--out",
            s(&noisy),
        ];
        if let Some(seed) = seed {
            args.extend(["--seed", seed]);
        }
        run(&args);
        let mut json_path = noisy.clone().into_os_string();
        json_path.push(".json");
        assert_eq!(sidecar(Path::new(&json_path))["rng"], want);
    }
}

#[test]
fn dataset_commands_never_print_request_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("private.csv");
    std::fs::write(
        &data,
        "/login?user=alice&pwd=Hunter2Secret,benign\n/search?q=%27+or+1%3D1--&card=4111111111111111,malicious\n",
    )
    .unwrap();
    let fz = tmp.path().join("featurizer.json");
    for out in [
        run(&["data", "stats", "--format", "csv", s(&data)]),
        run(&[
            "featurize",
            "fit",
            "--format",
            "csv",
            s(&data),
            "--out",
            s(&fz),
        ]),
    ] {
        let text = logs(&out);
        for secret in ["Hunter2Secret", "4111111111111111", "alice"] {
            assert!(!text.contains(secret), "{secret} printed: {text}");
        }
    }
}
