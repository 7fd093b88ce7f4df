//! A program's device code by kernel: which PTX targets and SASS archs carry each kernel, and
//! which PTX to instrument for a given device.
//!
//! Built from fatbin images (an ELF file's, [`Program::from_elf`], or those a process loads),
//! each with its [`Linkage`]. PTX entries are decompressed and scanned for `.entry` kernels,
//! cubins for kernel symbols; NVVM IR and unknown kinds are not read (nvcc only makes them on
//! request, `code=lto_XX`, and they cannot be instrumented).
//!
//! The choice ([`Program::ptx_for`]): among the PTX modules that declare the kernel and that a
//! device of arch N can JIT-compile ([`Arch::ptx_runs_on`]), the highest target number; at
//! equal numbers a loadable module before a relocatable one, then the more specific suffix
//! (`a`, `f`, none); then the first in image order. When there is none, the reason names the
//! nvcc flags that would embed PTX for N.

use std::collections::BTreeMap;
use std::fmt;

use crate::arch::Arch;
use crate::code::EntryKind;
use crate::cubin::CubinInfo;
use crate::error::FatbinError;
use crate::host::{Linkage, fatbins_in_elf};
use crate::image::Fatbin;
use crate::ptx::PtxInfo;

/// Where an entry is: its image's index in the list the [`Program`] was built from, and its
/// index among that image's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub image: usize,
    pub entry: usize,
}

/// A PTX entry, decompressed, with what it declares.
#[derive(Clone, Debug)]
pub struct PtxModule {
    pub location: Location,
    pub linkage: Linkage,
    pub info: PtxInfo,
    /// The PTX text (the payload before its NUL).
    pub text: String,
}

/// A cubin entry and its kernels.
#[derive(Clone, Debug)]
pub struct SassModule {
    pub location: Location,
    pub linkage: Linkage,
    /// The entry's `sm_XX`.
    pub arch: Arch,
    pub info: CubinInfo,
}

/// The code that carries one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCode {
    /// Indices into [`Program::ptx`] of the modules declaring it, in image order.
    pub ptx: Vec<usize>,
    /// Indices into [`Program::sass`] of the cubins defining it, in image order.
    pub sass: Vec<usize>,
    /// The PTX targets, sorted, without repeats.
    pub ptx_targets: Vec<Arch>,
    /// The SASS archs, sorted, without repeats.
    pub sass_archs: Vec<Arch>,
}

impl KernelCode {
    /// Carried by SASS alone: nothing to instrument.
    pub fn sass_only(&self) -> bool {
        self.ptx.is_empty()
    }
}

/// Why there is no PTX to instrument for a kernel on a device.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoPtx {
    #[error("no fatbin of the program has a kernel `{kernel}`")]
    UnknownKernel { kernel: String },
    #[error(
        "kernel `{kernel}` is SASS-only ({}): rebuild with {} to embed PTX to instrument",
        names(.sass, Arch::sm), embed_ptx_flags(*.device)
    )]
    SassOnly {
        kernel: String,
        device: Arch,
        sass: Vec<Arch>,
    },
    #[error(
        "kernel `{kernel}` has PTX for {}, none of which JIT-compiles for {}: rebuild with {} to embed PTX to instrument",
        names(.targets, Arch::compute), .device.sm(), embed_ptx_flags(*.device)
    )]
    NoneCompatible {
        kernel: String,
        device: Arch,
        targets: Vec<Arch>,
    },
}

/// The nvcc flags that embed PTX for `arch` (the second also embeds its SASS).
pub fn embed_ptx_flags(arch: Arch) -> String {
    format!(
        "`-gencode arch={c},code={c}` (or `-arch={s}`, which embeds both {c} PTX and {s} SASS)",
        c = arch.compute(),
        s = arch.sm()
    )
}

