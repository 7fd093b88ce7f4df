//! What the binary's end-to-end tests share: running `warpscope`, and reading its `.npy` outputs.
// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A sweep that runs in about a second: 16³ volume, 16×16 image, two shapes, one view, two
/// modes (four runs), every warp traced.
pub const TINY_SWEEP: &[&str] = &[
    "--backend",
    "emu",
    "--volume-size",
    "16",
    "--image",
    "16x16",
    "--shapes",
    "16x2,2x16",
    "--views",
    "0,0,0",
    "--modes",
    "naive,fence",
    "--trace-warps",
    "all",
    "--slots",
    "256",
    "--frames",
    "1",
];

pub fn warpscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(args)
        .output()
        .expect("the warpscope binary runs")
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = warpscope(args);
    assert!(
        out.status.success(),
        "warpscope {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail cleanly (exit status 1, never a panic's 101 or an abort);
/// returns its stderr.
pub fn fails(args: &[&str]) -> String {
    let out = warpscope(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "warpscope {args:?} must fail with status 1, not panic or abort:\n{err}"
    );
    err
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn read_u32_npy(path: &Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}
