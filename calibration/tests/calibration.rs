//! The committed calibration table is true of the code and of the records: every cheap row's
//! model value is what the emulator computes now, every silicon number is on the line of the
//! record its row names, every row agrees within its tolerance or says why not, no tolerance
//! grew since the merge base, and `docs/validation.md` is what the table gives.

use std::path::{Path, PathBuf};
use std::process::Command;

use calibration::{Options, TABLE_PATH, Table, Tolerances, Verdict, page, source};

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
        only: &[],
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
                // Recorded by the calibration program with --expensive; the page says so.
                Verdict::Agrees | Verdict::KnownGap | Verdict::NotComputed => return None,
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
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit whose table the tolerances are compared with, or why there is none.
///
/// On a branch: its merge base with main (`origin/main`, else `main`), the table the branch
/// will be merged onto. Where HEAD is on main itself (CI tests a clean clone of main, whose merge
/// base with main is HEAD, which would compare the table with itself): HEAD's first parent, the
/// main before the commit or merge under test. A shallow clone or the first commit has no
/// parent; nothing to compare with then, and the test says so.
fn base_commit(root: &Path) -> Result<String, String> {
    let head = git(root, &["rev-parse", "--verify", "HEAD"])
        .ok_or("no git repository with a commit here")?;
    let merge_base = ["origin/main", "main"]
        .iter()
        .find_map(|main| git(root, &["merge-base", "HEAD", main]));
    match merge_base {
        Some(base) if base != head => Ok(base),
        _ => git(root, &["rev-parse", "--verify", "--quiet", "HEAD^"]).ok_or_else(|| {
            format!(
                "HEAD ({head:.10}) is main's or has no main to branch from, and has no parent                  here (a shallow clone?)"
            )
        }),
    }
}

/// A tolerance may only narrow: widening one makes a disagreement look like agreement. The
/// table now (the working tree's) against the table at [`base_commit`]; skipped, saying why,
/// where there is no git history to compare with or the base has no table yet.
#[test]
fn no_tolerance_is_wider_than_on_the_merge_base() {
    let root = root();
    let base = match base_commit(&root) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("skipped: no merge base to compare the tolerances with: {why}");
            return;
        }
    };
    let Some(text) = git(&root, &["show", &format!("{base}:{TABLE_PATH}")]) else {
        eprintln!("skipped: {base:.10} has no {TABLE_PATH} to compare with");
        return;
    };
    let before = Tolerances::parse(&text, Path::new(&format!("{base}:{TABLE_PATH}")))
        .unwrap_or_else(|e| panic!("{}", trace::error_chain(&e)));
    let widened = table().widened_since(&before);
    assert!(
        widened.is_empty(),
        "tolerances may only narrow (compared with {base:.10}); a row the model no longer \
         meets is a known gap with its reason, not a wider tolerance:\n{}",
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
