// Finds libmxlimit_c: MXLIMIT_C_LIB_DIR if set, else `pkg-config --libs
// mxlimit-c` (the installed mxlimit-c.pc, or the build tree's when
// PKG_CONFIG_PATH points at build/<preset>/pkgconfig-uninstalled), else the
// linker's default search path. No crates: the pkg-config program is run
// directly.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MXLIMIT_C_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = env::var("MXLIMIT_C_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-lib=dylib=mxlimit_c");
        return;
    }
    let output = Command::new("pkg-config")
        .args(["--libs", "mxlimit-c"])
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let flags = String::from_utf8_lossy(&out.stdout).into_owned();
            for flag in flags.split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={}", dir);
                } else if let Some(lib) = flag.strip_prefix("-l") {
                    println!("cargo:rustc-link-lib=dylib={}", lib);
                }
            }
        }
        _ => {
            println!(
                "cargo:warning=pkg-config found no mxlimit-c; linking \
                 -lmxlimit_c from the default search path"
            );
            println!("cargo:rustc-link-lib=dylib=mxlimit_c");
        }
    }
}
