//! The fatbins of a host ELF file (executable, shared library or object) and their sections.
//!
//! Section names from CUDA's `fatbinary_section.h`: `.nv_fatbin` (`FATBIN_DATA_SECTION_NAME`)
//! holds images of device code ready to load, `__nv_relfatbin`
//! (`FATBIN_PRELINK_DATA_SECTION_NAME`) images of relocatable device code, and
//! `.nvFatBinSegment` (`FATBIN_CONTROL_SECTION_NAME`) the wrappers ([`crate::wrapper`]) that
//! point at them. What nvcc 13.0 emits, seen in its output:
//!
//! - Every program and shared library, `-rdc` or not, is device-linked: `.nv_fatbin` first holds
//!   the link step's image (`<name>_dlink`, one linked cubin per SASS arch, no PTX), then one
//!   image per translation unit with its cubins and PTX. An object (`-c`) has only its own.
//! - With `-rdc=true`, a translation unit's image (relocatable cubins, `ET_REL`, and PTX whose
//!   ptxas options are `--compile-only`) goes to `__nv_relfatbin` instead, and `.nv_fatbin`
//!   holds only the device-linked cubins, which may leave out kernels the host never launches.
//!   So an `-rdc` program's PTX is all in `__nv_relfatbin`, and it is relocatable: a kernel that
//!   calls a `__device__` function of another translation unit needs that unit's code too
//!   (`cuLinkAddData` of both) before it can be JIT-compiled.
//!
//! `cuobjdump` lists `.nv_fatbin`'s entries (or `__nv_relfatbin`'s where there are none) unless
//! told `-all`; [`fatbins_in_elf`] reads both, in
//! section order, images one after another within a section (zero bytes between two images are
//! skipped as padding; none were seen).

use object::read::elf::ElfFile64;
use object::{Object, ObjectSection};

use crate::error::FatbinError;
use crate::image::Fatbin;
use crate::wrapper::{WRAPPER_LEN, Wrapper};

/// Images of device code ready to load.
pub const DATA_SECTION: &str = ".nv_fatbin";
/// Images of relocatable device code (`-rdc`).
pub const PRELINK_SECTION: &str = "__nv_relfatbin";
/// The wrappers cudart registers.
pub const CONTROL_SECTION: &str = ".nvFatBinSegment";

/// Whether an image's device code is complete or still to be linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Linkage {
    /// Loadable as it is (`.nv_fatbin`, `cuModuleLoadData`).
    Executable,
    /// Relocatable device code (`__nv_relfatbin`), to be linked with the program's other units.
    Relocatable,
}

impl Linkage {
    /// The ELF section that holds images of this linkage.
    pub fn section(self) -> &'static str {
        match self {
            Self::Executable => DATA_SECTION,
            Self::Relocatable => PRELINK_SECTION,
        }
    }
}

/// A fatbin image found in a host ELF file.
#[derive(Clone, Debug)]
pub struct EmbeddedFatbin<'a> {
    pub linkage: Linkage,
    /// Where the image starts in the file.
    pub file_offset: u64,
    /// Its virtual address (section address + offset; objects' sections are at 0): what a
    /// wrapper's `data` holds.
    pub address: u64,
    pub fatbin: Fatbin<'a>,
}

/// Every fatbin image of the ELF file `file`, in section order, then image order.
pub fn fatbins_in_elf(file: &[u8]) -> Result<Vec<EmbeddedFatbin<'_>>, FatbinError> {
    let elf = ElfFile64::<object::Endianness>::parse(file).map_err(FatbinError::Elf)?;
    let mut found = Vec::new();
    for section in elf.sections() {
        let linkage = match section.name() {
            Ok(DATA_SECTION) => Linkage::Executable,
            Ok(PRELINK_SECTION) => Linkage::Relocatable,
            _ => continue,
        };
        let data = section.data().map_err(FatbinError::Elf)?;
        let file_start = section.file_range().map_or(0, |(offset, _)| offset);
        let mut at = 0;
        while let Some(skip) = data.get(at..).and_then(|d| d.iter().position(|&b| b != 0)) {
            at += skip;
            let fatbin = Fatbin::parse(&data[at..]).map_err(|e| FatbinError::InSection {
                section: linkage.section(),
                offset: file_start + at as u64,
                source: Box::new(e),
            })?;
            let len = fatbin.bytes().len();
            found.push(EmbeddedFatbin {
                linkage,
                file_offset: file_start + at as u64,
                // Wrapping: a corrupt section header may state any address.
                address: section.address().wrapping_add(at as u64),
                fatbin,
            });
            at += len;
        }
    }
    Ok(found)
}

/// The wrappers in the ELF file's `.nvFatBinSegment`, in order (none when it has no such
/// section). In an object file their addresses are 0 until relocated.
pub fn wrappers_in_elf(file: &[u8]) -> Result<Vec<Wrapper>, FatbinError> {
    let elf = ElfFile64::<object::Endianness>::parse(file).map_err(FatbinError::Elf)?;
    let Some(section) = elf.section_by_name(CONTROL_SECTION) else {
        return Ok(Vec::new());
    };
    let data = section.data().map_err(FatbinError::Elf)?;
    let file_start = section.file_range().map_or(0, |(offset, _)| offset);
    data.chunks(WRAPPER_LEN)
        .enumerate()
        .map(|(i, chunk)| {
            Wrapper::parse(chunk).map_err(|e| FatbinError::InSection {
                section: CONTROL_SECTION,
                offset: file_start + (i * WRAPPER_LEN) as u64,
                source: Box::new(e),
            })
        })
        .collect()
}
