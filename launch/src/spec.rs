//! The launch spec (TOML): its validation (errors name the file and the field), and the buffers
//! and launches it describes.
//!
//! One launch: [`SPEC_EXAMPLE`]. Every key is documented on the types below (and in
//! `docs/reference/launch-spec.md`, generated from them).
//!
//! Pointer arguments besides a new buffer: `buffer = "@input"` passes a buffer defined by an
//! earlier arg again (in-place algorithms), `offset = N` (elements) or `offset_bytes = N` points
//! into it (`d_data + 256`), and `null = true` passes a NULL pointer.
//!
//! Several kernels in order (a pipeline): top-level `source` (default for every launch), then
//! `[[launch]]` entries with their own `kernel`, `grid`, `block`, `shared_bytes`, `source` and
//! `[[launch.arg]]`s. Buffers are shared by name across launches; `output` files are written
//! once after the last launch, and `write = ["name"]` in a launch also writes those buffers as
//! they are after it (`NAME.after-N.npy`, N counting launches from 1).

use crate::error::{Context, LaunchError, Result, invalid};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A probed launch of one kernel, as a spec (the reference page shows it; a test loads it).
pub const SPEC_EXAMPLE: &str = r#"source = "kernel.ptx"        # .ptx, or .cu compiled with the project's nvcc; relative to this file
kernel = "histogram"         # entry name (mangled or extern "C")
grid = [64, 1, 1]
block = [256, 1, 1]
shared_bytes = 0             # dynamic shared memory

[[arg]]
name = "input"
buffer = "u32"               # u8 i8 u16 i16 u32 i32 u64 i64 f32 f64
len = 1024                   # or: from = "input.npy"
fill = "random:7"            # zeros | iota | random:SEED

[[arg]]
name = "bins"
buffer = "u32"
len = 256
output = "bins.npy"          # written after the launch

[[arg]]
name = "n"
scalar = "i32"
value = 1024

[[arg]]
name = "log"                 # the kernel's ws::Log parameter: run with probes
log = true

[[site]]
id = 0
name = "input[i]"
region = "global"
"#;

/// A launch spec: one kernel launch (`kernel`, `grid`, `block` and `[[arg]]`s at the top level)
/// or a pipeline of launches (`[[launch]]` entries), sharing buffers by name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    /// The kernel's code: a `.ptx`, or a `.cu` compiled with the project's nvcc; relative to
    /// the spec's folder. In a pipeline, the default of every `[[launch]]`.
    source: Option<PathBuf>,
    /// The kernel's entry name (mangled, or `extern "C"`). One launch only.
    kernel: Option<String>,
    /// Blocks in the grid, `[x, y, z]`. One launch only.
    grid: Option<[u32; 3]>,
    /// Threads per block, `[x, y, z]`. One launch only.
    block: Option<[u32; 3]>,
    /// Dynamic shared memory per block, in bytes (default 0). One launch only.
    shared_bytes: Option<u32>,
    /// Registers per thread for the emulator's occupancy (default: ptxas's count for .cu, 32 for .ptx).
    regs_per_thread: Option<u32>,
    /// Records each traced warp can keep in a probed kernel (default 1024).
    slots_per_warp: Option<u32>,
    /// The kernel's parameters, in order. One launch only.
    #[serde(default, rename = "arg")]
    args: Vec<ArgSpec>,
    /// The launches of a pipeline, in order.
    #[serde(default, rename = "launch")]
    launches: Vec<LaunchEntry>,
    /// Names of the probes' load sites (otherwise a site is `site N`).
    #[serde(default, rename = "site")]
    sites: Vec<SiteSpec>,
}

