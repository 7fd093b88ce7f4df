//! A kernel's parameters as a launch passes them: the PTX entry's signature says how many there
//! are and their sizes and alignments, which is all a driver-level launch does not say. With it
//! the values behind `kernelParams` (one pointer per parameter) or the packed buffer of `extra`
//! (`CU_LAUNCH_PARAM_BUFFER_POINTER`, each parameter at its aligned offset) become one list of
//! byte strings, to which the probed kernel's `ws::Log` argument is appended.

use crate::ProfileError;

/// Sizes and alignments of an entry's parameters, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamLayout {
    /// (bytes, alignment) per parameter.
    pub params: Vec<(u32, u32)>,
}

impl ParamLayout {
    /// The layout of entry `kernel` of `ptx`.
    pub fn of_entry(ptx: &str, kernel: &str) -> Result<ParamLayout, ProfileError> {
        let module = emulator::Module::parse(ptx)
            .map_err(|e| ProfileError::Ptx(format!("the PTX does not parse: {e}")))?;
        let entries = module.entries();
        let entry = entries
            .iter()
            .find(|e| e.name == kernel)
            .ok_or_else(|| ProfileError::Ptx(format!("no entry {kernel:?} in the PTX")))?;
        Ok(ParamLayout {
            params: entry
                .params
                .iter()
                .map(|p| (p.size_bytes, p.align.max(1)))
                .collect(),
        })
    }

    /// Each parameter's offset in a packed buffer, and the buffer's size.
    pub fn offsets(&self) -> (Vec<usize>, usize) {
        let mut end = 0usize;
        let offsets = self
            .params
            .iter()
            .map(|&(size, align)| {
                let at = end.next_multiple_of(align as usize);
                end = at + size as usize;
                at
            })
            .collect();
        (offsets, end)
    }

    /// The parameters out of a packed `extra` buffer of `buf.len()` bytes.
    pub fn split_buffer(&self, buf: &[u8]) -> Result<Vec<Vec<u8>>, ProfileError> {
        let (offsets, end) = self.offsets();
        if buf.len() < end {
            return Err(ProfileError::Params(format!(
                "the launch's parameter buffer holds {} bytes; the entry's {} parameters take {end}",
                buf.len(),
                self.params.len()
            )));
        }
        Ok(offsets
            .iter()
            .zip(&self.params)
            .map(|(&at, &(size, _))| buf[at..at + size as usize].to_vec())
            .collect())
    }

    /// Checks values read one per parameter (the `kernelParams` form) against the sizes.
    pub fn check(&self, values: &[Vec<u8>]) -> Result<(), ProfileError> {
        if values.len() != self.params.len() {
            return Err(ProfileError::Params(format!(
                "{} values for {} parameters",
                values.len(),
                self.params.len()
            )));
        }
        match (values.iter().zip(&self.params)).position(|(v, &(size, _))| v.len() != size as usize)
        {
            Some(i) => Err(ProfileError::Params(format!(
                "parameter {i} has {} bytes, the entry declares {}",
                values[i].len(),
                self.params[i].0
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.0\n.target sm_75\n.address_size 64\n\
        .visible .entry k(.param .u64 k_p, .param .u32 k_n, .param .align 8 .b8 k_s[12], .param .u8 k_c)\n{\nret;\n}\n";

    #[test]
    fn the_layout_follows_the_signature_and_packs_with_alignment() {
        let l = ParamLayout::of_entry(PTX, "k").unwrap();
        assert_eq!(l.params, [(8, 8), (4, 4), (12, 8), (1, 1)]);
        assert_eq!(l.offsets(), (vec![0, 8, 16, 28], 29));
        let buf: Vec<u8> = (0..32).collect();
        let v = l.split_buffer(&buf).unwrap();
        assert_eq!(v[1], [8, 9, 10, 11]);
        assert_eq!(v[2], (16..28).collect::<Vec<u8>>());
        assert_eq!(v[3], [28]);
        assert!(l.split_buffer(&buf[..20]).is_err());
        assert!(l.check(&v).is_ok());
        let mut short = v.clone();
        short[0].pop();
        assert!(
            l.check(&short)
                .unwrap_err()
                .to_string()
                .contains("parameter 0")
        );
        assert!(l.check(&v[..3]).is_err());
    }

    #[test]
    fn a_missing_entry_or_bad_ptx_is_an_error() {
        assert!(ParamLayout::of_entry(PTX, "other").is_err());
        assert!(ParamLayout::of_entry("not ptx", "k").is_err());
    }
}
