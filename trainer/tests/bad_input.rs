//! Issue 8, the trainer's half of the bad-input catalogue (docs/bad-input.md): every bad input is
//! refused by the `pate-trainer` binary with an error that says what and where, exit code 1, no
//! panic, and no partial artifact (the output file or directory is absent, or an older file is
//! left untouched, and no temporary file stays behind).
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn trainer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
}

fn run(args: &[&str]) -> Output {
    trainer().args(args).output().expect("run pate-trainer")
}

/// Asserts a clean failure (exit code 1, no panic) and returns stderr.
fn refused(out: Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected exit code 1, stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("error"), "{stderr}");
    stderr
}

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/sample")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Names in `dir` (empty when it does not exist): what a failed command left behind.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A `PATEF32` matrix file (privacy::matrix: magic, rows u64 LE, cols u64 LE, f32 LE row-major).
fn matrix(path: &Path, rows: &[&[f32]]) {
    let mut bytes = b"PATEF32\0".to_vec();
    bytes.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&(rows[0].len() as u64).to_le_bytes());
    for row in rows {
        for v in *row {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// `pate-trainer run` on `yaml` into `dir/run`: refused, and no run directory appears.
fn run_refused(dir: &Path, name: &str, yaml: &str) -> String {
    let config = dir.join(format!("{name}.yaml"));
    std::fs::write(&config, yaml).unwrap();
    let out = dir.join(format!("run-{name}"));
    let stderr = refused(run(&["run", "--config", s(&config), "--out", s(&out)]));
    assert!(
        !out.exists(),
        "{name}: a run directory was created: {:?}",
        entries(&out)
    );
    stderr
}

#[test]
fn empty_and_single_class_datasets_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();

    let fz = tmp.path().join("featurizer.json");
    let err = refused(run(&[
        "featurize",
        "fit",
        "--format",
        "csic",
        s(&empty),
        "--out",
        s(&fz),
    ]));
    assert!(
        err.contains("no records") && err.contains("empty.txt"),
        "{err}"
    );
    assert!(!fz.exists());

    let err = run_refused(
        tmp.path(),
        "empty",
        &format!(
            "split: {{simulate_from: [{{path: {}, format: csic, label: benign}}]}}\n",
            s(&empty)
        ),
    );
    assert!(
        err.contains("split.simulate_from: no requests in") && err.contains("empty.txt"),
        "{err}"
    );

    let benign = sample("csic_normalTrafficTraining_sample.txt");
    let err = run_refused(
        tmp.path(),
        "benign-only",
        &format!("split: {{simulate_from: [{{path: {benign}, format: csic, label: benign}}]}}\nteachers: {{count: 3}}\nstudent: {{queries: 10}}\n"),
    );
    assert!(
        err.contains("both benign and malicious")
            && err.contains("only benign")
            && err.contains("csic_normalTrafficTraining_sample.txt"),
        "{err}"
    );
    let attacks = sample("csic_anomalousTrafficTest_A_sample.txt");
    let err = run_refused(
        tmp.path(),
        "malicious-only",
        &format!("split: {{simulate_from: [{{path: {attacks}, format: csic, label: malicious}}]}}\nteachers: {{count: 3}}\nstudent: {{queries: 10}}\n"),
    );
    assert!(err.contains("only malicious"), "{err}");
}

#[test]
fn a_malformed_line_in_each_input_format_is_named_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[u8], &str); 7] = [
        ("csic", "bad.csic", b"GET http://localhost:8080/a HTTP/1.1\nHost: a\nnot a header\n\n", "bad.csic:3: expected a header line"),
        ("csic", "no_version.csic", b"GET http://localhost:8080/a HTTP/1.1\nHost: a\n\nPOST /b\n\n", "no_version.csic:4: expected a request line `METHOD URL HTTP/1.x`"),
        ("csic", "not_http.csic", b"BREW /pot HTCPCP/1.0\n\n", "not_http.csic:1: expected a request line starting with GET, POST or PUT"),
        ("httpparams", "bad_params.csv", b"payload,length,attack_type,label\n<script>,8,xss,anom\nonly,two\n", "bad_params.csv:3: expected 4 fields"),
        ("httpparams", "no_header.csv", b"<script>,8,xss,anom\n", "no_header.csv:1: expected the header payload,length,attack_type,label"),
        ("csv", "bad.csv", b"/a,benign\n/b,evil\n", "bad.csv:2: expected a label"),
        ("apache", "access.log", b"127.0.0.1 - - [22/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 5\nnot a log line\n", "access.log:2: expected an access-log line"),
    ];
    for (format, name, bytes, want) in cases {
        let path = tmp.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let err = refused(run(&["data", "stats", "--format", format, s(&path)]));
        assert!(err.contains(want), "{format}: {err}");
        // The same loader refuses it when fitting: no featurizer is written.
        let fz = tmp.path().join(format!("{name}.featurizer.json"));
        refused(run(&[
            "featurize",
            "fit",
            "--format",
            format,
            s(&path),
            "--out",
            s(&fz),
        ]));
        assert!(
            !fz.exists(),
            "{format}: featurizer written from a malformed file"
        );
    }
    // Fwaf lists have no malformed line (every non-blank line is a path + query, bytes as they
    // are); binary and non-UTF-8 lines are kept, not dropped.
    let fwaf = tmp.path().join("badqueries.txt");
    std::fs::write(&fwaf, b"/a?x=1\n\n/\xff\xfe\x00?q=%00\n").unwrap();
    let out = run(&["data", "stats", "--format", "fwaf", s(&fwaf)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["by_label"]["malicious"], 2, "{stats}");
}

