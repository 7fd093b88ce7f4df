//! The PTX line table (`.file`, `.loc`, written by nvcc with `-lineinfo`): which source line an
//! instruction came from, seen through inlining.
//!
//! Code inlined from another function carries its own position and the call site:
//! `.loc FILE LINE COL, function_name LABEL, inlined_at FILE2 LINE2 COL2`. When the call site is
//! itself inlined code, an earlier `.loc` at that position says where it was inlined in turn, so a
//! chain is followed through the latest record at each call site's position. nvcc 13 writes a
//! chain as consecutive records, outermost first:
//!
//! ```text
//! .loc 3 17 5
//! .loc 3 10 5, function_name $L__info_string1, inlined_at 3 17 5
//! .loc 3 6 5, function_name $L__info_string2, inlined_at 3 10 5
//! ```
//!
//! A position is named by the chain's end, the line in the entry's own function (whatever file
//! that is: a kernel written in a header is named by the header's line), with the inlined
//! position kept as detail: `inlined.cu:17 (inlined: inlined.cu:6)`. The user's line comes first
//! because tools that shorten names (CLOG2 keeps 31 bytes) keep its start.

use std::collections::HashMap;

/// A source position without its column: the `.file` index and the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    file: u32,
    line: u32,
}

/// A `.loc` position, the key call sites are found by.
type Pos = (u32, u32, u32);

/// The latest `.loc`: where the instruction is, and the outermost call site when it is inlined.
#[derive(Debug, Clone, Copy)]
struct Current {
    at: Line,
    inlined_at: Option<Line>,
}

/// A `.loc` the rewriter cannot read; ptxas would refuse it too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocError {
    #[error("`.loc` needs FILE LINE COL, found `{0}`")]
    Position(String),
    #[error("`inlined_at` needs FILE LINE COL, found `{0}`")]
    InlinedAt(String),
}

/// The `.file` names and the `.loc` records seen so far in one entry.
#[derive(Debug, Default, Clone)]
pub struct LineTable {
    files: HashMap<u32, String>,
    /// For each position a `.loc` named: its outermost call site, or the position itself when
    /// that record was not inlined.
    outermost: HashMap<Pos, Line>,
    current: Option<Current>,
}

impl LineTable {
    /// Reads the module's `.file N "path"` directives (their base names).
    pub fn new(ptx: &str) -> Self {
        let mut files = HashMap::new();
        for line in ptx.lines() {
            let Some(rest) = line.trim_start().strip_prefix(".file") else {
                continue;
            };
            let mut it = rest.trim_start().splitn(2, char::is_whitespace);
            let (Some(n), Some(path)) = (it.next(), it.next()) else {
                continue;
            };
            let Ok(n) = n.parse() else { continue };
            let path = path.split('"').nth(1).unwrap_or("");
            let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
            files.insert(n, base.to_string());
        }
        LineTable {
            files,
            ..LineTable::default()
        }
    }

    /// Whether the module has a line table (was compiled with `-lineinfo` or `-G`).
    pub fn present(&self) -> bool {
        !self.files.is_empty()
    }

    /// Takes a `.loc` line into account (other lines are ignored).
    pub fn see(&mut self, line: &str) -> Result<(), LocError> {
        let Some(rest) = loc_operands(line) else {
            return Ok(());
        };
        let mut clauses = rest.split(',');
        let own = clauses.next().unwrap_or("");
        let at = position(own).ok_or_else(|| LocError::Position(own.trim().to_string()))?;
        let mut call_site = None;
        for clause in clauses {
            // `function_name` only names the inlined function; other attributes name nothing.
            if let Some(site) = clause.trim().strip_prefix("inlined_at") {
                call_site = Some(
                    position(site).ok_or_else(|| LocError::InlinedAt(site.trim().to_string()))?,
                );
            }
        }
        let line_of = |p: Pos| Line {
            file: p.0,
            line: p.1,
        };
        // The call site's own record, seen before, already knows where its chain ends; a call
        // site without a record of its own ends the chain.
        let inlined_at = call_site.map(|c| self.outermost.get(&c).copied().unwrap_or(line_of(c)));
        self.outermost.insert(at, inlined_at.unwrap_or(line_of(at)));
        self.current = Some(Current {
            at: line_of(at),
            inlined_at,
        });
        Ok(())
    }

    /// Forgets the records (at the start of each entry: positions in another function are
    /// other call sites).
    pub fn reset(&mut self) {
        self.outermost.clear();
        self.current = None;
    }

    /// The latest `.loc`'s name: `file.cu:LINE`, or for inlined code the outermost call site's
    /// with the inlined position as detail (`file.cu:LINE (inlined: header.h:LINE)`). Without a
    /// position, or with a file the `.file` table does not name: `ptx:LINE` (1-based line of the
    /// PTX input).
    pub fn name(&self, ptx_line: usize) -> String {
        let show = |l: Line| Some(format!("{}:{}", self.files.get(&l.file)?, l.line));
        let named = self.current.and_then(|c| match c.inlined_at {
            None => show(c.at),
            Some(outer) => Some(format!("{} (inlined: {})", show(outer)?, show(c.at)?)),
        });
        named.unwrap_or_else(|| format!("ptx:{ptx_line}"))
    }
}