/// One launch of a pipeline (`[[launch]]`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LaunchEntry {
    /// The kernel's code (default: the top-level `source`).
    source: Option<PathBuf>,
    /// The kernel's entry name (mangled, or `extern "C"`).
    kernel: String,
    /// Blocks in the grid, `[x, y, z]`.
    grid: [u32; 3],
    /// Threads per block, `[x, y, z]`.
    block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    #[serde(default)]
    shared_bytes: u32,
    /// Registers per thread for the emulator's occupancy (default: the top-level value).
    regs_per_thread: Option<u32>,
    /// The kernel's parameters, in order (`[[launch.arg]]`).
    #[serde(default, rename = "arg")]
    args: Vec<ArgSpec>,
    /// Buffers written after this launch, as `NAME.after-N.npy` (N counts launches from 1).
    #[serde(default)]
    write: Vec<String>,
}

/// One kernel parameter (`[[arg]]`): exactly one of `buffer`, `scalar`, `null` or `log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgSpec {
    /// The parameter's name; a new buffer is known by it to later args and launches.
    pub name: String,
    /// A new device buffer of this element type (`u8` `i8` `u16` `i16` `u32` `i32` `u64` `i64`
    /// `f32` `f64`), filled from `from` or by `len` and `fill`; or `"@NAME"`, a buffer an
    /// earlier arg defined, passed again.
    pub buffer: Option<String>,
    /// A scalar parameter of this type (the types of `buffer`), with `value`.
    pub scalar: Option<String>,
    /// `true`: the probes' log (`ws::Log`) goes here; the kernel is run with probes.
    pub log: Option<bool>,
    /// `true`: a NULL pointer.
    pub null: Option<bool>,
    /// A `.npy` file that fills the new buffer (relative to the spec's folder).
    pub from: Option<PathBuf>,
    /// Elements of a new buffer not read from a file.
    pub len: Option<u64>,
    /// How a `len` buffer is filled: `zeros` (the default), `iota` (0, 1, 2, …) or
    /// `random:SEED` (the same values on every machine; floats in [0, 1)).
    pub fill: Option<String>,
    /// Where the buffer is written after the last launch, as `.npy` (relative to the output
    /// folder).
    pub output: Option<PathBuf>,
    /// Points this many elements into the buffer (`d_data + 256`).
    pub offset: Option<u64>,
    /// Points this many bytes into the buffer; instead of `offset`.
    pub offset_bytes: Option<u64>,
    /// A scalar's value: a number that fits its type.
    #[schemars(with = "Option<f64>")]
    pub value: Option<toml::Value>,
}

/// A name for one of the probes' load sites (`[[site]]`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteSpec {
    /// The site's id (the first argument of `WS_LOAD`).
    pub id: u16,
    /// Its name in the trace and the exports (`p[i]`, a source line).
    pub name: String,
    /// The memory it reads: `global`, `texture`, `constant` or `readonly`.
    #[serde(default = "default_region")]
    pub region: String,
}

fn default_region() -> String {
    "global".into()
}

/// The launch spec's JSON Schema: every key, its type and meaning, from the types a spec is read
/// through (the reference page `docs/reference/launch-spec.md` is rendered from it).
pub fn schema() -> schemars::schema::RootSchema {
    schemars::schema_for!(SpecFile)
}

/// A validated spec: the buffers, then the launches in order.
#[derive(Debug, Clone)]
pub struct Spec {
    pub buffers: Vec<BufferPlan>,
    pub launches: Vec<LaunchPlan>,
    pub slots_per_warp: Option<u32>,
    pub sites: Vec<SiteSpec>,
}

/// A device buffer, created and filled before the first launch.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferPlan {
    pub name: String,
    pub elem: Elem,
    pub data: Vec<u8>,
    /// The `.npy` it was read from (`from = FILE`), which no output may overwrite.
    pub input: Option<PathBuf>,
    /// Written after the last launch.
    pub output: Option<PathBuf>,
}

/// One kernel launch.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchPlan {
    pub source: PathBuf,
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub regs_per_thread: Option<u32>,
    pub args: Vec<ArgPlan>,
    /// Indices into `Spec::buffers` written after this launch.
    pub write: Vec<usize>,
}

impl LaunchPlan {
    pub fn is_probed(&self) -> bool {
        self.args.contains(&ArgPlan::Log)
    }
}