#[test]
fn vote_files_with_uneven_columns_or_negative_counts_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text, want) in [
        (
            "uneven.csv",
            "# two classes\n180,70\n3\n",
            "uneven.csv:3: 1 class counts; expected 2 like line 2",
        ),
        (
            "negative.csv",
            "180,70\n-3,253\n",
            "negative.csv:2: field 1 is \"-3\"; expected a non-negative integer",
        ),
        ("fraction.csv", "180,70\n1.5,2\n", "fraction.csv:2"),
        ("overflow.csv", "18446744073709551615,1\n", "overflow.csv:1"),
    ] {
        let votes = tmp.path().join(name);
        std::fs::write(&votes, text).unwrap();
        let labels = tmp.path().join(format!("{name}.labels"));
        let err = refused(run(&[
            "aggregate",
            "--votes",
            s(&votes),
            "--mechanism",
            "gnmax",
            "--sigma",
            "10",
            "--out",
            s(&labels),
        ]));
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            !labels.exists(),
            "{name}: labels written from a bad vote file"
        );
        let err = refused(run(&[
            "account",
            "--votes",
            s(&votes),
            "--mechanism",
            "gnmax",
            "--sigma",
            "10",
        ]));
        assert!(err.contains(name), "{name}: {err}");
    }
    assert_eq!(
        entries(tmp.path()).len(),
        4,
        "only the four inputs: {:?}",
        entries(tmp.path())
    );
}

#[test]
fn nan_inf_and_truncated_feature_matrices_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    matrix(
        &tmp.path().join("nan.f32"),
        &[&[0.5, 0.5], &[f32::NAN, 1.0]],
    );
    matrix(
        &tmp.path().join("inf.f32"),
        &[&[0.5, 0.5], &[0.0, f32::INFINITY]],
    );
    matrix(&tmp.path().join("neginf.f32"), &[&[f32::NEG_INFINITY, 0.5]]);
    let mut short = b"PATEF32\0".to_vec();
    short.extend_from_slice(&3u64.to_le_bytes());
    short.extend_from_slice(&2u64.to_le_bytes());
    short.extend_from_slice(&[0u8; 8]);
    std::fs::write(tmp.path().join("short.f32"), short).unwrap();
    std::fs::write(tmp.path().join("magic.f32"), b"NOTAMATRIX").unwrap();
    for (name, want) in [
        (
            "nan.f32",
            "nan.f32: value at row 1, column 0 is NaN; expected a finite number",
        ),
        (
            "inf.f32",
            "inf.f32: value at row 1, column 1 is inf; expected a finite number",
        ),
        ("neginf.f32", "neginf.f32: value at row 0, column 0 is -inf"),
        ("short.f32", "short.f32: header says 3×2 f32 values"),
        ("magic.f32", "magic.f32"),
    ] {
        let input = tmp.path().join(name);
        let output = tmp.path().join(format!("noisy-{name}"));
        let err = refused(run(&[
            "privatize",
            "--rho",
            "1",
            "--in",
            s(&input),
            "--out",
            s(&output),
        ]));
        assert!(err.contains(want), "{name}: {err}");
        assert!(!output.exists(), "{name}: output written from a bad matrix");
    }
    // The student refuses them too (the queries matrix), before training.
    let labels = tmp.path().join("two.labels");
    std::fs::write(&labels, "0\n1\n").unwrap();
    let model = tmp.path().join("student.safetensors");
    let fz = tmp.path().join("featurizer.json");
    assert!(fit_featurizer(&fz).status.success());
    let err = refused(run(&[
        "student",
        "--featurizer",
        s(&fz),
        "--queries",
        s(&tmp.path().join("nan.f32")),
        "--labels",
        s(&labels),
        "--validation",
        s(&tmp.path().join("nan.f32")),
        "--validation-labels",
        s(&labels),
        "--out",
        s(&model),
    ]));
    assert!(err.contains("nan.f32") && err.contains("NaN"), "{err}");
    assert!(!model.exists());
}

