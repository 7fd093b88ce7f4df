//! The crate map of `docs/ARCHITECTURE.md` is a rule the build keeps: each workspace crate depends
//! on exactly the workspace crates its row names (its normal dependencies, as `cargo metadata`
//! reports them), and only on crates in rows above it, so the table's order is the direction data
//! flows. A change to the crate graph is a change to the document.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// The crate table's rows in order: the crate (its folder) and the crates its row depends on.
fn stated(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 5 && cells[1] == "crate" && cells[3] == "depends on" {
            in_table = true;
            continue;
        }
        if !in_table || cells.len() < 5 || cells[1].starts_with("--") {
            if in_table && !line.starts_with('|') {
                break;
            }
            continue;
        }
        // The crate is the cell's first name (a package name may follow it).
        let name = ticked(cells[1]);
        assert!(!name.is_empty(), "a row names its crate: {line}");
        rows.push((name[0].clone(), ticked(cells[3]).into_iter().collect()));
    }
    rows
}

/// Each workspace crate's folder and the folders of the workspace crates it depends on
/// (normal dependencies; dev and build dependencies are not part of the map).
fn actual(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let folder = |manifest: &str| -> String {
        Path::new(manifest)
            .parent()
            .and_then(Path::file_name)
            .map(|f| f.to_string_lossy().into_owned())
            .expect("a manifest in a folder")
    };
    let by_package: BTreeMap<&str, String> = packages
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name"),
                folder(p["manifest_path"].as_str().expect("manifest_path")),
            )
        })
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| by_package.get(d["name"].as_str()?).cloned())
                .collect();
            (by_package[p["name"].as_str().expect("name")].clone(), deps)
        })
        .collect()
}

#[test]
fn the_crate_map_is_the_dependency_graph() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let rows = stated(&doc);
    assert!(rows.len() >= 8, "the crate table was not found: {rows:?}");
    let actual = actual(&root);
    let named: BTreeSet<&String> = rows.iter().map(|(c, _)| c).collect();
    let crates: BTreeSet<&String> = actual.keys().collect();
    assert_eq!(named, crates, "the table's crates are the workspace's");
    let mut above = BTreeSet::new();
    for (krate, deps) in &rows {
        assert_eq!(
            deps, &actual[krate],
            "{krate}: the table says it depends on {deps:?}, Cargo.toml says {:?}",
            actual[krate]
        );
        let below: Vec<&String> = deps.iter().filter(|d| !above.contains(*d)).collect();
        assert!(
            below.is_empty(),
            "{krate} depends on {below:?}, which the table lists after it: data must flow down the table"
        );
        above.insert(krate.clone());
    }
}

#[test]
fn a_row_lists_what_its_cell_names() {
    let doc = "| crate | one job | depends on |\n|--|--|--|\n| `a` | x | — |\n| `b` (package `w-b`) | y | `a`, `c` |\n\nafter";
    let rows = stated(doc);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].0, "b");
    assert_eq!(
        rows[1].1,
        ["a", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
    assert!(rows[0].1.is_empty());
}