/// A validated argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgPlan {
    /// The address of `Spec::buffers[buffer]` plus `offset_bytes`.
    Buffer {
        buffer: usize,
        offset_bytes: u64,
    },
    Scalar {
        name: String,
        bytes: Vec<u8>,
    },
    /// A NULL pointer.
    Null,
    Log,
}

impl ArgPlan {
    /// Bytes the kernel parameter must have.
    pub fn size_bytes(&self) -> u64 {
        match self {
            ArgPlan::Buffer { .. } | ArgPlan::Null => 8,
            ArgPlan::Scalar { bytes, .. } => bytes.len() as u64,
            ArgPlan::Log => u64::from(kernels::layout::WS_LOG_ARG_BYTES),
        }
    }
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

/// Reads and validates a spec. `source` paths are relative to the spec's folder, `from` paths
/// to `from_dir` when given (a pipeline of several specs reading each other's outputs), else
/// to the spec's folder too.
pub fn load(path: &Path, from_dir: Option<&Path>) -> Result<Spec> {
    let text = std::fs::read_to_string(path).map_err(|source| LaunchError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file: SpecFile = toml::from_str(&text).map_err(|source| LaunchError::Toml {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let spec_name = path.display().to_string();
    let mut b = Builder {
        spec: &spec_name,
        from_base: from_dir.unwrap_or(base),
        buffers: Vec::new(),
        by_name: HashMap::new(),
    };
    let default_source = file.source.as_ref().map(|s| base.join(s));
    let mut launches = Vec::new();
    if file.launches.is_empty() {
        let missing =
            |f: &str| format!("{spec_name}: missing field `{f}` (or give [[launch]] entries)");
        let entry = LaunchEntry {
            source: None,
            kernel: file.kernel.with_context(|| missing("kernel"))?,
            grid: file.grid.with_context(|| missing("grid"))?,
            block: file.block.with_context(|| missing("block"))?,
            shared_bytes: file.shared_bytes.unwrap_or(0),
            regs_per_thread: None,
            args: file.args,
            write: Vec::new(),
        };
        launches.push(b.launch(entry, "", default_source.as_ref(), file.regs_per_thread)?);
    } else {
        let one_launch_fields = [
            ("kernel", file.kernel.is_some()),
            ("grid", file.grid.is_some()),
            ("block", file.block.is_some()),
            ("shared_bytes", file.shared_bytes.is_some()),
            ("arg", !file.args.is_empty()),
        ];
        if let Some((f, _)) = one_launch_fields.iter().find(|(_, given)| *given) {
            invalid!(
                "{spec_name}: `{f}` belongs in each [[launch]] when the spec has [[launch]] entries"
            );
        }
        for (j, entry) in file.launches.into_iter().enumerate() {
            let source = entry.source.as_ref().map(|s| base.join(s));
            let source = source.or(default_source.clone());
            let plan = b.launch(
                entry,
                &format!("launch[{j}]."),
                source.as_ref(),
                file.regs_per_thread,
            )?;
            launches.push(plan);
        }
    }
    let probed = launches.iter().filter(|l| l.is_probed()).count();
    if probed > 1 {
        invalid!("{spec_name}: {probed} launches have a log = true arg; a spec can probe one");
    }
    Ok(Spec {
        buffers: b.buffers,
        launches,
        slots_per_warp: file.slots_per_warp,
        sites: file.sites,
    })
}

/// Validation state: the buffers defined so far, by name.
struct Builder<'a> {
    spec: &'a str,
    from_base: &'a Path,
    buffers: Vec<BufferPlan>,
    by_name: HashMap<String, usize>,
}

impl Builder<'_> {
    fn launch(
        &mut self,
        e: LaunchEntry,
        prefix: &str,
        source: Option<&PathBuf>,
        default_regs: Option<u32>,
    ) -> Result<LaunchPlan> {
        let spec = self.spec;
        let source = source
            .cloned()
            .with_context(|| format!("{spec}: {prefix}source: no source given"))?;
        for (i, d) in e.grid.iter().chain(e.block.iter()).enumerate() {
            if *d == 0 {
                let field = if i < 3 { "grid" } else { "block" };
                invalid!("{spec}: {prefix}{field}[{}] must be at least 1", i % 3);
            }
        }
        let threads: u64 = e.block.iter().map(|&d| d as u64).product();
        if threads > 1024 {
            invalid!("{spec}: {prefix}block has {threads} threads; CUDA allows at most 1024");
        }
        let mut args = Vec::with_capacity(e.args.len());
        for (i, a) in e.args.iter().enumerate() {
            let field = format!("{spec}: {prefix}arg[{i}] ({:?})", a.name);
            args.push(self.arg(a, &field)?);
        }
        if args.iter().filter(|p| matches!(p, ArgPlan::Log)).count() > 1 {
            invalid!("{spec}: {prefix}more than one arg has log = true");
        }
        let write = e
            .write
            .iter()
            .map(|n| {
                self.by_name.get(n).copied().with_context(|| {
                    format!("{spec}: {prefix}write: no buffer named {n:?} is defined by this launch or an earlier one")
                })
            })
            .collect::<Result<_>>()?;
        Ok(LaunchPlan {
            source,
            kernel: e.kernel,
            grid: e.grid,
            block: e.block,
            shared_bytes: e.shared_bytes,
            regs_per_thread: e.regs_per_thread.or(default_regs),
            args,
            write,
        })
    }

    fn arg(&mut self, a: &ArgSpec, field: &str) -> Result<ArgPlan> {
        let kinds = [
            a.buffer.is_some(),
            a.scalar.is_some(),
            a.log == Some(true),
            a.null == Some(true),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            invalid!(
                "{field}: give exactly one of buffer = TYPE (or \"@name\"), scalar = TYPE, null = true or log = true"
            );
        }
        let pointer_only = [
            ("offset", a.offset.is_some()),
            ("offset_bytes", a.offset_bytes.is_some()),
        ];
        if a.buffer.is_none()
            && let Some((f, _)) = pointer_only.iter().find(|(_, given)| *given)
        {
            invalid!("{field}.{f}: only for a buffer argument");
        }
        if a.log == Some(true) {
            return Ok(ArgPlan::Log);
        }
        if a.null == Some(true) {
            return Ok(ArgPlan::Null);
        }
        if let Some(t) = &a.scalar {
            return plan_scalar(a, t, field);
        }
        let t = a.buffer.as_deref().unwrap_or_default();
        let buffer = match t.strip_prefix('@') {
            Some(name) => {
                let data_fields = [
                    ("from", a.from.is_some()),
                    ("len", a.len.is_some()),
                    ("fill", a.fill.is_some()),
                    ("output", a.output.is_some()),
                ];
                if let Some((f, _)) = data_fields.iter().find(|(_, given)| *given) {
                    invalid!("{field}.{f}: belongs on the arg that defines buffer {name:?}");
                }
                self.by_name.get(name).copied().with_context(|| {
                    format!("{field}.buffer: no buffer named {name:?} is defined before this arg")
                })?
            }
            None => {
                if self.by_name.contains_key(&a.name) {
                    invalid!(
                        "{field}.name: a buffer named {:?} is already defined; pass it again with buffer = \"@{}\"",
                        a.name,
                        a.name
                    );
                }
                let plan = self.new_buffer(a, t, field)?;
                self.by_name.insert(a.name.clone(), self.buffers.len());
                self.buffers.push(plan);
                self.buffers.len() - 1
            }
        };
        let b = &self.buffers[buffer];
        let offset_bytes = match (a.offset, a.offset_bytes) {
            (Some(_), Some(_)) => {
                invalid!("{field}: give offset (elements) or offset_bytes, not both")
            }
            (Some(n), None) => n
                .checked_mul(b.elem.bytes() as u64)
                .with_context(|| format!("{field}.offset: {n} elements is too large"))?,
            (None, Some(n)) => n,
            (None, None) => 0,
        };
        let len = b.data.len() as u64;
        if offset_bytes > len {
            invalid!(
                "{field}: offset of {offset_bytes} bytes is past the end of buffer {:?} ({len} bytes)",
                b.name
            );
        }
        Ok(ArgPlan::Buffer {
            buffer,
            offset_bytes,
        })
    }

    fn new_buffer(&self, a: &ArgSpec, t: &str, field: &str) -> Result<BufferPlan> {
        let elem = Elem::parse(t).with_context(|| {
            format!(
                "{field}.buffer: unknown type {t:?}; expected u8 i8 u16 i16 u32 i32 u64 i64 f32 f64, or @name"
            )
        })?;
        let input = a.from.as_ref().map(|file| self.from_base.join(file));
        let data = match (&input, a.len) {
            (Some(_), Some(_)) => invalid!("{field}: give either from = FILE or len = N, not both"),
            (Some(file), None) => {
                if a.fill.is_some() {
                    invalid!("{field}.fill: only with len = N");
                }
                read_npy(file, elem).with_context(|| format!("{field}.from"))?
            }
            (None, Some(len)) => fill(elem, len, a.fill.as_deref().unwrap_or("zeros"))
                .with_context(|| format!("{field}.fill"))?,
            (None, None) => invalid!("{field}: a buffer needs from = FILE.npy or len = N"),
        };
        Ok(BufferPlan {
            name: a.name.clone(),
            elem,
            data,
            input,
            output: a.output.clone(),
        })
    }
}

fn plan_scalar(a: &ArgSpec, t: &str, field: &str) -> Result<ArgPlan> {
    let elem = Elem::parse(t).with_context(|| {
        format!(
            "{field}.scalar: unknown type {t:?}; expected u8 i8 u16 i16 u32 i32 u64 i64 f32 f64"
        )
    })?;
    let v = match &a.value {
        Some(toml::Value::Integer(i)) => *i as f64,
        Some(toml::Value::Float(f)) => *f,
        Some(other) => invalid!("{field}.value: expected a number, got {other}"),
        None => invalid!("{field}.value: a scalar needs a value"),
    };
    let bytes = elem
        .encode(v)
        .with_context(|| format!("{field}.value: {v} does not fit {t}"))?;
    Ok(ArgPlan::Scalar {
        name: a.name.clone(),
        bytes,
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
    let Ok(n) = usize::try_from(len) else {
        invalid!("len {len} is too large for this host")
    };
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

    #[test]
    fn the_example_spec_loads_as_one_probed_launch() {
        let dir = tempfile::tempdir().unwrap();
        let spec = load(&write_spec(dir.path(), SPEC_EXAMPLE), None).unwrap();
        assert_eq!(spec.launches.len(), 1);
        assert!(spec.launches[0].is_probed());
        assert_eq!(spec.buffers.len(), 2);
        assert_eq!(spec.sites[0].name, "input[i]");
    }

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
            let e = trace::error_chain(&load(&write_spec(dir.path(), &text), None).unwrap_err());
            assert!(e.contains(want), "error {e:?} should name {want:?}");
        }
    }

    fn spec_text(body: &str) -> String {
        format!("source = \"k.ptx\"\n{body}")
    }

    #[test]
    fn pipelines_share_buffers_by_name_with_offsets_and_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let text = spec_text(
            "[[launch]]\nkernel = \"a\"\ngrid = [2,1,1]\nblock = [32,1,1]\n\
             [[launch.arg]]\nname = \"data\"\nbuffer = \"f32\"\nlen = 1024\noutput = \"data.npy\"\n\
             [[launch.arg]]\nname = \"tail\"\nbuffer = \"@data\"\noffset = 256\n\
             [[launch.arg]]\nname = \"none\"\nnull = true\n\
             [[launch]]\nkernel = \"b\"\ngrid = [1,1,1]\nblock = [64,1,1]\nwrite = [\"data\"]\n\
             [[launch.arg]]\nname = \"in\"\nbuffer = \"@data\"\n\
             [[launch.arg]]\nname = \"out\"\nbuffer = \"@data\"\noffset_bytes = 4\n",
        );
        let spec = load(&write_spec(dir.path(), &text), None).unwrap();
        assert_eq!(spec.buffers.len(), 1, "one buffer, passed four times");
        assert_eq!(spec.buffers[0].data.len(), 4096);
        assert_eq!(spec.launches.len(), 2);
        let (a, b) = (&spec.launches[0], &spec.launches[1]);
        assert_eq!(a.source, dir.path().join("k.ptx"));
        assert_eq!(
            a.args,
            [
                ArgPlan::Buffer {
                    buffer: 0,
                    offset_bytes: 0
                },
                ArgPlan::Buffer {
                    buffer: 0,
                    offset_bytes: 1024
                },
                ArgPlan::Null,
            ]
        );
        assert_eq!(
            b.args[1],
            ArgPlan::Buffer {
                buffer: 0,
                offset_bytes: 4
            }
        );
        assert_eq!((b.kernel.as_str(), b.block), ("b", [64, 1, 1]));
        assert_eq!(b.write, [0]);
    }

    #[test]
    fn pipeline_mistakes_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let launch = "[[launch]]\nkernel = \"a\"\ngrid = [1,1,1]\nblock = [32,1,1]\n";
        let def = "[[launch.arg]]\nname = \"d\"\nbuffer = \"u32\"\nlen = 8\n";
        let cases = [
            (
                format!("{launch}[[launch.arg]]\nname = \"x\"\nbuffer = \"@d\"\n"),
                "launch[0].arg[0] (\"x\").buffer",
            ),
            (
                format!("{launch}{def}[[launch.arg]]\nname = \"x\"\nbuffer = \"@d\"\noffset = 9\n"),
                "launch[0].arg[1] (\"x\"): offset of 36 bytes",
            ),
            (
                format!("{launch}{def}[[launch.arg]]\nname = \"x\"\nbuffer = \"@d\"\nlen = 3\n"),
                "launch[0].arg[1] (\"x\").len",
            ),
            (
                format!("{launch}{def}{def}"),
                "launch[0].arg[1] (\"d\").name",
            ),
            (
                format!(
                    "{launch}[[launch.arg]]\nname = \"x\"\nscalar = \"u32\"\nvalue = 1\noffset = 2\n"
                ),
                "launch[0].arg[0] (\"x\").offset",
            ),
            (format!("{launch}write = [\"zz\"]\n"), "launch[0].write"),
            (
                format!("kernel = \"k\"\n{launch}"),
                "`kernel` belongs in each [[launch]]",
            ),
            (
                format!(
                    "{launch}[[launch.arg]]\nname = \"l\"\nlog = true\n{launch}[[launch.arg]]\nname = \"l\"\nlog = true\n"
                ),
                "can probe one",
            ),
        ];
        for (body, want) in cases {
            let e = trace::error_chain(
                &load(&write_spec(dir.path(), &spec_text(&body)), None).unwrap_err(),
            );
            assert!(e.contains(want), "error {e:?} should contain {want:?}");
        }
    }

    #[test]
    fn from_paths_follow_from_dir() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        write_npy(&data.join("x.npy"), Elem::U8, &[1, 2, 3]).unwrap();
        let text = "source = \"k.ptx\"\nkernel = \"k\"\ngrid = [1,1,1]\nblock = [32,1,1]\n[[arg]]\nname = \"x\"\nbuffer = \"u8\"\nfrom = \"x.npy\"\n";
        let path = write_spec(dir.path(), text);
        assert!(load(&path, None).is_err(), "x.npy is not beside the spec");
        let spec = load(&path, Some(&data)).unwrap();
        assert_eq!(spec.buffers[0].data, [1, 2, 3]);
        assert_eq!(spec.launches[0].source, dir.path().join("k.ptx"));
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