/// Whether `line` is a `.loc` directive (and not, say, a `.local` declaration).
pub fn is_loc(line: &str) -> bool {
    loc_operands(line).is_some()
}

/// What follows `.loc` on a `.loc` line.
fn loc_operands(line: &str) -> Option<&str> {
    let code = line.split("//").next().unwrap_or("").trim();
    let rest = code.strip_prefix(".loc")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// `FILE LINE COL` as numbers; `None` when any is missing or not a number, or more follows.
fn position(text: &str) -> Option<Pos> {
    let mut w = text.split_whitespace().map(str::parse::<u32>);
    let pos = (w.next()?.ok()?, w.next()?.ok()?, w.next()?.ok()?);
    w.next().is_none().then_some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names() {
        let mut s = LineTable::new(".file 1 \"/tmp/dir/hist.cu\"\n");
        assert!(s.present());
        assert_eq!(s.name(7), "ptx:7");
        s.see("\t.loc\t1 12 5").unwrap();
        assert_eq!(s.name(7), "hist.cu:12");
        s.see("\t.local .align 4 .b8 \t__local_depot0[8];").unwrap();
        assert_eq!(s.name(7), "hist.cu:12", "`.local` is no `.loc`");
        assert!(is_loc("\t.loc\t1 12 5 // x") && !is_loc("\t.local .b8 d[8];"));
        s.reset();
        assert_eq!(s.name(9), "ptx:9");
        assert!(!LineTable::new(".version 9.0\n").present());
    }

    const FILES: &str = ".file 1 \"/a/k.cu\"\n.file 2 \"/cuda/include/sm_32_intrinsics.hpp\"\n";

    #[test]
    fn chains_end_at_the_entrys_own_line() {
        let mut s = LineTable::new(FILES);
        for l in [
            ".loc 1 17 5",
            ".loc 1 10 5, function_name $L__info_string1, inlined_at 1 17 5",
            ".loc 1 6 5, function_name $L__info_string2, inlined_at 1 10 5",
            ".loc 2 134 49, function_name $L__info_string3+4, inlined_at 1 6 5",
        ] {
            s.see(l).unwrap();
        }
        assert_eq!(s.name(1), "k.cu:17 (inlined: sm_32_intrinsics.hpp:134)");
        // Back in the middle of the chain: its call site is still known.
        s.see("\t.loc\t1 6 5, function_name $L__info_string2, inlined_at 1 10 5")
            .unwrap();
        assert_eq!(s.name(1), "k.cu:17 (inlined: k.cu:6)");
        // The latest record at a call site's position decides: the same helper at line 30.
        s.see(".loc 1 10 5, function_name $L__info_string1, inlined_at 1 30 5")
            .unwrap();
        s.see(".loc 1 6 5, function_name $L__info_string2, inlined_at 1 10 5")
            .unwrap();
        assert_eq!(s.name(1), "k.cu:30 (inlined: k.cu:6)");
    }

    #[test]
    fn a_call_site_without_a_record_ends_the_chain() {
        let mut s = LineTable::new(FILES);
        s.see(".loc 2 134 49, function_name $L__info_string0, inlined_at 1 8 3")
            .unwrap();
        assert_eq!(s.name(4), "k.cu:8 (inlined: sm_32_intrinsics.hpp:134)");
        // A record naming itself as its call site ends there too, without a loop.
        s.reset();
        s.see(".loc 1 5 1, function_name $L__info_string0, inlined_at 1 5 1")
            .unwrap();
        assert_eq!(s.name(4), "k.cu:5 (inlined: k.cu:5)");
    }

    #[test]
    fn unknown_files_fall_back_to_the_ptx_line() {
        let mut s = LineTable::new(FILES);
        s.see(".loc 2 134 49, function_name $L__info_string0, inlined_at 9 8 3")
            .unwrap();
        assert_eq!(s.name(4), "ptx:4");
        s.see(".loc 9 134 49, function_name $L__info_string0, inlined_at 1 8 3")
            .unwrap();
        assert_eq!(s.name(5), "ptx:5");
    }

    #[test]
    fn malformed_records_are_errors() {
        let mut s = LineTable::new(FILES);
        s.see(".loc 1 3 5").unwrap();
        for (line, want) in [
            (
                ".loc 1 4 5, function_name $L__info_string0, inlined_at 1 x 5",
                LocError::InlinedAt("1 x 5".into()),
            ),
            (
                ".loc 1 4 5, function_name $L__info_string0, inlined_at",
                LocError::InlinedAt(String::new()),
            ),
            (
                ".loc 1 4 5, inlined_at 1 2 3 4",
                LocError::InlinedAt("1 2 3 4".into()),
            ),
            (".loc 1 four 5", LocError::Position("1 four 5".into())),
            (".loc", LocError::Position(String::new())),
        ] {
            assert_eq!(s.see(line), Err(want), "{line}");
        }
        assert_eq!(s.name(2), "k.cu:3", "a refused record changes nothing");
    }
}
