//! `pate-trainer calibrate`: re-picks a bundle's thresholds from the protected site's own
//! unlabelled traffic and writes a new bundle version ([`crate::recalibrate`]).
//!
//! ```text
//! pate-trainer calibrate --bundle /etc/pate-proxy/bundle --traffic access.log.1 \
//!     --traffic access.log.2 [--traffic-format apache] [--attacks reviewed.log] \
//!     [--target-share 0.01] [--confidence 0.95] [--out DIR]
//! ```
//! Prints one JSON object on stdout (thresholds and shares flagged before and after, the new
//! model version) and the same in words on stderr.
use std::path::{Path, PathBuf};

use crate::calibrate::min_requests_for_share;
use crate::error::{Error, Result};
use crate::recalibrate::{recalibrate, write, Recalibrated, ThresholdChange, TrafficBudget};

/// The formats of a site's traffic `calibrate` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrafficFormat {
    /// Apache access log, common or combined format (the first field names the client).
    Apache,
    /// pate-proxy's capture file (`capture:` in its config): whole requests; every line must
    /// have been scored by this bundle's version.
    Capture,
}

impl TrafficFormat {
    fn dataset_format(self) -> datasets::Format {
        match self {
            TrafficFormat::Apache => datasets::Format::Apache,
            TrafficFormat::Capture => datasets::Format::Capture,
        }
    }
}

/// `calibrate --help`: what the command does and what the share it holds means.
pub const LONG_ABOUT: &str =
    "Re-pick a bundle's threshold from the site's own unlabelled traffic (learning \
mode): run pate-proxy in detect mode, then give this command the site's access logs. Every request \
is scored as pate-proxy scores it, and the new threshold is the lowest one that flags at most \
--target-share of that traffic, held at --confidence (the share's upper bound over 400 Poisson \
resamplings of the traffic, and the share on the traffic itself). The traffic is not labelled and \
is overwhelmingly benign, so the share it flags is an upper bound on the false-positive rate \
(exactly so whenever the model flags attacks at least as often as normal requests), not a measure \
of attacks caught. The traffic must hold enough requests for none flagged to hold the share at the \
confidence (exact binomial bound: 299 for 0.01 at 0.95), and no client may send more than half of \
it. Requests you reviewed and found to be attacks (--attacks: lines copied from the traffic, at \
most 200 distinct requests) leave the traffic, so that the share goes to normal requests, not to \
attacks rightly flagged. A bundle's content_only_threshold (pate-proxy's format_checks: false) \
is re-picked the same way on content-only scores. The new bundle (a new model_version; \
bundle.yaml's threshold_source records counts only, never the traffic) replaces --bundle \
atomically, where pate-proxy's reload picks it up, or goes to --out.";

/// Arguments of `pate-trainer calibrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bundle directory (written by `pate-trainer export` or an earlier `calibrate`).
    #[arg(long, value_name = "DIR")]
    pub bundle: PathBuf,
    /// The site's traffic: an access log (repeatable; several days and many clients).
    #[arg(long, value_name = "FILE", required = true)]
    pub traffic: Vec<PathBuf>,
    /// Format of `--traffic`.
    #[arg(long, value_enum, default_value = "apache")]
    pub traffic_format: TrafficFormat,
    /// Requests of the traffic reviewed and found to be attacks, in --traffic-format (lines
    /// copied from it; repeatable; at most 200 distinct requests): every copy of each leaves the
    /// traffic the share is a share of.
    #[arg(long, value_name = "FILE")]
    pub attacks: Vec<PathBuf>,
    /// The largest share of the traffic the new threshold may flag (an upper bound on its
    /// false-positive rate, the traffic being nearly all benign).
    #[arg(long, default_value_t = 0.01)]
    pub target_share: f64,
    /// The confidence at which the share is held.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Write the new bundle here (replaced atomically if it exists) and leave --bundle as it is.
    /// Default: --bundle itself, replaced atomically (a symlink's target directory, the link
    /// kept).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// ONNX Runtime library (default: $ORT_DYLIB_PATH, else the path set at build time).
    #[arg(long, value_name = "FILE")]
    pub onnxruntime: Option<PathBuf>,
}

/// What `calibrate` prints on stdout.
#[derive(serde::Serialize)]
struct Summary<'a> {
    bundle: &'a Path,
    model_version_before: &'a str,
    model_version: &'a str,
    traffic_requests: usize,
    reviewed_attacks_left_out: usize,
    distinct_clients: usize,
    budget: TrafficBudget,
    threshold: &'a ThresholdChange,
    content_only_threshold: Option<&'a ThresholdChange>,
    note: Option<&'static str>,
}

const NO_CONTENT_ONLY: &str = "the bundle has no content_only_threshold: content alone \
    (format_checks: false) is judged at threshold, left as it is";

