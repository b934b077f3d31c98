//! Bakes an rpath to libtorch into the binaries so that users need no LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        let lib = std::path::Path::new(&libtorch).join("lib");
        // Canonicalize so the rpath survives the `.deps/libtorch` symlink being re-pointed.
        let lib = lib.canonicalize().unwrap_or(lib);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
}
