//! What a cubin (the ELF payload of a fatbin's ELF entry) holds: its kernels.
//!
//! A cubin is a 64-bit ELF for machine `EM_CUDA` (190). Every function has a
//! `.text.<name>` section and an `STT_FUNC` symbol; a kernel's symbol also has `st_other` bit
//! 0x10 (cuobjdump's and readelf's `other` column shows `0x10`/`[<other>: 10]` on each
//! `__global__` function and 0 on `__device__` functions such as an `-rdc` helper), is defined
//! (not `SHN_UNDEF`, as a relocatable cubin's references to other objects' functions are), and
//! has its `.nv.info.<name>` section. Kernels are found by that symbol attribute. The ELF type
//! says whether the cubin is linked (`ET_EXEC`) or relocatable (`ET_REL`, from `-rdc`); the
//! architecture is taken from the fatbin entry, which states it for every kind.

use object::elf;
use object::read::elf::{FileHeader, Sym};

/// `st_other` bit of a kernel's symbol.
const STO_CUDA_ENTRY: u8 = 0x10;

/// The kernels of a cubin and whether it still has to be linked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CubinInfo {
    /// Kernel names (mangled) in symbol-table order.
    pub kernels: Vec<String>,
    /// `ET_REL`: relocatable device code (`-rdc`), linked by nvlink or the driver.
    pub relocatable: bool,
}

/// Why bytes are not a cubin this reader understands.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CubinProblem {
    #[error("not a readable 64-bit ELF")]
    Elf(#[source] object::read::Error),
    #[error("ELF machine {0}, not EM_CUDA (190)")]
    NotCuda(u16),
}

impl CubinInfo {
    /// Reads the ELF header and symbol table of `cubin`.
    pub fn scan(cubin: &[u8]) -> Result<Self, CubinProblem> {
        let header =
            elf::FileHeader64::<object::Endianness>::parse(cubin).map_err(CubinProblem::Elf)?;
        let endian = header.endian().map_err(CubinProblem::Elf)?;
        let machine = header.e_machine(endian);
        if machine != elf::EM_CUDA {
            return Err(CubinProblem::NotCuda(machine));
        }
        let sections = header.sections(endian, cubin).map_err(CubinProblem::Elf)?;
        let symbols = sections
            .symbols(endian, cubin, elf::SHT_SYMTAB)
            .map_err(CubinProblem::Elf)?;
        let mut kernels = Vec::new();
        for sym in symbols.iter() {
            if sym.st_type() == elf::STT_FUNC
                && sym.st_other() & STO_CUDA_ENTRY != 0
                && sym.st_shndx(endian) != elf::SHN_UNDEF
            {
                let name = symbols
                    .symbol_name(endian, sym)
                    .map_err(CubinProblem::Elf)?;
                kernels.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        Ok(Self {
            kernels,
            relocatable: header.e_type(endian) == elf::ET_REL,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_elf_and_non_cuda_bytes_are_refused() {
        assert!(matches!(
            CubinInfo::scan(b"not an elf"),
            Err(CubinProblem::Elf(_))
        ));
        // A minimal 64-bit little-endian ELF header for x86-64 (machine 62).
        let mut header = vec![0u8; 64];
        header[..7].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1]);
        header[18] = 62;
        assert_eq!(CubinInfo::scan(&header), Err(CubinProblem::NotCuda(62)));
    }
}
