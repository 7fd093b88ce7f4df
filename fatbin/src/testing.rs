//! Images made by hand for the unit tests, laid out as [`crate::image`] documents them.

/// Writes `value` at `at` of `bytes`.
pub(crate) fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

/// An entry with a 0x40-byte header and `payload` stored after it, padded to 8.
pub(crate) fn entry(kind: u16, arch: u32, flags: u64, payload: &[u8]) -> Vec<u8> {
    let stored = payload.len().next_multiple_of(8);
    let mut e = vec![0; 0x40];
    put(&mut e, 0x00, &kind.to_le_bytes());
    put(&mut e, 0x04, &0x40u32.to_le_bytes());
    put(&mut e, 0x08, &(stored as u64).to_le_bytes());
    put(&mut e, 0x1c, &arch.to_le_bytes());
    put(&mut e, 0x28, &flags.to_le_bytes());
    e.extend_from_slice(payload);
    e.resize(0x40 + stored, 0);
    e
}

/// A stored PTX entry for `arch` whose module declares `kernels`.
pub(crate) fn ptx_entry(arch: u32, flags: u64, target: &str, kernels: &[&str]) -> Vec<u8> {
    let mut text = format!(".version 9.0\n.target {target}\n.address_size 64\n");
    for k in kernels {
        text.push_str(&format!(".visible .entry {k}()\n{{\n\tret;\n}}\n"));
    }
    text.push('\0');
    let mut e = entry(1, arch, flags, text.as_bytes());
    put(&mut e, 0x1a, &9u16.to_le_bytes());
    e
}

/// An image of `entries`.
pub(crate) fn image(entries: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = entries.concat();
    let mut image = vec![0; 16];
    put(&mut image, 0, &crate::FATBIN_MAGIC.to_le_bytes());
    put(&mut image, 4, &1u16.to_le_bytes());
    put(&mut image, 6, &16u16.to_le_bytes());
    put(&mut image, 8, &(body.len() as u64).to_le_bytes());
    image.extend_from_slice(&body);
    image
}
