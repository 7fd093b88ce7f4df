//! NVIDIA's cuobjdump as the oracle: for a file nvcc made, this crate's entries must be the ones
//! cuobjdump lists, with the header fields it prints, and the payloads it extracts.

use fatbin::{Arch, ArchVariant, EmbeddedFatbin, Entry, EntryFlags, EntryKind, Linkage, PtxInfo};

use crate::tools::{Built, Tools};

/// An entry cuobjdump knows (PTX or ELF) and the linkage of its image.
struct Listed<'e, 'a> {
    linkage: Linkage,
    entry: &'e Entry<'a>,
}

/// Checks everything cuobjdump can say about `built` (a host ELF file) against this crate's
/// reading of it, and returns that reading.
pub fn agree<'b>(tools: &Tools, built: &'b Built) -> Vec<EmbeddedFatbin<'b>> {
    let found = fatbin::fatbins_in_elf(&built.bytes).expect("the ELF file's fatbins parse");
    assert!(!found.is_empty(), "no fatbin in {}", built.path.display());
    let listed: Vec<Listed> = found
        .iter()
        .flat_map(|f| {
            f.fatbin.entries().iter().map(|entry| Listed {
                linkage: f.linkage,
                entry,
            })
        })
        .filter(|l| matches!(l.entry.kind, EntryKind::Ptx | EntryKind::Elf))
        .collect();

    // The lists: every entry with -all; without it, those of `.nv_fatbin` where it has any.
    let all = listing(&tools.cuobjdump(built.dir.path(), &["-all", "-lelf", "-lptx"], &built.path));
    assert_eq!(
        all.iter()
            .map(|(k, n)| (*k, arch_of(n)))
            .collect::<Vec<_>>(),
        listed
            .iter()
            .map(|l| listed_arch(l.entry))
            .collect::<Vec<_>>(),
        "cuobjdump -all -lelf -lptx"
    );
    let default = listing(&tools.cuobjdump(built.dir.path(), &["-lelf", "-lptx"], &built.path));
    let shown = if listed.iter().any(|l| l.linkage == Linkage::Executable) {
        Linkage::Executable
    } else {
        Linkage::Relocatable
    };
    assert_eq!(
        default
            .iter()
            .map(|(k, n)| (*k, arch_of(n)))
            .collect::<Vec<_>>(),
        listed
            .iter()
            .filter(|l| l.linkage == shown)
            .map(|l| listed_arch(l.entry))
            .collect::<Vec<_>>(),
        "cuobjdump -lelf -lptx"
    );

    // Each entry's header as cuobjdump prints it (-ptx prints every entry's header).
    let printed = headers(&tools.cuobjdump(built.dir.path(), &["-all", "-ptx"], &built.path));
    let ours: Vec<String> = listed.iter().map(|l| header(l.entry)).collect();
    assert_eq!(printed, ours, "cuobjdump -all -ptx headers");

    // Every payload, byte for byte, as cuobjdump extracts it. Where names repeat (the
    // identifier replaces the image's number in them, as in `-G` builds), cuobjdump writes one
    // file per name: it must be the payload of one of the entries so named.
    let out = tempfile::tempdir().expect("temporary folder");
    tools.cuobjdump(
        out.path(),
        &["-all", "-xelf", "all", "-xptx", "all"],
        &built.path,
    );
    let mut names: Vec<&String> = all.iter().map(|(_, n)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        let theirs = std::fs::read(out.path().join(name)).expect("cuobjdump extracted it");
        let ours: Vec<Vec<u8>> = all
            .iter()
            .zip(&listed)
            .filter(|((_, n), _)| n == name)
            .map(|((kind, _), l)| match kind {
                EntryKind::Ptx => l.entry.ptx_text().expect("PTX text").into_bytes(),
                _ => l.entry.payload().expect("payload").into_owned(),
            })
            .collect();
        assert!(
            ours.contains(&theirs),
            "{name}: cuobjdump's {} bytes are none of our {:?}-byte payloads; first difference at {:?}",
            theirs.len(),
            ours.iter().map(Vec::len).collect::<Vec<_>>(),
            ours.first()
                .and_then(|o| o.iter().zip(&theirs).position(|(a, b)| a != b))
        );
    }

    // What PTX says about itself agrees with its entry header.
    for l in listed.iter().filter(|l| l.entry.kind == EntryKind::Ptx) {
        let info = PtxInfo::scan(&l.entry.ptx_text().expect("PTX text")).expect("PTX scans");
        assert_eq!(info.version, l.entry.code_version, "PTX .version");
        assert_eq!(info.target, l.entry.arch, "PTX .target");
    }
    found
}