fn names(archs: &[Arch], name: fn(Arch) -> String) -> String {
    archs
        .iter()
        .map(|&a| name(a))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A program's PTX and SASS modules and its kernels.
#[derive(Clone, Debug, Default)]
pub struct Program {
    ptx: Vec<PtxModule>,
    sass: Vec<SassModule>,
    kernels: BTreeMap<String, KernelCode>,
}

impl Program {
    /// Reads every PTX and ELF entry of `images` (an error names the image by its index).
    pub fn new<'i, 'a: 'i>(
        images: impl IntoIterator<Item = (Linkage, &'i Fatbin<'a>)>,
    ) -> Result<Self, FatbinError> {
        let mut program = Self::default();
        for (image, (linkage, fatbin)) in images.into_iter().enumerate() {
            program
                .add(image, linkage, fatbin)
                .map_err(|source| FatbinError::InImage {
                    image,
                    source: Box::new(source),
                })?;
        }
        for code in program.kernels.values_mut() {
            code.ptx_targets = code
                .ptx
                .iter()
                .map(|&i| program.ptx[i].info.target)
                .collect();
            code.ptx_targets.sort();
            code.ptx_targets.dedup();
            code.sass_archs = code.sass.iter().map(|&i| program.sass[i].arch).collect();
            code.sass_archs.sort();
            code.sass_archs.dedup();
        }
        Ok(program)
    }

    /// The program of every fatbin in the ELF file `file` ([`fatbins_in_elf`]); an error names
    /// the section and file offset of the image it is in.
    pub fn from_elf(file: &[u8]) -> Result<Self, FatbinError> {
        let embedded = fatbins_in_elf(file)?;
        Self::new(embedded.iter().map(|e| (e.linkage, &e.fatbin))).map_err(|e| match e {
            FatbinError::InImage { image, source } => match embedded.get(image) {
                Some(found) => FatbinError::InSection {
                    section: found.linkage.section(),
                    offset: found.file_offset,
                    source,
                },
                None => FatbinError::InImage { image, source },
            },
            other => other,
        })
    }

    fn add(
        &mut self,
        image: usize,
        linkage: Linkage,
        fatbin: &Fatbin<'_>,
    ) -> Result<(), FatbinError> {
        for (index, entry) in fatbin.entries().iter().enumerate() {
            let location = Location {
                image,
                entry: index,
            };
            match entry.kind {
                EntryKind::Ptx => {
                    let text = entry.ptx_text()?;
                    let info = PtxInfo::scan(&text).map_err(|problem| FatbinError::Ptx {
                        entry: entry.offset as u64,
                        problem,
                    })?;
                    for name in &info.entries {
                        self.kernels
                            .entry(name.clone())
                            .or_default()
                            .ptx
                            .push(self.ptx.len());
                    }
                    self.ptx.push(PtxModule {
                        location,
                        linkage,
                        info,
                        text,
                    });
                }
                EntryKind::Elf => {
                    let payload = entry.payload()?;
                    let info = CubinInfo::scan(&payload).map_err(|problem| FatbinError::Cubin {
                        entry: entry.offset as u64,
                        problem,
                    })?;
                    for name in &info.kernels {
                        self.kernels
                            .entry(name.clone())
                            .or_default()
                            .sass
                            .push(self.sass.len());
                    }
                    self.sass.push(SassModule {
                        location,
                        linkage,
                        arch: entry.arch,
                        info,
                    });
                }
                EntryKind::Nvvm | EntryKind::Other(_) => {}
            }
        }
        Ok(())
    }

    /// The PTX modules in image order.
    pub fn ptx(&self) -> &[PtxModule] {
        &self.ptx
    }

    /// The cubins in image order.
    pub fn sass(&self) -> &[SassModule] {
        &self.sass
    }

    /// Every kernel (mangled name) and its code, by name.
    pub fn kernels(&self) -> &BTreeMap<String, KernelCode> {
        &self.kernels
    }

    /// The PTX to instrument `kernel` from on a device of arch `device` (module docs).
    pub fn ptx_for(&self, kernel: &str, device: u32) -> Result<&PtxModule, NoPtx> {
        let code = self
            .kernels
            .get(kernel)
            .ok_or_else(|| NoPtx::UnknownKernel {
                kernel: kernel.to_string(),
            })?;
        let device_arch = Arch::plain(device);
        if code.sass_only() {
            return Err(NoPtx::SassOnly {
                kernel: kernel.to_string(),
                device: device_arch,
                sass: code.sass_archs.clone(),
            });
        }
        let rank = |m: &PtxModule| {
            (
                m.info.target.number,
                m.linkage == Linkage::Executable,
                m.info.target.variant,
            )
        };
        let mut best: Option<&PtxModule> = None;
        for module in code.ptx.iter().filter_map(|&i| self.ptx.get(i)) {
            if module.info.target.ptx_runs_on(device) && best.is_none_or(|b| rank(module) > rank(b))
            {
                best = Some(module);
            }
        }
        best.ok_or_else(|| NoPtx::NoneCompatible {
            kernel: kernel.to_string(),
            device: device_arch,
            targets: code.ptx_targets.clone(),
        })
    }
}