#[test]
fn configs_with_unknown_keys_or_wrong_types_name_the_key_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let data = "split: {simulate_from: [{path: x.txt, format: csic, label: benign}]}\n";
    for (name, extra, want) in [
        ("unknown-top", "colour: blue\n", "unknown field `colour`"),
        (
            "unknown-nested",
            "privacy: {mechanism: lnmax, gama: 0.1}\n",
            "gama",
        ),
        (
            "type-count",
            "teachers: {count: many}\n",
            "teachers.count: invalid type: string \"many\", expected usize at line 2",
        ),
        ("type-seed", "seed: \"abc\"\n", "seed: invalid type"),
        (
            "type-list",
            "teachers: {training: {hidden: 64}}\n",
            "hidden",
        ),
        ("negative", "student: {queries: -5}\n", "student.queries"),
        (
            "format",
            "split: {simulate_from: [{path: x.txt, format: xml}]}\n",
            "xml",
        ),
    ] {
        let yaml = if name == "format" {
            extra.to_string()
        } else {
            format!("{data}{extra}")
        };
        let err = run_refused(tmp.path(), name, &yaml);
        assert!(
            err.contains(want) && err.contains(&format!("{name}.yaml")),
            "{name}: {err}"
        );
    }
    let err = run_refused(tmp.path(), "not-yaml", "split: [unclosed\n");
    assert!(err.contains("not-yaml.yaml"), "{err}");
}

fn fit_featurizer(out: &Path) -> Output {
    run(&[
        "featurize",
        "fit",
        "--format",
        "csic",
        &sample("csic_normalTrafficTraining_sample.txt"),
        &sample("csic_anomalousTrafficTest_A_sample.txt"),
        "--out",
        s(out),
    ])
}

#[test]
fn an_unwritable_output_directory_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    // A path below a regular file cannot be created, even by root (chmod does not stop root).
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let below = file.join("featurizer.json");
    let err = refused(fit_featurizer(&below));
    assert!(err.contains("plain-file/featurizer.json"), "{err}");
    let run_dir = file.join("run");
    let err = refused(run(&[
        "run",
        "--config",
        &sample("../../configs/quick.yaml"),
        "--out",
        s(&run_dir),
    ]));
    assert!(err.contains("plain-file/run"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");

    // A read-only file system, where the test may mount one (root with CAP_SYS_ADMIN).
    if let Some(mount) = TmpMount::new(tmp.path().join("ro"), "ro,size=64k") {
        let err = refused(fit_featurizer(&mount.dir.join("featurizer.json")));
        assert!(err.contains("Read-only file system"), "{err}");
        assert!(entries(&mount.dir).is_empty());
    }
}

/// A tmpfs mounted for the test's lifetime; `None` where mounting is not permitted.
struct TmpMount {
    dir: PathBuf,
}

impl TmpMount {
    fn new(dir: PathBuf, options: &str) -> Option<TmpMount> {
        std::fs::create_dir_all(&dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(TmpMount { dir })
    }
}

impl Drop for TmpMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// Runs `pate-trainer args` with the file size limited to `kib` KiB (RLIMIT_FSIZE, `ulimit -f`),
/// SIGXFSZ ignored so that a write past the limit fails with EFBIG: a disk that fills up
/// mid-write, without root.
fn with_file_size_limit(kib: u64, args: &[&str]) -> Output {
    let mut script = format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\"");
    for i in 0..args.len() {
        script.push_str(&format!(" \"${}\"", i + 1));
    }
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run bash")
}

#[test]
fn disk_full_mid_write_leaves_the_old_artifact_and_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let fz = out_dir.join("featurizer.json");
    std::fs::write(&fz, "OLD").unwrap();
    let a = sample("csic_normalTrafficTraining_sample.txt");
    let b = sample("csic_anomalousTrafficTest_A_sample.txt");
    // The featurizer artifact is ~18 KB: a 4 KiB limit stops it mid-write.
    let err = refused(with_file_size_limit(
        4,
        &[
            "featurize",
            "fit",
            "--format",
            "csic",
            &a,
            &b,
            "--out",
            s(&fz),
        ],
    ));
    assert!(
        err.contains("featurizer.json") && err.contains("File too large"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&fz).unwrap(),
        b"OLD",
        "the old artifact was replaced by a partial one"
    );
    assert_eq!(
        entries(&out_dir),
        ["featurizer.json"],
        "a temporary file stayed behind"
    );

    // A bundle is written to a temporary directory and renamed into place: a failed export
    // leaves no bundle directory (and no temporary one). featurizer.json (~18 KB) fits under
    // 64 KiB, model.onnx (500 × 64 floats, ~128 KB) does not.
    let (fz_path, student) = student_files(tmp.path());
    let bundle_dir = out_dir.join("bundle");
    let err = refused(with_file_size_limit(
        64,
        &export_args(&fz_path, &student, &bundle_dir),
    ));
    assert!(err.contains("File too large"), "{err}");
    assert!(
        !bundle_dir.exists(),
        "a partial bundle directory: {:?}",
        entries(&bundle_dir)
    );
    assert_eq!(
        entries(&out_dir),
        ["featurizer.json"],
        "a temporary bundle directory stayed behind"
    );

    // A real full disk (ENOSPC), where the test may mount a small tmpfs.
    if let Some(mount) = TmpMount::new(tmp.path().join("full"), "size=64k") {
        let bundle_dir = mount.dir.join("bundle");
        let err = refused(run(&export_args(&fz_path, &student, &bundle_dir)));
        assert!(err.contains("No space left on device"), "{err}");
        assert!(
            entries(&mount.dir).is_empty(),
            "left behind: {:?}",
            entries(&mount.dir)
        );
    }
}

