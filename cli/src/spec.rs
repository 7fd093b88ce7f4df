//! `warpscope launch SPEC.toml`: the launch spec, its validation (errors name the field), and
//! the buffers it describes.
//!
//! ```toml
//! source = "kernel.ptx"        # .ptx, or .cu compiled with the project's nvcc; relative to this file
//! kernel = "histogram"         # entry name (mangled or extern "C")
//! grid = [64, 1, 1]
//! block = [256, 1, 1]
//! shared_bytes = 0             # dynamic shared memory
//! [[arg]]
//! name = "input"
//! buffer = "u32"               # u8 i8 u16 i16 u32 i32 u64 i64 f32 f64
//! from = "input.npy"           # or: len = 1024 with fill = "zeros" | "iota" | "random:SEED"
//! [[arg]]
//! name = "n"
//! scalar = "i32"
//! value = 1000000
//! ```
//! A `ws::Log` parameter is `[[arg]] name = "log"  log = true`; its sites may be named with
//! `[[site]] id = 0  name = "p[i]"  region = "global"` (otherwise sites are "site N").

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpec {
    pub source: PathBuf,
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    #[serde(default)]
    pub shared_bytes: u32,
    /// Registers per thread for the emulator's occupancy (default: ptxas's count for .cu, 32 for .ptx).
    pub regs_per_thread: Option<u32>,
    /// Records per warp for a probed kernel (default 1024).
    pub slots_per_warp: Option<u32>,
    #[serde(default, rename = "arg")]
    pub args: Vec<ArgSpec>,
    #[serde(default, rename = "site")]
    pub sites: Vec<SiteSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgSpec {
    pub name: String,
    pub buffer: Option<String>,
    pub scalar: Option<String>,
    pub log: Option<bool>,
    pub from: Option<PathBuf>,
    pub len: Option<u64>,
    pub fill: Option<String>,
    pub output: Option<PathBuf>,
    pub value: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteSpec {
    pub id: u16,
    pub name: String,
    #[serde(default = "default_region")]
    pub region: String,
}

fn default_region() -> String {
    "global".into()
}

/// Element types of buffers and scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl Elem {
    pub fn parse(s: &str) -> Option<Elem> {
        Some(match s {
            "u8" => Elem::U8,
            "i8" => Elem::I8,
            "u16" => Elem::U16,
            "i16" => Elem::I16,
            "u32" => Elem::U32,
            "i32" => Elem::I32,
            "u64" => Elem::U64,
            "i64" => Elem::I64,
            "f32" => Elem::F32,
            "f64" => Elem::F64,
            _ => return None,
        })
    }

    pub fn bytes(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::U16 | Elem::I16 => 2,
            Elem::U32 | Elem::I32 | Elem::F32 => 4,
            Elem::U64 | Elem::I64 | Elem::F64 => 8,
        }
    }

    /// numpy's dtype string (little-endian).
    pub fn npy_descr(self) -> &'static str {
        match self {
            Elem::U8 => "|u1",
            Elem::I8 => "|i1",
            Elem::U16 => "<u2",
            Elem::I16 => "<i2",
            Elem::U32 => "<u4",
            Elem::I32 => "<i4",
            Elem::U64 => "<u8",
            Elem::I64 => "<i8",
            Elem::F32 => "<f4",
            Elem::F64 => "<f8",
        }
    }

    /// Little-endian bytes of `v` converted to this type (checked for integers).
    pub fn encode(self, v: f64) -> Option<Vec<u8>> {
        let int_ok = |lo: f64, hi: f64| v.fract() == 0.0 && v >= lo && v <= hi;
        Some(match self {
            Elem::U8 if int_ok(0.0, u8::MAX as f64) => vec![v as u8],
            Elem::I8 if int_ok(i8::MIN as f64, i8::MAX as f64) => (v as i8).to_le_bytes().to_vec(),
            Elem::U16 if int_ok(0.0, u16::MAX as f64) => (v as u16).to_le_bytes().to_vec(),
            Elem::I16 if int_ok(i16::MIN as f64, i16::MAX as f64) => {
                (v as i16).to_le_bytes().to_vec()
            }
            Elem::U32 if int_ok(0.0, u32::MAX as f64) => (v as u32).to_le_bytes().to_vec(),
            Elem::I32 if int_ok(i32::MIN as f64, i32::MAX as f64) => {
                (v as i32).to_le_bytes().to_vec()
            }
            Elem::U64 if int_ok(0.0, u64::MAX as f64) => (v as u64).to_le_bytes().to_vec(),
            Elem::I64 if int_ok(i64::MIN as f64, i64::MAX as f64) => {
                (v as i64).to_le_bytes().to_vec()
            }
            Elem::F32 => (v as f32).to_le_bytes().to_vec(),
            Elem::F64 => v.to_le_bytes().to_vec(),
            _ => return None,
        })
    }
}