/// Runs `pate-trainer calibrate`.
pub fn run(args: Args) -> Result<()> {
    let budget = budget(&args)?;
    let bundle = bundle::Bundle::load(&args.bundle)?;
    let version = Some(bundle.manifest.model_version.as_str());
    let format = args.traffic_format.dataset_format();
    let mut traffic = datasets::read_site_logs(format, &args.traffic, version)?;
    let left_out = match args.attacks.is_empty() {
        true => 0,
        false => without_reviewed_attacks(
            &mut traffic,
            &datasets::read_site_logs(format, &args.attacks, version)?,
        )?,
    };
    let needed = min_requests_for_share(budget.target_share, budget.confidence);
    traffic.summary.check(
        needed,
        &format!(
            "for a share of {} held at confidence {} (with none of them flagged, the exact \
             binomial bound just holds it)",
            budget.target_share, budget.confidence
        ),
    )?;
    bundle::init_onnxruntime(args.onnxruntime.as_deref())?;
    let chosen = recalibrate(&bundle, &traffic, budget)?;
    let out = resolved(args.out.as_deref().unwrap_or(&args.bundle));
    let manifest = write(&bundle, &out, &chosen.recalibration)?;
    let summary = Summary {
        bundle: &out,
        model_version_before: &bundle.manifest.model_version,
        model_version: &manifest.model_version,
        traffic_requests: traffic.records.len(),
        reviewed_attacks_left_out: left_out,
        distinct_clients: traffic.summary.distinct_clients(),
        budget,
        threshold: &chosen.threshold,
        content_only_threshold: chosen.content_only.as_ref(),
        note: chosen.content_only.is_none().then_some(NO_CONTENT_ONLY),
    };
    report(&summary, &chosen);
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(Error::serialize("the summary"))?
    );
    Ok(())
}

/// The most distinct requests `--attacks` may hold: a review, not a labelled data set.
pub const MAX_REVIEWED_ATTACKS: usize = 200;

/// What makes two requests of a log the same request.
type RequestKey<'a> = (&'a str, &'a [u8], Option<&'a [u8]>, &'a [(String, Vec<u8>)]);

fn key(r: &datasets::Record) -> RequestKey<'_> {
    (&r.method, &r.target, r.body.as_deref(), &r.headers)
}

/// Removes from `traffic` every request equal to one of `attacks` (method, target, body and
/// headers as read) and returns how many it removed.
fn without_reviewed_attacks(
    traffic: &mut datasets::SiteLog,
    attacks: &datasets::SiteLog,
) -> Result<usize> {
    let reviewed: std::collections::HashSet<RequestKey> = attacks.records.iter().map(key).collect();
    if reviewed.len() > MAX_REVIEWED_ATTACKS {
        return Err(Error::FlagValue {
            flag: "attacks",
            value: format!("({} distinct requests)", reviewed.len()),
            problem: "holds more than 200 distinct requests: a review of flagged requests, not a \
                      labelled data set",
        });
    }
    let keep: Vec<bool> = traffic
        .records
        .iter()
        .map(|r| !reviewed.contains(&key(r)))
        .collect();
    let before = traffic.records.len();
    let mut keep = keep.into_iter();
    traffic.records.retain(|_| keep.next().unwrap_or(true));
    Ok(before - traffic.records.len())
}

/// The directory a bundle path names: a symlink's target (so that a `current -> bundles/x` link
/// stays a link and its bundle is replaced), else the path as given.
fn resolved(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    }
}

/// `--target-share` and `--confidence`, each in (0, 1).
fn budget(args: &Args) -> Result<TrafficBudget> {
    for (flag, value) in [
        ("target-share", args.target_share),
        ("confidence", args.confidence),
    ] {
        if !(value > 0.0 && value < 1.0) {
            return Err(Error::FlagValue {
                flag,
                value: value.to_string(),
                problem: "is not in (0, 1)",
            });
        }
    }
    Ok(TrafficBudget {
        target_share: args.target_share,
        confidence: args.confidence,
    })
}

/// The summary in words, on stderr.
fn report(summary: &Summary, chosen: &Recalibrated) {
    let n = summary.traffic_requests;
    let line = |name: &str, c: &ThresholdChange| {
        tracing::info!(
            "calibrate: {name} {} -> {}: flags {:.3} % -> {:.3} % of {n} requests ({} -> {})",
            c.before,
            c.after,
            100.0 * c.share_flagged_before,
            100.0 * c.share_flagged_after,
            c.flagged_before,
            c.flagged_after,
        );
    };
    line("threshold", &chosen.threshold);
    match &chosen.content_only {
        Some(c) => line("content_only_threshold", c),
        None => tracing::info!("calibrate: {NO_CONTENT_ONLY}"),
    }
    tracing::info!(
        "calibrate: target share {} at confidence {}, {} distinct clients; {} written, \
         model_version {} -> {}",
        summary.budget.target_share,
        summary.budget.confidence,
        summary.distinct_clients,
        summary.bundle.display(),
        summary.model_version_before,
        summary.model_version
    );
}
