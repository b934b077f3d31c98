//! Choosing the libtorch device: `auto`, `cpu`, `cuda` or `cuda:i`.
//!
//! The linker drops `libtorch_cuda.so` from a binary that references none of its symbols (tch
//! only calls into `libtorch_cpu`), so `tch::Cuda::is_available()` says false even on a GPU host
//! with a CUDA build of libtorch. Loading the library at runtime (its static initializers register
//! the CUDA backend with the dispatcher) fixes that without making the binary need CUDA to start.
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tch::Device;

use crate::error::{CudaProblem, Error, Result};

/// The device requested on the command line or in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// CUDA device 0 when libtorch can use one, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// CUDA device `i`; an error when it cannot be used.
    Cuda(usize),
}

impl FromStr for DeviceChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(DeviceChoice::Auto),
            "cpu" => Ok(DeviceChoice::Cpu),
            "cuda" => Ok(DeviceChoice::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|i| i.parse().ok())
                .map(DeviceChoice::Cuda)
                .ok_or_else(|| {
                    Error::key(
                        "device",
                        format!("expected auto, cpu, cuda or cuda:<index>, got {s:?}"),
                    )
                }),
        }
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Auto => write!(f, "auto"),
            DeviceChoice::Cpu => write!(f, "cpu"),
            DeviceChoice::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl serde::Serialize for DeviceChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DeviceChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.to_string()))
    }
}

/// Where libtorch_cuda.so may be: `$LIBTORCH/lib`, then the directories of this executable's
/// rpath that hold `libtorch_cpu.so` (read from `/proc/self/maps`, which lists the copy the
/// dynamic loader actually mapped).
fn cuda_library_candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        dirs.push(Path::new(&libtorch).join("lib"));
    }
    if let Ok(maps) = std::fs::read_to_string("/proc/self/maps") {
        for line in maps.lines() {
            if let Some(path) = line.split_whitespace().nth(5) {
                if path.ends_with("/libtorch_cpu.so") {
                    if let Some(dir) = Path::new(path).parent() {
                        dirs.push(dir.to_path_buf());
                    }
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    dirs.into_iter()
        .map(|d| d.join("libtorch_cuda.so"))
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// Loads libtorch_cuda.so once per process and keeps it loaded. Returns the path that loaded, or
/// why none did.
fn load_cuda_library() -> std::result::Result<PathBuf, String> {
    static LOADED: std::sync::OnceLock<std::result::Result<PathBuf, String>> =
        std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let mut errors = Vec::new();
            for path in cuda_library_candidates() {
                if !path.exists() {
                    errors.push(format!("{}: not found", path.display()));
                    continue;
                }
                match open_library(&path) {
                    Ok(lib) => {
                        // Never unloaded: the CUDA backend it registered must outlive every tensor.
                        std::mem::forget(lib);
                        return Ok(path);
                    }
                    Err(e) => errors.push(format!("{}: {e}", path.display())),
                }
            }
            if errors.is_empty() {
                errors.push("no libtorch directory known (set LIBTORCH)".into());
            }
            Err(errors.join("; "))
        })
        .clone()
}

#[allow(unsafe_code)]
fn open_library(path: &Path) -> std::result::Result<libloading::Library, libloading::Error> {
    // SAFETY: libtorch_cuda.so is the CUDA half of the libtorch this binary already links; its
    // initializers only register CUDA kernels and hooks with the already-loaded libtorch_cpu.
    unsafe { libloading::Library::new(path) }
}

/// Resolves `choice` to a libtorch device and logs (stderr) which device runs and why.
pub fn resolve(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => {
            tracing::info!(
                "device: cpu (requested), {} threads",
                tch::get_num_threads()
            );
            Ok(Device::Cpu)
        }
        DeviceChoice::Auto => match load_cuda_library() {
            Ok(path) if tch::Cuda::is_available() => {
                tracing::info!(
                    "device: cuda:0 (auto; {} loaded, {} GPU(s))",
                    path.display(),
                    tch::Cuda::device_count()
                );
                Ok(Device::Cuda(0))
            }
            Ok(path) => {
                tracing::info!(
                    "device: cpu (auto: {} loaded but no CUDA device is available), {} threads",
                    path.display(),
                    tch::get_num_threads()
                );
                Ok(Device::Cpu)
            }
            Err(why) => {
                tracing::info!(
                    "device: cpu (auto: no CUDA libtorch: {why}), {} threads",
                    tch::get_num_threads()
                );
                Ok(Device::Cpu)
            }
        },
        DeviceChoice::Cuda(i) => {
            let path = load_cuda_library().map_err(|why| Error::Cuda {
                index: i,
                problem: CudaProblem::Load(why),
            })?;
            if !tch::Cuda::is_available() {
                return Err(Error::Cuda {
                    index: i,
                    problem: CudaProblem::NoDevice(path),
                });
            }
            let count = tch::Cuda::device_count() as usize;
            if i >= count {
                return Err(Error::Cuda {
                    index: i,
                    problem: CudaProblem::Count(count),
                });
            }
            tracing::info!("device: cuda:{i} (requested; {} loaded)", path.display());
            Ok(Device::Cuda(i))
        }
    }
}

/// The name of a device as written in reports.
pub fn name(device: Device) -> String {
    match device {
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".into(),
    }
}
