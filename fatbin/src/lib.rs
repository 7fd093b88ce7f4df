//! The PTX and SASS a CUDA program carries: fatbin images, their entries, and the ELF sections
//! that hold them.
//!
//! Why: `warpscope run -- ./app` instruments an unmodified program's kernels from the PTX nvcc
//! embedded beside their SASS. The injection layer sees fatbin images in memory (through cudart's
//! wrapper, [`Wrapper`], or passed to the driver's module loaders) and measures their length
//! from the header ([`image_len`]); offline, `warpscope` reads them from an executable's or
//! shared library's sections ([`fatbins_in_elf`]). Either way [`Fatbin::parse`] lists the
//! entries, [`Entry::payload`] decompresses one (ZSTD, LZ4), and [`Program`] says, per kernel,
//! which PTX targets and SASS archs carry it and which PTX to instrument for a device
//! ([`Program::ptx_for`]), or why there is none and which nvcc flag would embed it.
//!
//! The formats, with what is known and how: the image in [`image`] (undocumented by NVIDIA;
//! every field this crate reads checked against cuobjdump), the wrapper in [`wrapper`] (CUDA's
//! own header), the host sections in [`host`], compression in [`compress`], cubins in
//! [`cubin`], PTX directives in [`ptx`], architecture names and PTX compatibility in [`arch`].
//!
//! Every length and offset is read from the input and checked before use: a truncated or
//! corrupted image is an error, never a panic, and no buffer is made larger than a stated
//! length that its bytes could hold.
//!
//! ```
//! use fatbin::{EntryKind, Fatbin, Linkage, Program};
//!
//! // A one-entry image by hand: the 16-byte header, a 64-byte PTX entry header, and the PTX
//! // text with its NUL, padded to a multiple of 8.
//! let ptx = b".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n\0";
//! let stored = ptx.len().next_multiple_of(8);
//! let mut entry = vec![0u8; 64];
//! entry[0x00..0x02].copy_from_slice(&1u16.to_le_bytes()); // kind: PTX
//! entry[0x04..0x08].copy_from_slice(&64u32.to_le_bytes()); // header length
//! entry[0x08..0x10].copy_from_slice(&(stored as u64).to_le_bytes()); // payload length
//! entry[0x1a..0x1c].copy_from_slice(&9u16.to_le_bytes()); // code version 9.0
//! entry[0x1c..0x20].copy_from_slice(&75u32.to_le_bytes()); // compute_75
//! entry[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes()); // 64-bit, Linux
//! entry.extend_from_slice(ptx);
//! entry.resize(64 + stored, 0);
//! let mut image = fatbin::FATBIN_MAGIC.to_le_bytes().to_vec();
//! image.extend_from_slice(&1u16.to_le_bytes()); // version
//! image.extend_from_slice(&16u16.to_le_bytes()); // header length
//! image.extend_from_slice(&(entry.len() as u64).to_le_bytes());
//! image.extend_from_slice(&entry);
//!
//! assert_eq!(fatbin::image_len(&image[..16])?, image.len());
//! let fb = Fatbin::parse(&image)?;
//! let e = &fb.entries()[0];
//! assert_eq!((e.kind, e.arch.compute()), (EntryKind::Ptx, "compute_75".to_string()));
//! assert!(e.ptx_text()?.ends_with("ret;\n}\n"));
//!
//! let program = Program::new([(Linkage::Executable, &fb)])?;
//! assert_eq!(program.ptx_for("k", 90)?.info.target.number, 75);
//! assert!(program.ptx_for("k", 70).is_err()); // compute_75 PTX does not JIT for sm_70
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod arch;
mod bytes;
pub mod code;
pub mod compress;
pub mod cubin;
mod error;
pub mod host;
pub mod image;
pub mod program;
pub mod ptx;
#[cfg(test)]
mod testing;
pub mod wrapper;

pub use arch::{Arch, ArchVariant};
pub use code::{EntryKind, Version};
pub use compress::{Compression, DecompressProblem};
pub use cubin::{CubinInfo, CubinProblem};
pub use error::FatbinError;
pub use host::{
    CONTROL_SECTION, DATA_SECTION, EmbeddedFatbin, Linkage, PRELINK_SECTION, fatbins_in_elf,
    wrappers_in_elf,
};
pub use image::{
    ENTRY_HEADER_LEN, Entry, EntryFlags, FATBIN_MAGIC, FATBIN_VERSION, Fatbin, HEADER_LEN,
    image_len,
};
pub use program::{KernelCode, Location, NoPtx, Program, PtxModule, SassModule, embed_ptx_flags};
pub use ptx::{PtxInfo, PtxProblem};
pub use wrapper::{WRAPPER_LEN, WRAPPER_MAGIC, Wrapper, WrapperVersion};