/// `ELF file    1: app.1.sm_75.cubin` and `PTX file    1: app.1.sm_75.ptx` lines.
fn listing(text: &str) -> Vec<(EntryKind, String)> {
    text.lines()
        .filter_map(|line| {
            let (head, name) = line.split_once(": ")?;
            let kind = if head.starts_with("ELF file") {
                EntryKind::Elf
            } else if head.starts_with("PTX file") {
                EntryKind::Ptx
            } else {
                return None;
            };
            Some((kind, name.trim().to_string()))
        })
        .collect()
}

/// The kind and arch cuobjdump names an entry's file after. For a cubin that is the cubin's
/// own arch, which has no family suffix: an `sm_100f` entry (so its header, and cuobjdump's
/// `arch =` line) holds a cubin whose ELF header says `sm=100`, and is listed as `….sm_100.cubin`.
fn listed_arch(e: &Entry) -> (EntryKind, String) {
    let arch = match (e.kind, e.arch.variant) {
        (EntryKind::Elf, ArchVariant::Family) => Arch::plain(e.arch.number),
        _ => e.arch,
    };
    (e.kind, arch.sm())
}

/// The `sm_XX` part of a listed file name.
fn arch_of(name: &str) -> String {
    name.split('.')
        .find(|part| part.starts_with("sm_"))
        .unwrap_or("?")
        .to_string()
}

/// The header blocks cuobjdump prints: the lines after `Fatbin … code:` and its underline, up to
/// the next empty line, kept with the title.
fn headers(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("Fatbin ") && line.ends_with(" code:") {
            let body: Vec<&str> = lines[i + 2..]
                .iter()
                .take_while(|l| !l.is_empty())
                .copied()
                .collect();
            blocks.push(format!("{line}\n{}", body.join("\n")));
        }
    }
    blocks
}

/// An entry's header the way cuobjdump prints it.
fn header(e: &Entry) -> String {
    let kind = match e.kind {
        EntryKind::Ptx => "ptx",
        EntryKind::Elf => "elf",
        other => panic!("cuobjdump does not list {other}"),
    };
    let mut lines = vec![
        format!("Fatbin {kind} code:"),
        format!("arch = {}", e.arch.sm()),
        format!(
            "code version = [{},{}]",
            e.code_version.major, e.code_version.minor
        ),
    ];
    if e.flags.has(EntryFlags::HOST_LINUX) {
        lines.push("host = linux".into());
    }
    let size = if e.flags.has(EntryFlags::BITS_64) {
        "64"
    } else {
        "32"
    };
    lines.push(format!("compile_size = {size}bit"));
    if e.flags.has(EntryFlags::DEBUG) {
        lines.push("has debug info".into());
    }
    if e.compression.is_some() {
        lines.push("compressed".into());
    }
    if let Some(id) = e.identifier_text() {
        lines.push(format!("identifier = {id}"));
    }
    if e.kind == EntryKind::Ptx
        && let Some(options) = e.options_text()
    {
        lines.push(format!("ptxasOptions = {options}"));
    }
    let (title, body) = lines.split_at(1);
    format!("{}\n{}", title[0], body.join("\n"))
}