/// A validated argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgPlan {
    Buffer {
        name: String,
        elem: Elem,
        data: Vec<u8>,
        output: Option<PathBuf>,
    },
    Scalar {
        name: String,
        bytes: Vec<u8>,
    },
    Log,
}

/// Reads and validates a spec; paths in it become relative to the spec's folder.
pub fn load(path: &Path) -> Result<(LaunchSpec, Vec<ArgPlan>)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read launch spec {}", path.display()))?;
    let mut spec: LaunchSpec =
        toml::from_str(&text).with_context(|| format!("launch spec {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    spec.source = base.join(&spec.source);
    for (i, d) in spec.grid.iter().chain(spec.block.iter()).enumerate() {
        if *d == 0 {
            let field = if i < 3 { "grid" } else { "block" };
            bail!("{}: {field}[{}] must be at least 1", path.display(), i % 3);
        }
    }
    let threads: u64 = spec.block.iter().map(|&d| d as u64).product();
    if threads > 1024 {
        bail!(
            "{}: block has {threads} threads; CUDA allows at most 1024",
            path.display()
        );
    }
    let mut plans = Vec::with_capacity(spec.args.len());
    for (i, a) in spec.args.iter_mut().enumerate() {
        let field = format!("{}: arg[{i}] ({:?})", path.display(), a.name);
        if let Some(f) = &a.from {
            a.from = Some(base.join(f));
        }
        if let Some(o) = &a.output {
            a.output = Some(o.clone());
        }
        plans.push(plan_arg(a, &field)?);
    }
    if plans.iter().filter(|p| matches!(p, ArgPlan::Log)).count() > 1 {
        bail!("{}: more than one arg has log = true", path.display());
    }
    Ok((spec, plans))
}

fn plan_arg(a: &ArgSpec, field: &str) -> Result<ArgPlan> {
    let kinds = [a.buffer.is_some(), a.scalar.is_some(), a.log == Some(true)];
    if kinds.iter().filter(|k| **k).count() != 1 {
        bail!("{field}: give exactly one of buffer = TYPE, scalar = TYPE or log = true");
    }
    if a.log == Some(true) {
        return Ok(ArgPlan::Log);
    }
    if let Some(t) = &a.scalar {
        let elem = Elem::parse(t).with_context(|| {
            format!(
                "{field}.scalar: unknown type {t:?}; expected u8 i8 u16 i16 u32 i32 u64 i64 f32 f64"
            )
        })?;
        let v = match &a.value {
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => bail!("{field}.value: expected a number, got {other}"),
            None => bail!("{field}.value: a scalar needs a value"),
        };
        let bytes = elem
            .encode(v)
            .with_context(|| format!("{field}.value: {v} does not fit {t}"))?;
        return Ok(ArgPlan::Scalar {
            name: a.name.clone(),
            bytes,
        });
    }
    let t = a.buffer.as_deref().unwrap_or_default();
    let elem = Elem::parse(t).with_context(|| {
        format!(
            "{field}.buffer: unknown type {t:?}; expected u8 i8 u16 i16 u32 i32 u64 i64 f32 f64"
        )
    })?;
    let data = match (&a.from, a.len) {
        (Some(_), Some(_)) => bail!("{field}: give either from = FILE or len = N, not both"),
        (Some(file), None) => {
            if a.fill.is_some() {
                bail!("{field}.fill: only with len = N");
            }
            read_npy(file, elem).with_context(|| format!("{field}.from"))?
        }
        (None, Some(len)) => fill(elem, len, a.fill.as_deref().unwrap_or("zeros"))
            .with_context(|| format!("{field}.fill"))?,
        (None, None) => bail!("{field}: a buffer needs from = FILE.npy or len = N"),
    };
    Ok(ArgPlan::Buffer {
        name: a.name.clone(),
        elem,
        data,
        output: a.output.clone(),
    })
}

/// SplitMix64: a tiny, well-known deterministic generator; `random:SEED` must give the same
/// bytes on every machine and version, which a general-purpose RNG crate does not promise.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fill(elem: Elem, len: u64, how: &str) -> Result<Vec<u8>> {
    let n = usize::try_from(len).context("len too large")?;
    let mut out = Vec::with_capacity(n * elem.bytes());
    match how {
        "zeros" => out.resize(n * elem.bytes(), 0),
        "iota" => {
            for i in 0..n {
                let v = elem
                    .encode(i as f64)
                    .with_context(|| format!("iota value {i} does not fit the element type"))?;
                out.extend_from_slice(&v);
            }
        }
        _ => {
            let seed: u64 = how
                .strip_prefix("random:")
                .and_then(|s| s.parse().ok())
                .with_context(|| {
                    format!("{how:?}: expected zeros, iota or random:SEED (SEED an integer)")
                })?;
            let mut state = seed;
            for _ in 0..n {
                let r = splitmix(&mut state);
                match elem {
                    // Floats uniform in [0, 1): 24 (53) random mantissa bits.
                    Elem::F32 => out
                        .extend_from_slice(&((r >> 40) as f32 / (1u64 << 24) as f32).to_le_bytes()),
                    Elem::F64 => out
                        .extend_from_slice(&((r >> 11) as f64 / (1u64 << 53) as f64).to_le_bytes()),
                    _ => out.extend_from_slice(&r.to_le_bytes()[..elem.bytes()]),
                }
            }
        }
    }
    Ok(out)
}

