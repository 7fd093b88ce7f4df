//! One test per way of building a CUDA program: what it embeds, as cuobjdump (through
//! [`agree`]) and this crate see it. The expectations are nvcc 13.0's (`scripts/setup-cuda`).

use fatbin::{
    Arch, Compression, EmbeddedFatbin, Entry, EntryFlags, EntryKind, Linkage, NoPtx, Program,
    WrapperVersion,
};

use crate::oracle::agree;
use crate::tools::{APP_CU, APP_KERNELS, Built, LIB_CU, RDC_A_CU, RDC_B_CU, tools};

fn entries<'x, 'a>(found: &'x [EmbeddedFatbin<'a>]) -> impl Iterator<Item = &'x Entry<'a>> {
    found.iter().flat_map(|f| f.fatbin.entries())
}

fn of_kind<'x, 'a>(found: &'x [EmbeddedFatbin<'a>], kind: EntryKind) -> Vec<&'x Entry<'a>> {
    entries(found).filter(|e| e.kind == kind).collect()
}

fn archs(numbers: &[u32]) -> Vec<Arch> {
    numbers.iter().map(|&n| Arch::plain(n)).collect()
}

/// In a linked file every image has one wrapper in `.nvFatBinSegment` whose `data` is its
/// address: the first (the device-link step's) of version 2, the others of version 1.
fn wrappers_point_at_images(b: &Built, found: &[EmbeddedFatbin]) {
    let wrappers = fatbin::wrappers_in_elf(&b.bytes).expect("wrappers parse");
    let mut pointed: Vec<u64> = wrappers.iter().map(|w| w.data).collect();
    let mut images: Vec<u64> = found.iter().map(|f| f.address).collect();
    pointed.sort();
    images.sort();
    assert_eq!(pointed, images, "wrapper data vs image addresses");
    let versions: Vec<WrapperVersion> = wrappers.iter().map(|w| w.version).collect();
    assert_eq!(versions[0], WrapperVersion::Linked);
    assert!(
        versions[1..].iter().all(|&v| v == WrapperVersion::Single),
        "{versions:?}"
    );
}

/// The kernels of [`APP_CU`], and only those (not its `__device__` function), each with PTX for
/// `ptx` and SASS for `sass`.
fn app_kernels(p: &Program, ptx: &[u32], sass: &[u32]) {
    let names: Vec<&str> = p.kernels().keys().map(String::as_str).collect();
    assert_eq!(names, APP_KERNELS);
    for (name, code) in p.kernels() {
        assert_eq!(code.ptx_targets, archs(ptx), "{name} PTX");
        assert_eq!(code.sass_archs, archs(sass), "{name} SASS");
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_default_build_carries_zstd_compressed_compute_75_ptx_beside_plain_sm_75_sass() {
    let Some(t) =
        tools("a_default_build_carries_zstd_compressed_compute_75_ptx_beside_plain_sm_75_sass")
    else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &[], "app");
    assert!(
        !contains(&b.bytes, b"libcudart.so"),
        "cudart is linked statically"
    );
    let found = agree(t, &b);
    assert_eq!(found.len(), 2, "the device-link image, then app.cu's");
    assert!(found.iter().all(|f| f.linkage == Linkage::Executable));
    assert!(
        found[0]
            .fatbin
            .entries()
            .iter()
            .all(|e| e.kind == EntryKind::Elf)
    );
    let ptx = of_kind(&found, EntryKind::Ptx);
    assert_eq!(ptx.len(), 1);
    assert_eq!(ptx[0].arch.compute(), "compute_75");
    assert_eq!(ptx[0].compression, Some(Compression::Zstd));
    for e in of_kind(&found, EntryKind::Elf) {
        assert_eq!((e.arch.sm(), e.compression), ("sm_75".to_string(), None));
    }
    wrappers_point_at_images(&b, &found);

    let p = Program::from_elf(&b.bytes).expect("program");
    app_kernels(&p, &[75], &[75]);
    for device in [75, 90, 120] {
        assert_eq!(
            p.ptx_for(APP_KERNELS[0], device)
                .expect("PTX")
                .info
                .target
                .number,
            75
        );
    }
    assert!(matches!(
        p.ptx_for(APP_KERNELS[0], 70),
        Err(NoPtx::NoneCompatible { .. })
    ));
    assert!(matches!(
        p.ptx_for("_Z7missingv", 90),
        Err(NoPtx::UnknownKernel { .. })
    ));
}

#[test]
fn a_shared_cudart_build_embeds_the_same_device_code() {
    let Some(t) = tools("a_shared_cudart_build_embeds_the_same_device_code") else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &["--cudart", "shared"], "app");
    assert!(
        contains(&b.bytes, b"libcudart.so.13"),
        "cudart is a shared library"
    );
    let found = agree(t, &b);
    wrappers_point_at_images(&b, &found);
    let ptx = of_kind(&found, EntryKind::Ptx);
    assert_eq!(ptx.len(), 1);
    assert_eq!(ptx[0].compression, Some(Compression::Zstd));
    app_kernels(&Program::from_elf(&b.bytes).expect("program"), &[75], &[75]);
}

