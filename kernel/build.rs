//! Links the kernel with its linker script: `linker.ld`, or the one `cargo xtask` generates for
//! a variant image (`REEF_LINKER_SCRIPT`, see `xtask/src/variant.rs`), writing a link map where
//! `REEF_LINK_MAP` says (xtask reads the boot image's to place a variant's statics).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = std::env::var("REEF_LINKER_SCRIPT").unwrap_or(format!("{dir}/linker.ld"));
    println!("cargo:rustc-link-arg-bins=-T{script}");
    if let Ok(map) = std::env::var("REEF_LINK_MAP") {
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
    }
    println!("cargo:rerun-if-changed={script}");
    println!("cargo:rerun-if-env-changed=REEF_LINKER_SCRIPT");
    println!("cargo:rerun-if-env-changed=REEF_LINK_MAP");
}