/// Reads a .npy buffer of `elem` (the reader, in the trace crate, checks every size).
fn read_npy(path: &Path, elem: Elem) -> Result<Vec<u8>> {
    Ok(trace::read_npy(path, elem.npy_descr(), elem.bytes())?)
}

/// Writes raw little-endian elements as a 1-D .npy file, atomically.
pub fn write_npy(path: &Path, elem: Elem, data: &[u8]) -> Result<()> {
    Ok(trace::write_npy(
        path,
        elem.npy_descr(),
        elem.bytes(),
        data,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_spec(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("spec.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn mistakes_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("grid = [0,1,1]", "grid[0]"),
            (
                "[[arg]]\nname = \"x\"\nbuffer = \"u33\"\nlen = 4",
                "arg[0] (\"x\").buffer",
            ),
            (
                "[[arg]]\nname = \"x\"\nscalar = \"u8\"\nvalue = 300",
                "arg[0] (\"x\").value",
            ),
            ("[[arg]]\nname = \"x\"\nbuffer = \"u8\"", "arg[0] (\"x\")"),
            (
                "[[arg]]\nname = \"x\"\nbuffer = \"u8\"\nlen = 4\nfill = \"rand\"",
                "arg[0] (\"x\").fill",
            ),
            ("colour = 1", "colour"),
        ];
        for (extra, want) in cases {
            let base = if extra.starts_with("grid") {
                ""
            } else {
                "grid = [1,1,1]\n"
            };
            let text =
                format!("source = \"k.ptx\"\nkernel = \"k\"\n{base}block = [32,1,1]\n{extra}\n");
            let e = format!("{:#}", load(&write_spec(dir.path(), &text)).unwrap_err());
            assert!(e.contains(want), "error {e:?} should name {want:?}");
        }
    }

    #[test]
    fn fills_are_deterministic_and_typed() {
        assert_eq!(fill(Elem::U16, 3, "iota").unwrap(), vec![0, 0, 1, 0, 2, 0]);
        let a = fill(Elem::F32, 100, "random:7").unwrap();
        assert_eq!(a, fill(Elem::F32, 100, "random:7").unwrap());
        assert_ne!(a, fill(Elem::F32, 100, "random:8").unwrap());
        for c in a.chunks(4) {
            let v = f32::from_le_bytes(c.try_into().unwrap());
            assert!((0.0..1.0).contains(&v));
        }
        assert!(
            fill(Elem::U8, 300, "iota").is_err(),
            "iota past 255 must not wrap silently"
        );
    }

    #[test]
    fn npy_round_trip_and_dtype_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let data: Vec<u8> = [1u32, 2, 0xdead_beef]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        write_npy(&p, Elem::U32, &data).unwrap();
        assert_eq!(read_npy(&p, Elem::U32).unwrap(), data);
        let e = read_npy(&p, Elem::F32).unwrap_err().to_string();
        assert!(e.contains("<u4"), "{e}");
        let back: Vec<u32> = npyz::NpyFile::new(&std::fs::read(&p).unwrap()[..])
            .unwrap()
            .into_vec()
            .unwrap();
        assert_eq!(back, vec![1, 2, 0xdead_beef]);
    }
}
