//! What a PTX module declares: its `.version`, its `.target`, and the kernels (`.entry`) in it.
//!
//! A scan of the module's tokens, not a PTX parser: comments and string literals (`.file`
//! names) are skipped so that nothing in them is taken for a directive, and every `.entry`
//! (with or without `.visible` / `.weak` before it) gives the name after it, mangled as written.

use crate::arch::Arch;
use crate::code::Version;

/// The directives of a PTX module that say what it is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxInfo {
    /// `.version`: the PTX ISA version.
    pub version: Version,
    /// `.target`'s architecture (`sm_90a` written, a virtual architecture meant).
    pub target: Arch,
    /// `.target`'s further items, e.g. `debug`, `texmode_independent`.
    pub target_options: Vec<String>,
    /// The `.entry` names in declaration order.
    pub entries: Vec<String>,
}

/// Why a PTX text does not say what it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PtxProblem {
    #[error("no {0} directive")]
    Missing(&'static str),
    #[error("`{directive}` is followed by `{found}`")]
    Malformed {
        directive: &'static str,
        found: String,
    },
}

impl PtxInfo {
    /// Scans `text` for `.version`, `.target` and `.entry`.
    pub fn scan(text: &str) -> Result<Self, PtxProblem> {
        let mut tokens = Tokens { rest: text }.peekable();
        let mut version = None;
        let mut target = None;
        let mut target_options = Vec::new();
        let mut entries = Vec::new();
        while let Some(token) = tokens.next() {
            match token {
                ".version" if version.is_none() => {
                    let found = tokens.next().unwrap_or_default();
                    version = Some(parse_version(found).ok_or(PtxProblem::Malformed {
                        directive: ".version",
                        found: found.to_string(),
                    })?);
                }
                ".target" if target.is_none() => {
                    let found = tokens.next().unwrap_or_default();
                    target = Some(Arch::parse(found).ok_or(PtxProblem::Malformed {
                        directive: ".target",
                        found: found.to_string(),
                    })?);
                    while tokens.next_if_eq(&",").is_some() {
                        if let Some(option) = tokens.next() {
                            target_options.push(option.to_string());
                        }
                    }
                }
                ".entry" => {
                    let found = tokens.next().unwrap_or_default();
                    if !is_identifier(found) {
                        return Err(PtxProblem::Malformed {
                            directive: ".entry",
                            found: found.to_string(),
                        });
                    }
                    entries.push(found.to_string());
                }
                _ => {}
            }
        }
        Ok(Self {
            version: version.ok_or(PtxProblem::Missing(".version"))?,
            target: target.ok_or(PtxProblem::Missing(".target"))?,
            target_options,
            entries,
        })
    }
}

fn parse_version(s: &str) -> Option<Version> {
    let (major, minor) = s.split_once('.')?;
    Some(Version {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// PTX identifiers: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let follows = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => chars.all(follows),
        Some('_' | '$' | '%') => {
            let rest = chars.as_str();
            !rest.is_empty() && rest.chars().all(follows)
        }
        _ => false,
    }
}

/// Words (runs of `[A-Za-z0-9_$%.]`: directives, names, numbers) and single punctuation
/// characters, with whitespace, comments and string literals left out.
struct Tokens<'t> {
    rest: &'t str,
}

impl<'t> Iterator for Tokens<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.');
        loop {
            self.rest = self.rest.trim_start();
            let s = self.rest;
            if let Some(after) = s.strip_prefix("//") {
                self.rest = after.split_once('\n').map_or("", |(_, r)| r);
            } else if let Some(after) = s.strip_prefix("/*") {
                self.rest = after.split_once("*/").map_or("", |(_, r)| r);
            } else if let Some(after) = s.strip_prefix('"') {
                self.rest = skip_string(after);
            } else {
                let first = s.chars().next()?;
                let len = if word(first) {
                    s.find(|c: char| !word(c)).unwrap_or(s.len())
                } else {
                    first.len_utf8()
                };
                let (token, rest) = s.split_at(len);
                self.rest = rest;
                return Some(token);
            }
        }
    }
}

/// What follows the string literal whose opening quote precedes `s` (escapes honoured).
fn skip_string(s: &str) -> &str {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return &s[i + 1..],
            _ => escaped = false,
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"//
// Generated by NVIDIA NVVM Compiler /* not a comment start */
.version 9.0
.target sm_90a, debug
.address_size 64

.file 1 "/tmp/a/*b\".entry fake(\".cu"
/* .entry commented_out( */
	// .globl	_Z3addPf
.visible .entry _Z3addPf(
	.param .u64 _Z3addPf_param_0
)
{ ret; }
.weak .entry $weak_k() { ret; }
.func helper() { ret; }
.entry plain() { ret; }
"#;

    #[test]
    fn a_module_says_its_version_target_and_entries() {
        let info = PtxInfo::scan(MODULE).unwrap();
        assert_eq!(info.version, Version { major: 9, minor: 0 });
        assert_eq!(info.target, Arch::parse("sm_90a").unwrap());
        assert_eq!(info.target_options, ["debug"]);
        assert_eq!(info.entries, ["_Z3addPf", "$weak_k", "plain"]);
    }

    #[test]
    fn missing_or_malformed_directives_are_errors() {
        assert_eq!(
            PtxInfo::scan(".target sm_75").unwrap_err(),
            PtxProblem::Missing(".version")
        );
        assert_eq!(
            PtxInfo::scan(".version 9.0").unwrap_err(),
            PtxProblem::Missing(".target")
        );
        assert_eq!(
            PtxInfo::scan(".version nine\n.target sm_75").unwrap_err(),
            PtxProblem::Malformed {
                directive: ".version",
                found: "nine".into()
            }
        );
        assert_eq!(
            PtxInfo::scan(".version 9.0\n.target sm_75\n.entry (").unwrap_err(),
            PtxProblem::Malformed {
                directive: ".entry",
                found: "(".into()
            }
        );
        assert!(PtxInfo::scan(".version 9.0\n.target sm_75\n.entry").is_err());
    }
}
