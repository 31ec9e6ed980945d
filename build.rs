//! Build script: the commit ladder is built from, for `ladder --version` (`LADDER_GIT_COMMIT`),
//! so a CI log or a bug report names the exact build. Outside a git checkout (a source
//! tarball) it says `unknown`. Nothing else is generated here.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LADDER_GIT_COMMIT={commit}");
    // Run again when HEAD moves: a commit, a checkout, a branch switch (in a worktree too,
    // whose git folder is not ./.git).
    // Only files that exist: cargo reruns a build script whose watched file is missing every
    // time, and that would rebuild the crate on every `cargo` call.
    let watch = |p: PathBuf| {
        if p.is_file() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = PathBuf::from(dir);
        watch(dir.join("HEAD"));
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"]).map_or(dir.clone(), PathBuf::from);
            watch(common.join(head));
            watch(common.join("packed-refs"));
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