#[test]
fn compress_mode_speed_compresses_ptx_with_lz4() {
    let Some(t) = tools("compress_mode_speed_compresses_ptx_with_lz4") else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &["--compress-mode=speed"], "app");
    let found = agree(t, &b);
    let ptx = of_kind(&found, EntryKind::Ptx);
    assert_eq!(ptx.len(), 1);
    assert_eq!(ptx[0].compression, Some(Compression::Lz4));
    assert!(ptx[0].flags.has(EntryFlags::LZ4));
    assert!(
        of_kind(&found, EntryKind::Elf)
            .iter()
            .all(|e| e.compression.is_none())
    );
    app_kernels(&Program::from_elf(&b.bytes).expect("program"), &[75], &[75]);
}

#[test]
fn compress_mode_none_stores_every_entry_as_is() {
    let Some(t) = tools("compress_mode_none_stores_every_entry_as_is") else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &["--compress-mode=none"], "app");
    let found = agree(t, &b);
    assert!(entries(&found).all(|e| e.compression.is_none() && e.uncompressed_len == 0));
    assert_eq!(of_kind(&found, EntryKind::Ptx).len(), 1);
    app_kernels(&Program::from_elf(&b.bytes).expect("program"), &[75], &[75]);
}

#[test]
fn compress_mode_size_compresses_the_cubins_too() {
    let Some(t) = tools("compress_mode_size_compresses_the_cubins_too") else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &["--compress-mode=size"], "app");
    let found = agree(t, &b);
    assert!(entries(&found).all(|e| e.compression == Some(Compression::Zstd)));
    app_kernels(&Program::from_elf(&b.bytes).expect("program"), &[75], &[75]);
}

#[test]
fn with_several_gencodes_the_highest_ptx_a_device_can_jit_is_chosen() {
    let Some(t) = tools("with_several_gencodes_the_highest_ptx_a_device_can_jit_is_chosen") else {
        return;
    };
    let b = t.build(
        &[("app.cu", APP_CU)],
        &[
            "-gencode",
            "arch=compute_75,code=[sm_75,compute_75]",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
        ],
        "app",
    );
    let found = agree(t, &b);
    let ptx: Vec<String> = of_kind(&found, EntryKind::Ptx)
        .iter()
        .map(|e| e.arch.compute())
        .collect();
    assert_eq!(ptx, ["compute_75", "compute_90"]);
    let p = Program::from_elf(&b.bytes).expect("program");
    app_kernels(&p, &[75, 90], &[75, 90]);
    for (device, chosen) in [(75, 75), (80, 75), (89, 75), (90, 90), (100, 90), (120, 90)] {
        for k in APP_KERNELS {
            let m = p.ptx_for(k, device).expect("PTX");
            assert_eq!(m.info.target.number, chosen, "{k} on sm_{device}");
            assert!(m.info.entries.iter().any(|e| e == k));
        }
    }
    let e = p.ptx_for(APP_KERNELS[2], 70).unwrap_err();
    assert_eq!(
        e,
        NoPtx::NoneCompatible {
            kernel: APP_KERNELS[2].into(),
            device: Arch::plain(70),
            targets: archs(&[75, 90]),
        }
    );
    assert!(
        e.to_string()
            .contains("-gencode arch=compute_70,code=compute_70"),
        "{e}"
    );
}

