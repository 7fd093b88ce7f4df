//! Reading PTX lines: which instruction is a load of which memory, what it writes, and which
//! registers have which type (source lines are `lines.rs`'s).
//!
//! Why text and not the emulator's parser: the rewriter must give back the input unchanged
//! except for the inserted lines, and the emulator's AST does not keep the text. The lines nvcc
//! writes are regular (one instruction per line, `;`-terminated), so a line reader suffices; the
//! result is parsed again by `emulator::Module::parse` before it is returned.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use trace::{ProbeMode, Region};

/// The kind of memory a load reads, as selected with `--sites`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SiteKind {
    Global,
    Texture,
    ReadOnly,
    Constant,
    Shared,
    Local,
}

impl SiteKind {
    pub const ALL: [SiteKind; 6] = [
        SiteKind::Global,
        SiteKind::Texture,
        SiteKind::ReadOnly,
        SiteKind::Constant,
        SiteKind::Shared,
        SiteKind::Local,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SiteKind::Global => "global",
            SiteKind::Texture => "texture",
            SiteKind::ReadOnly => "readonly",
            SiteKind::Constant => "constant",
            SiteKind::Shared => "shared",
            SiteKind::Local => "local",
        }
    }

    /// The log's region. The log knows four regions; shared and local memory are writable like
    /// global memory, so they are recorded as `Global` (the site's name says which it was).
    pub fn region(self) -> Region {
        match self {
            SiteKind::Global | SiteKind::Shared | SiteKind::Local => Region::Global,
            SiteKind::Texture => Region::Texture,
            SiteKind::ReadOnly => Region::ReadOnly,
            SiteKind::Constant => Region::Constant,
        }
    }

    /// The closing construct a site gets: `Auto` is the header's choice (fence for writable
    /// memory, dummy for read-only memory).
    pub fn method(self, mode: ProbeMode) -> ProbeMode {
        match mode {
            ProbeMode::Auto if self.region().is_writable() => ProbeMode::Fence,
            ProbeMode::Auto => ProbeMode::Dummy,
            m => m,
        }
    }
}

impl fmt::Display for SiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of load to instrument (`--sites global,texture`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSet(pub Vec<SiteKind>);

impl Default for SiteSet {
    /// Global, texture, read-only and constant loads: the accesses whose latency varies. Shared
    /// and local loads are opt-in (they are many and their latency is fixed).
    fn default() -> Self {
        SiteSet(vec![
            SiteKind::Global,
            SiteKind::Texture,
            SiteKind::ReadOnly,
            SiteKind::Constant,
        ])
    }
}

impl SiteSet {
    pub fn contains(&self, k: SiteKind) -> bool {
        self.0.contains(&k)
    }
}

impl FromStr for SiteSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut kinds = Vec::new();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let k = SiteKind::ALL
                .into_iter()
                .find(|k| k.name() == w)
                .ok_or_else(|| {
                    format!(
                        "unknown site kind {w:?}; expected global, texture, readonly, constant, shared or local"
                    )
                })?;
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        if kinds.is_empty() {
            return Err("--sites names no kind of load".into());
        }
        Ok(SiteSet(kinds))
    }
}

/// One PTX instruction line, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instr<'a> {
    pub indent: &'a str,
    /// The guard without `@` (`%p1` or `!%p1`).
    pub guard: Option<&'a str>,
    pub opcode: &'a str,
    /// Operands up to the `;`.
    pub operands: &'a str,
}

impl Instr<'_> {
    /// The line without its guard.
    pub fn unguarded(&self) -> String {
        format!("{}{}\t{};", self.indent, self.opcode, self.operands)
    }

    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }
}

/// Splits an instruction line; `None` for directives, labels, braces, comments and blank lines.
pub fn instr(line: &str) -> Option<Instr<'_>> {
    let code = line.split("//").next().unwrap_or("");
    let trimmed = code.trim_start();
    let indent = &code[..code.len() - trimmed.len()];
    let body = trimmed.trim_end();
    let body = body.strip_suffix(';')?;
    if body.starts_with('.') || body.starts_with('{') || body.starts_with('}') {
        return None;
    }
    let (guard, rest) = match body.strip_prefix('@') {
        Some(g) => {
            let end = g.find(char::is_whitespace)?;
            (Some(&g[..end]), g[end..].trim_start())
        }
        None => (None, body),
    };
    let (opcode, operands) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    if opcode.is_empty() || opcode.ends_with(':') {
        return None;
    }
    Some(Instr {
        indent,
        guard,
        opcode,
        operands,
    })
}

