//! The PTX of a kernel in a fatbin image the program loaded, through the `fatbin` crate.

/// The PTX text of the module that declares `kernel` and that a device of `arch` (compute
/// capability × 10) can compile; the reason in words when there is none (a SASS-only kernel is
/// named with the nvcc flags that would embed its PTX).
pub(crate) fn ptx_of_kernel(image: &[u8], kernel: &str, arch: u32) -> Result<String, String> {
    let fatbin = fatbin::Fatbin::parse(image).map_err(|e| format!("its fatbin: {e}"))?;
    let program = fatbin::Program::new([(fatbin::Linkage::Executable, &fatbin)])
        .map_err(|e| format!("its fatbin: {e}"))?;
    program
        .ptx_for(kernel, arch)
        .map(|m| m.text.clone())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_that_is_not_a_fatbin_is_an_error_not_a_panic() {
        let e = ptx_of_kernel(&[0u8; 64], "k", 90).unwrap_err();
        assert!(e.contains("fatbin"), "{e}");
        assert!(ptx_of_kernel(&[], "k", 90).is_err());
    }
}
