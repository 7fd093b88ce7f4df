//! The parser on bytes it was not made for: random bytes, every truncation and random bit flips
//! of real images (ZSTD- and LZ4-compressed, built by nvcc), and stated lengths no input could
//! back. Each must give values or errors, never a panic, and no buffer beyond a checked length.

use std::sync::OnceLock;

use fatbin::{
    CubinInfo, DecompressProblem, Fatbin, FatbinError, HEADER_LEN, Linkage, Program, PtxInfo,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::tools::{APP_CU, tools};

/// `nvcc -fatbin` images: every entry ZSTD-compressed (`--compress-mode=size`), and PTX
/// LZ4-compressed beside stored cubins (`--compress-mode=speed`).
fn images(test: &str) -> Option<&'static [Vec<u8>; 2]> {
    static IMAGES: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    let t = tools(test)?;
    Some(IMAGES.get_or_init(|| {
        let gencode = [
            "-fatbin",
            "-gencode",
            "arch=compute_75,code=[sm_75,compute_75]",
        ];
        let build = |mode: &str| {
            let args = [&gencode[..], &[mode]].concat();
            t.build(&[("app.cu", APP_CU)], &args, "app.fatbin").bytes
        };
        [
            build("--compress-mode=size"),
            build("--compress-mode=speed"),
        ]
    }))
}

/// How far into an input the crate got.
#[derive(Default)]
struct Reached {
    parsed: usize,
    payloads_refused: usize,
}

/// Everything the crate does with an image's bytes; the checks hold for any input.
fn exercise(bytes: &[u8], reached: &mut Reached) {
    let stated = fatbin::image_len(bytes);
    let Ok(fb) = Fatbin::parse(bytes) else {
        return;
    };
    reached.parsed += 1;
    assert_eq!(stated.ok(), Some(fb.bytes().len()));
    assert!(fb.bytes().len() <= bytes.len());
    for e in fb.entries() {
        match e.payload() {
            Ok(payload) => {
                if e.compression.is_some() {
                    assert_eq!(payload.len() as u64, e.uncompressed_len);
                } else {
                    assert_eq!(payload.len(), e.stored.len());
                }
                let _ = CubinInfo::scan(&payload);
            }
            Err(_) => reached.payloads_refused += 1,
        }
        if let Ok(text) = e.ptx_text() {
            let _ = PtxInfo::scan(&text);
        }
    }
    let _ = Program::new([(Linkage::Executable, &fb)]);
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn random_bytes_are_errors_or_values_never_panics() {
    let mut r = runner(512);
    r.run(&proptest::collection::vec(any::<u8>(), 0..2048), |bytes| {
        exercise(&bytes, &mut Reached::default());
        let _ = fatbin::Wrapper::parse(&bytes);
        let _ = fatbin::fatbins_in_elf(&bytes);
        let _ = Program::from_elf(&bytes);
        let _ = PtxInfo::scan(&String::from_utf8_lossy(&bytes));
        Ok(())
    })
    .expect("no failing case");
    // Past the header check: a valid header stating exactly the random entries that follow.
    r.run(&proptest::collection::vec(any::<u8>(), 0..2048), |body| {
        let mut image = fatbin::FATBIN_MAGIC.to_le_bytes().to_vec();
        image.extend_from_slice(&1u16.to_le_bytes());
        image.extend_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        image.extend_from_slice(&(body.len() as u64).to_le_bytes());
        image.extend_from_slice(&body);
        exercise(&image, &mut Reached::default());
        Ok(())
    })
    .expect("no failing case");
}

#[test]
fn every_truncation_of_a_real_image_is_an_error() {
    let Some(images) = images("every_truncation_of_a_real_image_is_an_error") else {
        return;
    };
    for image in images {
        let whole = Fatbin::parse(image).expect("the real image parses");
        let boundaries: Vec<usize> = whole
            .entries()
            .iter()
            .map(|e| e.offset)
            .chain([image.len()])
            .collect();
        for cut in 0..image.len() {
            assert!(
                matches!(
                    Fatbin::parse(&image[..cut]),
                    Err(FatbinError::Truncated { .. })
                ),
                "cut at {cut}"
            );
            // The same cut with a header that states it: an error, unless the cut falls between
            // two entries, where the entries before it are read as they were.
            let Some(body) = cut.checked_sub(HEADER_LEN) else {
                continue;
            };
            let mut restated = image[..cut].to_vec();
            restated[8..16].copy_from_slice(&(body as u64).to_le_bytes());
            match Fatbin::parse(&restated) {
                Ok(part) => {
                    assert!(boundaries.contains(&cut), "cut at {cut} parsed");
                    let offsets: Vec<usize> = part.entries().iter().map(|e| e.offset).collect();
                    assert!(boundaries.starts_with(&offsets), "cut at {cut}");
                }
                Err(_) => assert!(!boundaries.contains(&cut), "cut at {cut} failed"),
            }
            exercise(&restated, &mut Reached::default());
        }
    }
}

#[test]
fn bit_flips_of_real_images_are_errors_or_values_never_panics() {
    let Some(images) = images("bit_flips_of_real_images_are_errors_or_values_never_panics") else {
        return;
    };
    for image in images {
        let flips = proptest::collection::vec((0..image.len(), 0..8u8), 1..8);
        let reached = std::cell::RefCell::new(Reached::default());
        runner(384)
            .run(&flips, |flips| {
                let mut bytes = image.clone();
                for (at, bit) in flips {
                    bytes[at] ^= 1 << bit;
                }
                exercise(&bytes, &mut reached.borrow_mut());
                Ok(())
            })
            .expect("no failing case");
        // The flips reached the entries and the decoders, not only the header checks.
        let reached = reached.into_inner();
        assert!(reached.parsed > 0 && reached.payloads_refused > 0);
    }
}

#[test]
fn a_stated_length_its_bytes_cannot_back_is_refused_before_any_buffer_is_made() {
    let Some(images) =
        images("a_stated_length_its_bytes_cannot_back_is_refused_before_any_buffer_is_made")
    else {
        return;
    };
    for image in images {
        let whole = Fatbin::parse(image).expect("the real image parses");
        let compressed: Vec<usize> = whole
            .entries()
            .iter()
            .filter(|e| e.compression.is_some())
            .map(|e| e.offset)
            .collect();
        assert!(!compressed.is_empty());
        for at in compressed {
            // Uncompressed length (0x38): beyond what the compressed bytes can expand to.
            for huge in [1u64 << 31, 1 << 40, u64::MAX] {
                let mut bytes = image.clone();
                bytes[at + 0x38..at + 0x40].copy_from_slice(&huge.to_le_bytes());
                let fb = Fatbin::parse(&bytes).expect("lengths are checked when decompressing");
                let e = fb.entries().iter().find(|e| e.offset == at).expect("entry");
                assert!(
                    matches!(
                        e.payload(),
                        Err(FatbinError::Decompress {
                            problem: DecompressProblem::Implausible { .. },
                            ..
                        })
                    ),
                    "stated {huge}"
                );
            }
        }
        // Stored payload (0x08) and header (0x04) lengths past the image: refused while parsing.
        let first = whole.entries()[0].offset;
        for (field, len) in [(0x08, 8), (0x04, 4)] {
            let mut bytes = image.clone();
            bytes[first + field..first + field + len].fill(0xff);
            assert!(
                matches!(Fatbin::parse(&bytes), Err(FatbinError::Truncated { .. })),
                "field {field:#x}"
            );
        }
    }
}