#[test]
fn a_sass_only_build_says_which_flag_would_embed_ptx() {
    let Some(t) = tools("a_sass_only_build_says_which_flag_would_embed_ptx") else {
        return;
    };
    let b = t.build(
        &[("app.cu", APP_CU)],
        &["-gencode", "arch=compute_90,code=sm_90"],
        "app",
    );
    let found = agree(t, &b);
    assert!(of_kind(&found, EntryKind::Ptx).is_empty());
    let p = Program::from_elf(&b.bytes).expect("program");
    app_kernels(&p, &[], &[90]);
    assert!(p.kernels().values().all(|k| k.sass_only()));
    let e = p.ptx_for(APP_KERNELS[2], 90).unwrap_err();
    assert_eq!(
        e,
        NoPtx::SassOnly {
            kernel: APP_KERNELS[2].into(),
            device: Arch::plain(90),
            sass: archs(&[90]),
        }
    );
    let message = e.to_string();
    assert!(
        message.contains("`-gencode arch=compute_90,code=compute_90`"),
        "{message}"
    );
    assert!(message.contains("`-arch=sm_90`"), "{message}");
    let summary = p.to_string();
    assert!(
        summary.contains("_Z7add_onePfi: SASS only (sm_90), nothing to instrument; embed PTX with `-gencode arch=compute_90,code=compute_90`"),
        "{summary}"
    );
}

#[test]
fn a_kernel_in_a_shared_library_is_found() {
    let Some(t) = tools("a_kernel_in_a_shared_library_is_found") else {
        return;
    };
    let b = t.build(
        &[("lib.cu", LIB_CU)],
        &["-Xcompiler", "-fPIC", "-shared"],
        "libkernels.so",
    );
    let found = agree(t, &b);
    wrappers_point_at_images(&b, &found);
    let p = Program::from_elf(&b.bytes).expect("program");
    let names: Vec<&String> = p.kernels().keys().collect();
    assert_eq!(names, ["_Z10lib_kernelPi"]);
    assert_eq!(
        p.ptx_for("_Z10lib_kernelPi", 86)
            .expect("PTX")
            .info
            .target
            .number,
        75
    );
}

#[test]
fn an_rdc_program_keeps_its_ptx_relocatable_in_nv_relfatbin() {
    let Some(t) = tools("an_rdc_program_keeps_its_ptx_relocatable_in_nv_relfatbin") else {
        return;
    };
    let b = t.build(
        &[("a.cu", RDC_A_CU), ("b.cu", RDC_B_CU)],
        &["-rdc=true"],
        "app",
    );
    let found = agree(t, &b);
    wrappers_point_at_images(&b, &found);
    let linkages: Vec<Linkage> = found.iter().map(|f| f.linkage).collect();
    assert_eq!(
        linkages,
        [
            Linkage::Executable,
            Linkage::Relocatable,
            Linkage::Relocatable
        ]
    );
    // `.nv_fatbin`: the device-linked cubin only.
    let linked = found[0].fatbin.entries();
    assert_eq!(linked.len(), 1);
    assert_eq!(linked[0].kind, EntryKind::Elf);
    // `__nv_relfatbin`: per unit a relocatable cubin and PTX for `--compile-only`, compressed.
    for f in &found[1..] {
        let kinds: Vec<EntryKind> = f.fatbin.entries().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EntryKind::Elf, EntryKind::Ptx]);
        for e in f.fatbin.entries() {
            assert_eq!(e.compression, Some(Compression::Zstd));
        }
        let options = f.fatbin.entries()[1].options_text().expect("ptxas options");
        assert_eq!(options.trim(), "--compile-only");
    }

    let p = Program::from_elf(&b.bytes).expect("program");
    let linked_sass = &p.sass()[0];
    assert_eq!(
        (linked_sass.linkage, linked_sass.info.relocatable),
        (Linkage::Executable, false)
    );
    // nvlink keeps the kernel the host launches and leaves out the one it never does.
    assert_eq!(linked_sass.info.kernels, ["_Z10rdc_kernelPi"]);
    assert!(
        p.sass()[1..]
            .iter()
            .all(|s| s.info.relocatable && s.linkage == Linkage::Relocatable)
    );
    for kernel in ["_Z10rdc_kernelPi", "_Z12other_kernelPi"] {
        let m = p.ptx_for(kernel, 75).expect("PTX");
        assert_eq!(m.linkage, Linkage::Relocatable, "{kernel}");
        assert_eq!(m.info.entries, [kernel]);
    }
    // The helper is a `__device__` function: a symbol, but no kernel.
    assert!(!p.kernels().contains_key("_Z6helperi"));
}

