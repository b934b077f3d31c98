//! Writes the fixture bundle (see `test_support`) into a directory, for trying the proxy
//! without training: `cargo run --release -p proxy --example fixture_bundle -- DIR [VERSION]
//! [harmless]`. `harmless`: no token is weighted as malicious, so nothing is blocked (used by
//! bench/faults.sh to see verdicts switch on reload).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: fixture_bundle DIR [MODEL_VERSION]");
        return ExitCode::from(2);
    };
    let version = args
        .next()
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| "fixture".into());
    let attack_tokens: Option<&[&str]> = match args.next() {
        None => None,
        Some(a) if a == "harmless" => Some(&[]),
        Some(a) => {
            eprintln!(
                "unknown argument {a:?}; usage: fixture_bundle DIR [MODEL_VERSION] [harmless]"
            );
            return ExitCode::from(2);
        }
    };
    match test_support::write_fixture_bundle(&dir, attack_tokens, 0.5, &version) {
        Ok(manifest) => {
            println!(
                "{}: model {} (threshold {})",
                dir.display(),
                manifest.model_version,
                manifest.threshold
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
