//! One module per `pate-trainer` subcommand; each exposes `Args` (clap) and `run`.
pub mod account;
pub mod aggregate;
pub mod calibrate;
pub mod data;
pub mod evaluate;
pub mod export;
pub mod featurize;
pub mod privatize;
pub mod run;
pub mod score;
pub mod student;
pub mod teach;
pub mod vote;

/// The arguments of a subcommand that only groups subcommands of its own (`data`, `featurize`).
#[derive(Debug, clap::Args)]
pub struct Group<C: clap::Subcommand> {
    /// What to do.
    #[command(subcommand)]
    pub command: C,
}

/// `--device` and `--threads` of the subcommands that run libtorch on their own (`evaluate`,
/// `student`, `vote`).
#[derive(Debug, clap::Args)]
pub struct DeviceArgs {
    /// `auto`, `cpu`, `cuda` or `cuda:<i>`.
    #[arg(long, value_parser = run::parse_device, default_value = "auto")]
    pub device: crate::device::DeviceChoice,
    /// libtorch CPU threads.
    #[arg(long, value_parser = run::parse_threads)]
    pub threads: Option<usize>,
}

impl DeviceArgs {
    /// Sets libtorch's threads (`--threads`, else `config_threads`) and resolves the device.
    pub fn apply(&self, config_threads: Option<usize>) -> crate::error::Result<tch::Device> {
        if let Some(t) = self.threads.or(config_threads) {
            tch::set_num_threads(t as i32);
        }
        crate::device::resolve(self.device)
    }
}