/// A fitted featurizer and a `[dim, 64, 1]` MLP (JSON, `bundle::onnx::Mlp`) for `export`.
fn student_files(dir: &Path) -> (PathBuf, PathBuf) {
    let fz_path = dir.join("fitted.featurizer.json");
    let out = fit_featurizer(&fz_path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dim = featurizer::Featurizer::load(&fz_path).unwrap().dim();
    let dense = |in_dim: usize, out_dim: usize| bundle::onnx::Dense {
        in_dim,
        out_dim,
        weight: (0..in_dim * out_dim)
            .map(|i| ((i % 7) as f32 - 3.0) * 0.01)
            .collect(),
        bias: vec![0.0; out_dim],
    };
    let mlp = bundle::onnx::Mlp {
        layers: vec![dense(dim, 64), dense(64, 1)],
    };
    let student = dir.join("student.json");
    std::fs::write(&student, serde_json::to_vec(&mlp).unwrap()).unwrap();
    (fz_path, student)
}

fn export_args<'a>(fz: &'a Path, student: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec![
        "export",
        "--not-private",
        "--student",
        s(student),
        "--featurizer",
        s(fz),
        "--threshold",
        "0.5",
        "--out",
        s(out),
    ]
}

#[test]
fn a_bundle_whose_hash_does_not_match_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (fz_path, student) = student_files(tmp.path());
    let bundle_dir = tmp.path().join("bundle");
    let out = run(&export_args(&fz_path, &student, &bundle_dir));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let score = |dir: &Path| run(&["score", "--bundle", s(dir), "--target", "/index.html"]);
    assert!(score(&bundle_dir).status.success());

    for file in ["model.onnx", "featurizer.json"] {
        let copy = tmp.path().join(format!("tampered-{file}"));
        std::fs::create_dir(&copy).unwrap();
        for entry in entries(&bundle_dir) {
            std::fs::copy(bundle_dir.join(&entry), copy.join(&entry)).unwrap();
        }
        let mut bytes = std::fs::read(copy.join(file)).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(copy.join(file), bytes).unwrap();
        let err = refused(score(&copy));
        assert!(
            err.contains(file) && err.contains("sha256"),
            "{file}: {err}"
        );
    }
}

/// `--threads 0` (libtorch aborts on it) and a number beyond its range are usage errors naming
/// the flag, in every subcommand that takes it, before anything runs; `threads: 0` in a config
/// is a configuration error naming the key.
#[test]
fn zero_or_huge_threads_are_refused_not_a_libtorch_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for threads in ["0", "3000000000", "many"] {
        for sub in ["run", "teach", "vote", "student", "evaluate"] {
            let o = run(&[sub, "--threads", threads, "--out", s(&out)]);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{sub} --threads {threads}: {stderr}"
            );
            assert!(
                stderr.contains("--threads") && !stderr.contains("panicked"),
                "{sub}: {stderr}"
            );
        }
    }
    assert!(!out.exists());
    let cfg = tmp.path().join("threads.yaml");
    std::fs::write(
        &cfg,
        format!(
            "threads: 0\nsplit: {{simulate_from: [{{path: {}, format: csic, label: benign}}]}}\n",
            sample("csic_normalTrafficTraining_sample.txt")
        ),
    )
    .unwrap();
    let stderr = refused(run(&["run", "--config", s(&cfg), "--out", s(&out)]));
    assert!(stderr.contains("threads"), "{stderr}");
    assert!(!out.exists());
}
