//! The committed calibration table is true of the code and of the records: every cheap row's
//! model value is what the emulator computes now, every silicon number is on the line of the
//! record its row names, every row agrees within its tolerance or says why not, no tolerance
//! grew since the merge base, and `docs/validation.md` is what the table gives.

use std::path::{Path, PathBuf};
use std::process::Command;

use calibration::{Options, TABLE_PATH, Table, Verdict, page, source};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the calibration crate sits in the workspace")
        .to_path_buf()
}

fn table() -> Table {
    Table::read(&root()).unwrap_or_else(|e| panic!("{}", trace::error_chain(&e)))
}

/// A model change changes these values: re-record them (`cargo run -p warpscope-calibration
/// --example calibrate -- --write`), so that the change shows its effect in the table and the
/// page. The expensive rows are recorded by the same program with `--expensive`.
#[test]
fn every_cheap_row_holds_the_value_the_emulator_computes() {
    let root = root();
    let table = table();
    let opts = Options {
        expensive: false,
        frames_dir: std::env::temp_dir(),
        progress: &|_| {},
    };
    let values = calibration::recompute(&root, &table, &opts)
        .unwrap_or_else(|e| panic!("{}", trace::error_chain(&e)));
    let mut stale = Vec::new();
    let mut cheap = 0;
    for (row, value) in table.row.iter().zip(&values) {
        if let Some(v) = value {
            cheap += 1;
            if row.model != Some(*v) {
                stale.push(format!(
                    "{}: recorded {:?}, computed {v}",
                    row.id, row.model
                ));
            }
        }
    }
    assert!(cheap > 60, "only {cheap} cheap rows were computed");
    assert!(
        stale.is_empty(),
        "the table is not what the code computes (re-record it with `cargo run -p \
         warpscope-calibration --example calibrate -- --write`):\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_row_agrees_within_its_tolerance_or_is_a_known_gap() {
    let table = table();
    let wrong: Vec<String> = table
        .row
        .iter()
        .filter_map(|r| {
            let why = match r.verdict() {
                Verdict::Agrees | Verdict::KnownGap => return None,
                Verdict::Disagrees => {
                    "outside its tolerance and not marked as a known gap (give the reason in `gap`)"
                }
                Verdict::StaleGap => "within its tolerance yet marked as a gap (remove `gap`)",
                Verdict::NoModel => "has no model value (run the calibrate example with --write)",
            };
            Some(format!(
                "{} ({}): silicon {}, model {:?}, tolerance {}: {why}",
                r.id, r.gpu, r.silicon, r.model, r.tolerance
            ))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        table.row.iter().any(|r| r.verdict() == Verdict::Agrees)
            && table.row.iter().any(|r| r.verdict() == Verdict::KnownGap),
        "a table of real measurements has both"
    );
}

#[test]
fn every_silicon_number_is_on_the_line_its_source_names() {
    let problems = source::problems(&root(), &table());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Git's output for `args` in the workspace, when git runs and succeeds there.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A tolerance may only narrow: widening one makes a disagreement look like agreement. Compared
/// with the table at `git merge-base HEAD main`; where there is no git, no `main` or no table
/// there, nothing to compare with (a clean clone of main is its own merge base).
#[test]
fn no_tolerance_is_wider_than_on_the_merge_base() {
    let root = root();
    let Some(base) = git(&root, &["merge-base", "HEAD", "main"]) else {
        eprintln!("skipped: no git repository with a `main` branch here to compare with");
        return;
    };
    let base = base.trim();
    let Some(text) = git(&root, &["show", &format!("{base}:{TABLE_PATH}")]) else {
        eprintln!("skipped: the merge base {base} has no {TABLE_PATH}");
        return;
    };
    let before = Table::parse(&text, Path::new(&format!("{base}:{TABLE_PATH}")))
        .unwrap_or_else(|e| panic!("{}", trace::error_chain(&e)));
    let widened = table().widened_since(&before);
    assert!(
        widened.is_empty(),
        "{}",
        widened
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_validation_page_is_what_the_table_gives() {
    let root = root();
    let path = root.join(page::PAGE_PATH);
    let committed =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        committed == page::render(&table()),
        "{} is not what the table gives: regenerate it with `cargo run -p \
         warpscope-calibration --example calibrate -- --write`",
        page::PAGE_PATH
    );
}