/// One line per kernel: its PTX targets and SASS archs, and for a SASS-only kernel the flags
/// that would embed its PTX.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, code) in &self.kernels {
            let sass = names(&code.sass_archs, Arch::sm);
            match code.sass_archs.last() {
                Some(&highest) if code.sass_only() => writeln!(
                    f,
                    "{name}: SASS only ({sass}), nothing to instrument; embed PTX with {}",
                    embed_ptx_flags(highest)
                )?,
                _ => writeln!(
                    f,
                    "{name}: PTX {}; SASS {}",
                    names(&code.ptx_targets, Arch::compute),
                    if sass.is_empty() { "none" } else { &sass }
                )?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::EntryFlags;
    use crate::testing::{image, ptx_entry};

    #[test]
    fn the_choice_prefers_higher_targets_then_loadable_modules_then_specific_suffixes() {
        let specific = 0x11 | EntryFlags::ARCH_SPECIFIC;
        let loadable = image(&[
            ptx_entry(75, 0x11, "sm_75", &["k", "j"]),
            ptx_entry(90, 0x11, "sm_90", &["k"]),
            ptx_entry(90, specific, "sm_90a", &["k"]),
        ]);
        let relocatable = image(&[
            ptx_entry(90, 0x11, "sm_90", &["j"]),
            ptx_entry(100, 0x11, "sm_100", &["j"]),
        ]);
        let (loadable, relocatable) = (
            Fatbin::parse(&loadable).unwrap(),
            Fatbin::parse(&relocatable).unwrap(),
        );
        let p = Program::new([
            (Linkage::Executable, &loadable),
            (Linkage::Relocatable, &relocatable),
        ])
        .unwrap();
        let chosen = |k: &str, device: u32| {
            p.ptx_for(k, device)
                .map(|m| (m.info.target.compute(), m.linkage, m.location))
                .unwrap()
        };
        let at = |image, entry| Location { image, entry };
        assert_eq!(
            chosen("k", 90),
            ("compute_90a".into(), Linkage::Executable, at(0, 2))
        );
        assert_eq!(
            chosen("k", 120),
            ("compute_90".into(), Linkage::Executable, at(0, 1))
        );
        assert_eq!(
            chosen("k", 89),
            ("compute_75".into(), Linkage::Executable, at(0, 0))
        );
        assert_eq!(
            chosen("j", 90),
            ("compute_90".into(), Linkage::Relocatable, at(1, 0))
        );
        assert_eq!(
            chosen("j", 103),
            ("compute_100".into(), Linkage::Relocatable, at(1, 1))
        );
        assert_eq!(
            p.ptx_for("k", 70).unwrap_err(),
            NoPtx::NoneCompatible {
                kernel: "k".into(),
                device: Arch::plain(70),
                targets: vec![
                    Arch::plain(75),
                    Arch::plain(90),
                    Arch::parse("compute_90a").unwrap()
                ],
            }
        );
        assert_eq!(
            p.to_string(),
            "j: PTX compute_75, compute_90, compute_100; SASS none\n\
             k: PTX compute_75, compute_90, compute_90a; SASS none\n"
        );
    }

    #[test]
    fn errors_name_the_image_they_are_in() {
        let good = image(&[ptx_entry(75, 0x11, "sm_75", &["k"])]);
        let bad = image(&[ptx_entry(75, 0x11, "nonsense", &["k"])]);
        let (good, bad) = (Fatbin::parse(&good).unwrap(), Fatbin::parse(&bad).unwrap());
        let e =
            Program::new([(Linkage::Executable, &good), (Linkage::Executable, &bad)]).unwrap_err();
        let FatbinError::InImage { image: 1, source } = e else {
            panic!("{e:?}")
        };
        assert!(matches!(
            *source,
            FatbinError::Ptx {
                entry: 16,
                problem: crate::PtxProblem::Malformed {
                    directive: ".target",
                    ..
                }
            }
        ));
    }
}