#[test]
fn an_rdc_object_has_only_relocatable_images_and_unrelocated_wrappers() {
    let Some(t) = tools("an_rdc_object_has_only_relocatable_images_and_unrelocated_wrappers")
    else {
        return;
    };
    let b = t.build(&[("b.cu", RDC_B_CU)], &["-rdc=true", "-c"], "b.o");
    let found = agree(t, &b);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].linkage, Linkage::Relocatable);
    let wrappers = fatbin::wrappers_in_elf(&b.bytes).expect("wrappers parse");
    assert_eq!(wrappers.len(), 1);
    assert_eq!(
        (wrappers[0].version, wrappers[0].data),
        (WrapperVersion::Single, 0)
    );
    let p = Program::from_elf(&b.bytes).expect("program");
    let names: Vec<&String> = p.kernels().keys().collect();
    assert_eq!(names, ["_Z12other_kernelPi"]);
}

#[test]
fn a_debug_build_names_its_source_and_compresses_its_cubins() {
    let Some(t) = tools("a_debug_build_names_its_source_and_compresses_its_cubins") else {
        return;
    };
    let b = t.build(&[("app.cu", APP_CU)], &["-G"], "app");
    let found = agree(t, &b);
    let own = &found[1].fatbin;
    for e in own.entries() {
        assert!(e.flags.has(EntryFlags::DEBUG), "{:?}", e.kind);
        assert_eq!(e.identifier_text().as_deref(), Some("app.cu"));
        assert_eq!(e.compression, Some(Compression::Zstd));
    }
    let ptx = of_kind(&found, EntryKind::Ptx);
    let options = ptx[0].options_text().expect("ptxas options");
    assert!(options.split_whitespace().any(|o| o == "-g"), "{options}");
    app_kernels(&Program::from_elf(&b.bytes).expect("program"), &[75], &[75]);
}

#[test]
fn arch_specific_and_family_code_is_chosen_only_where_it_runs() {
    let Some(t) = tools("arch_specific_and_family_code_is_chosen_only_where_it_runs") else {
        return;
    };
    let b = t.build(
        &[("app.cu", APP_CU)],
        &[
            "-gencode",
            "arch=compute_75,code=compute_75",
            "-gencode",
            "arch=compute_90a,code=[sm_90a,compute_90a]",
            "-gencode",
            "arch=compute_100f,code=[sm_100f,compute_100f]",
        ],
        "app",
    );
    let found = agree(t, &b);
    let ptx: Vec<String> = of_kind(&found, EntryKind::Ptx)
        .iter()
        .map(|e| e.arch.compute())
        .collect();
    assert_eq!(ptx, ["compute_75", "compute_90a", "compute_100f"]);
    // Cubins for sm_100 and later carry binary options and flag 0x1000000; earlier ones neither.
    for e in of_kind(&found, EntryKind::Elf) {
        let newer = e.arch.number >= 100;
        assert_eq!(
            e.options.is_some_and(|o| !o.is_empty()),
            newer,
            "{}",
            e.arch.sm()
        );
        assert_eq!(e.flags.has(0x100_0000), newer, "{}", e.arch.sm());
    }
    let p = Program::from_elf(&b.bytes).expect("program");
    for (device, chosen) in [
        (75, "compute_75"),
        (89, "compute_75"),
        (90, "compute_90a"),
        (100, "compute_100f"),
        (103, "compute_100f"),
        (120, "compute_75"),
    ] {
        let m = p.ptx_for(APP_KERNELS[2], device).expect("PTX");
        assert_eq!(m.info.target.compute(), chosen, "sm_{device}");
    }
}