/// What memory a load reads, or `None` when the instruction is no load warpscope can time.
pub fn load_kind(i: &Instr<'_>) -> Option<SiteKind> {
    let mut parts = i.opcode.split('.');
    match parts.next()? {
        "tex" | "tld4" => Some(SiteKind::Texture),
        "ldu" => Some(SiteKind::ReadOnly),
        "ld" => {
            let q: Vec<&str> = parts.collect();
            let has = |p: &str| q.iter().any(|w| w.starts_with(p));
            if has("param") {
                None
            } else if has("global") {
                Some(if q.contains(&"nc") {
                    SiteKind::ReadOnly
                } else {
                    SiteKind::Global
                })
            } else if has("const") {
                Some(SiteKind::Constant)
            } else if has("shared") {
                Some(SiteKind::Shared)
            } else if has("local") {
                Some(SiteKind::Local)
            } else {
                // A generic address may point anywhere; treated as writable global memory.
                Some(SiteKind::Global)
            }
        }
        _ => None,
    }
}

/// The registers an instruction writes: its first operand (`%f1` or `{%f1, %f2}`; `_` sinks and
/// a `|%p` predicate output left out).
pub fn destinations<'a>(i: &Instr<'a>) -> Vec<&'a str> {
    let ops = i.operands;
    let first = if let Some(rest) = ops.strip_prefix('{') {
        rest.split('}').next().unwrap_or("")
    } else {
        ops.split(',').next().unwrap_or("")
    };
    first
        .split(',')
        .map(|r| r.split('|').next().unwrap_or("").trim())
        .filter(|r| r.starts_with('%'))
        .collect()
}

/// Register types from `.reg` declarations: `%f` → `f32` for `.reg .f32 %f<3>;`, and `%x` → its
/// type for `.reg .b16 %x;`.
#[derive(Debug, Default, Clone)]
pub struct RegTypes(HashMap<String, String>);

impl RegTypes {
    /// Reads a `.reg` declaration line (other lines are ignored).
    pub fn declare(&mut self, line: &str) {
        let code = line.split("//").next().unwrap_or("").trim();
        let Some(rest) = code.strip_prefix(".reg") else {
            return;
        };
        let mut words = rest.split_whitespace();
        let Some(ty) = words.next().and_then(|t| t.strip_prefix('.')) else {
            return;
        };
        let names: String = words.collect::<Vec<_>>().join(" ");
        for n in names.trim_end_matches(';').split(',') {
            let n = n.trim();
            let base = n.split('<').next().unwrap_or(n);
            if !base.is_empty() {
                self.0.insert(base.to_string(), ty.to_string());
            }
        }
    }

    /// The bit width of register `reg` (`%f12` → 32), from its declaration.
    pub fn bits(&self, reg: &str) -> Option<u32> {
        let ty = self.0.get(reg).or_else(|| {
            let base = reg.trim_end_matches(|c: char| c.is_ascii_digit());
            self.0.get(base)
        })?;
        if ty.ends_with("x2") {
            return Some(32);
        }
        ty.trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .ok()
            .or_else(|| (ty == "pred").then_some(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_guarded_vector_loads() {
        let i = instr("\t@!%p3 ld.global.v2.f32 \t{%f1, %f2}, [%rd4+8]; // x").unwrap();
        assert_eq!(i.guard, Some("!%p3"));
        assert_eq!(i.opcode, "ld.global.v2.f32");
        assert_eq!(destinations(&i), vec!["%f1", "%f2"]);
        assert_eq!(load_kind(&i), Some(SiteKind::Global));
        assert_eq!(i.unguarded(), "\tld.global.v2.f32\t{%f1, %f2}, [%rd4+8];");
        assert!(instr("$L__BB0_2:").is_none());
        assert!(instr("\t.reg .b32 %r<4>;").is_none());
    }

    #[test]
    fn classifies_every_kind_of_load() {
        let k = |l: &str| load_kind(&instr(l).unwrap());
        assert_eq!(k("ld.global.nc.f32 %f1, [%rd1];"), Some(SiteKind::ReadOnly));
        assert_eq!(k("ld.const.u32 %r1, [c];"), Some(SiteKind::Constant));
        assert_eq!(k("ld.shared.u32 %r1, [%r2];"), Some(SiteKind::Shared));
        assert_eq!(k("ld.local.u32 %r1, [%rd2];"), Some(SiteKind::Local));
        assert_eq!(k("ld.u32 %r1, [%rd2];"), Some(SiteKind::Global));
        assert_eq!(k("ld.param.u64 %rd1, [k_param_0];"), None);
        assert_eq!(
            k("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];"),
            Some(SiteKind::Texture)
        );
        assert_eq!(k("st.global.u32 [%rd1], %r1;"), None);
    }

    #[test]
    fn register_widths_and_site_sets() {
        let mut t = RegTypes::default();
        t.declare("\t.reg .f32 \t%f<3>;");
        t.declare("\t.reg .b16 \t%rs<9>;");
        t.declare("\t.reg .f64 %fd1, %fd2;");
        assert_eq!(t.bits("%f2"), Some(32));
        assert_eq!(t.bits("%rs8"), Some(16));
        assert_eq!(t.bits("%fd2"), Some(64));
        assert_eq!(t.bits("%q1"), None);
        "k".parse::<SiteSet>().unwrap_err();
        assert_eq!(
            "texture,global".parse::<SiteSet>().unwrap().0,
            vec![SiteKind::Texture, SiteKind::Global]
        );
    }
}
