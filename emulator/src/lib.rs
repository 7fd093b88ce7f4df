//! warpscope's CPU emulator: runs the PTX that nvcc emits — our kernels and users' — on a
//! SIMT functional model driven by a GPU timing model, so `%clock` advances the way an SM's does
//! and every warpscope feature works without a GPU.
//!
//! Why: the paper's method (fence or dummy-use so the second `clock()` waits for the load) only
//! shows its effect if loads take time while independent instructions keep issuing. Functional
//! execution happens at issue inside a cycle-level scheduler with a per-warp scoreboard, so the
//! same engine produces both correct results and meaningful clocks.
//!
//! Main types: [`Module`] (parsed PTX), [`Emulator`] (device memory, modules, textures,
//! launches), [`LaunchParams`], [`LaunchStats`], [`TextureDesc`], [`GpuConfig`], [`EmuError`].
//!
//! Pipeline: `ptx` (lexer + recursive-descent parser, errors with line/column) → `decode`
//! (dense registers, resolved symbols, inlined `.func` calls, immediate-post-dominator
//! reconvergence points) → `engine` (SMs, occupancy-limited blocks, warp schedulers, scoreboard,
//! barriers, fences) calling `exec` (one warp instruction over 32 lanes, SIMT stack, memory,
//! `texture`) at issue and `memory` (caches, L2, DRAM) for the completion cycle of each access.
//!
//! Not supported (each is an `EmuError::Unsupported` or `Fault` naming the line, never a panic):
//! indirect calls and recursion, texture/surface references (`.texref`; texture *objects* are
//! supported), `tld4`, surfaces, `mbarrier`/`cp.async`, matrix instructions, mipmaps and layered
//! textures — [`coverage`] lists every instruction family nvcc emits and whether the decoder
//! runs it. `printf` prints nothing; `f64` `fma` with a directed rounding mode rounds to
//! nearest. Each launch starts with cold SM caches and the L2 the previous launch left. The
//! coverage-guided fuzz targets live in `emulator/fuzz` (own workspace: `cd emulator/fuzz &&
//! cargo +nightly fuzz run parse`).
//!
//! ```
//! use emulator::{Emulator, GpuConfig, LaunchParams, Module};
//! let ptx = r#"
//! .version 8.0
//! .target sm_75
//! .address_size 64
//! .visible .entry add1(.param .u64 p)
//! {
//!     .reg .b32 %r<3>;
//!     .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [p];
//!     mov.u32 %r1, %tid.x;
//!     mul.wide.u32 %rd2, %r1, 4;
//!     add.s64 %rd3, %rd1, %rd2;
//!     st.global.u32 [%rd3], %r1;
//!     ret;
//! }"#;
//! let module = Module::parse(ptx).unwrap();
//! let mut emu = Emulator::new(GpuConfig::preset("v100").unwrap());
//! let m = emu.load(&module).unwrap();
//! let buf = emu.alloc(128).unwrap();
//! let p = LaunchParams { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared_bytes: 0,
//!     regs_per_thread: 16, args: vec![buf.to_le_bytes().to_vec()], max_warp_instructions: 1_000 };
//! let stats = emu.launch(m, "add1", &p).unwrap();
//! let mut out = [0u8; 128];
//! emu.read(buf, &mut out).unwrap();
//! assert_eq!(u32::from_le_bytes(out[124..128].try_into().unwrap()), 31);
//! assert!(stats.cycles > 0);
//! ```

mod api;
mod bits;
mod config;
mod coverage;
mod decode;
mod devmem;
mod engine;
mod error;
mod exec;
mod hostcpu;
mod ir;
mod memory;
mod numeric;
mod occupancy;
mod ptx;
mod reconverge;
mod regalloc;
mod schedule;
mod slots;
mod texture;
mod vocab;
mod watch;

pub use api::{Emulator, LaunchParams, LaunchStats, Module, ModuleId, check_launch_dims};
pub use config::*;
pub use coverage::{CoverageRow, coverage, coverage_markdown};
pub use engine::{LoadEvent, LoadSpace, LoadWarps};
pub use error::EmuError;
pub use ir::{EntrySignature, ParamDecl};
pub use memory::{AddressEvent, AddressKind, CacheCounters, MemCounters};
pub use occupancy::{Limiter, Occupancy, OccupancyError, fit_registers, occupancy};
pub use texture::{TexAddress, TexFilter, TexFormat, TextureDesc};
pub use watch::{Progress, ProgressFn, WATCH_INTERVAL, Watch};
