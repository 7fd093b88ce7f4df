//! Where the block dispatcher places a launch's blocks: round-robin by default, in the order
//! `sm.dispatch_order` gives, or by the units of `sm.dispatch`.

use crate::common::*;
use emulator::{Dispatch, GpuConfig};

/// Each block's thread 0 writes the block's `%smid` to `out[ctaid.x]`.
const SMID: &str = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry smid(.param .u64 out)
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 .reg .b64 %rd<4>;
 mov.u32 %r1, %tid.x;
 setp.ne.u32 %p1, %r1, 0;
 @%p1 bra DONE;
 ld.param.u64 %rd1, [out];
 mov.u32 %r2, %ctaid.x;
 mov.u32 %r3, %smid;
 mul.wide.u32 %rd2, %r2, 4;
 add.s64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r3;
DONE:
 ret;
}"#;

/// The SM each of `blocks` one-warp blocks ran on, on gtx480 (15 SMs, 8 blocks each) with
/// `order` as its dispatch order.
fn placement(order: Option<Vec<u32>>, blocks: u32) -> Vec<u32> {
    let mut cfg = GpuConfig::preset("gtx480").unwrap();
    cfg.sm.dispatch_order = order;
    cfg.validate("test").unwrap();
    let mut r = Rig::with_config(SMID, cfg);
    let out = r.zeros(blocks as usize * 4);
    r.launch("smid", [blocks, 1, 1], [32, 1, 1], vec![a64(out)]);
    r.get_u32(out, blocks as usize)
}

#[test]
fn blocks_go_round_robin_unless_an_order_is_given() {
    let rr = placement(None, 120);
    assert!(
        rr.iter().enumerate().all(|(b, &sm)| sm == b as u32 % 15),
        "{rr:?}"
    );
    // The same order spelt out places every block as the default does.
    assert_eq!(placement(Some((0..15).collect()), 120), rr);
    let reversed: Vec<u32> = (0..15).rev().collect();
    let got = placement(Some(reversed.clone()), 120);
    assert!(
        got.iter()
            .enumerate()
            .all(|(b, &sm)| sm == reversed[b % 15]),
        "{got:?}"
    );
}

#[test]
fn an_sm_named_twice_fills_first_and_is_then_passed_over() {
    // SM 0 comes round twice in a turn of 16 visits: it takes blocks 0 and 1, then the first two
    // of each turn, and is full (8 blocks) with the second block of the fourth turn; later turns
    // pass it over.
    let mut order = vec![0];
    order.extend(0..15);
    let got = placement(Some(order), 120);
    assert_eq!(&got[..3], &[0, 0, 1]);
    let mut per_sm = [0u32; 15];
    for &sm in &got {
        per_sm[sm as usize] += 1;
    }
    assert_eq!(per_sm, [8; 15], "{got:?}");
    let last_on_0 = got.iter().rposition(|&sm| sm == 0).unwrap();
    assert_eq!(last_on_0, 3 * 16 + 1, "{got:?}");
    // A grid larger than one wave still runs every block.
    let more = placement(Some([vec![3, 3, 3], (0..15).collect()].concat()), 300);
    assert!(more.iter().all(|&sm| sm < 15));
    assert_eq!(&more[..4], &[3, 3, 3, 0]);
}

#[test]
fn a_dispatch_order_is_read_from_a_configuration_and_checked() {
    let cfg = |order: &str| {
        GpuConfig::from_toml_str(
            &format!("base = \"gtx480\"\n[sm]\ndispatch_order = {order}\n"),
            "a.toml",
        )
    };
    let all: Vec<u32> = (0..15).rev().collect();
    let ok = cfg(&format!("{all:?}")).unwrap();
    assert_eq!(ok.sm.dispatch_order, Some(all));
    let e = cfg("[0, 1, 15]").unwrap_err().to_string();
    assert!(
        e.contains("sm.dispatch_order") && e.contains("SM 15"),
        "{e}"
    );
    let e = cfg("[0, 1, 2]").unwrap_err().to_string();
    assert!(e.contains("has 3 places for 15 SMs"), "{e}");
    let e = cfg(&format!("{:?}", [0; 15])).unwrap_err().to_string();
    assert!(
        e.contains("14 of 15 are missing (1, 2, 3, 4, 5, 6, 7, 8, …)"),
        "{e}"
    );
}

#[test]
fn blocks_go_by_units_where_the_configuration_names_them() {
    // gtx480's 15 SMs as a unit of 7 and one of 6, SMs 13 and 14 the extra unit, visited first
    // and after every visit of the others; 45 blocks, three a SM.
    let mut cfg = GpuConfig::preset("gtx480").unwrap();
    cfg.sm.dispatch = Some(Dispatch {
        units: vec![(0..7).collect(), (7..13).collect()],
        extra: vec![13, 14],
        extra_first: 1,
        extra_every: 1,
        sms_per_tpc: 1,
    });
    cfg.validate("test").unwrap();
    let mut r = Rig::with_config(SMID, cfg);
    let out = r.zeros(45 * 4);
    r.launch("smid", [45, 1, 1], [32, 1, 1], vec![a64(out)]);
    let got = r.get_u32(out, 45);
    let first: Vec<u32> = [
        vec![13, 14],
        (0..7).collect(),
        vec![13, 14],
        (7..13).collect(),
    ]
    .concat();
    assert_eq!(&got[..first.len()], &first[..], "{got:?}");
    // Levels of three blocks: the extra unit, ahead, waits at each level for the others.
    let mut per_sm = [0u32; 15];
    got.iter().for_each(|&sm| per_sm[sm as usize] += 1);
    assert_eq!(per_sm, [3; 15], "{got:?}");
}

#[test]
fn a_dispatch_by_units_is_read_from_a_configuration_and_checked() {
    let cfg = |dispatch: &str| {
        GpuConfig::from_toml_str(
            &format!("base = \"gtx480\"\n[sm.dispatch]\n{dispatch}\n"),
            "a.toml",
        )
    };
    let ok =
        cfg("units = [[0, 1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]\nextra = [13, 14]").unwrap();
    assert_eq!(ok.sm.dispatch.map(|d| d.extra), Some(vec![13, 14]));
    let e = cfg("units = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]]")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sm.dispatch") && e.contains("SM 14 is missing"),
        "{e}"
    );
    let e = cfg("units = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]]\nextra = [3]")
        .unwrap_err()
        .to_string();
    assert!(e.contains("extra names SM 3 a second time"), "{e}");
    let e = cfg("units = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15]]")
        .unwrap_err()
        .to_string();
    assert!(e.contains("SM 15, but sm.count is 15"), "{e}");
    let both = GpuConfig::from_toml_str(
        "base = \"gtx480\"\n[sm]\ndispatch_order = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]\n\
         [sm.dispatch]\nunits = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]]\n",
        "a.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(both.contains("set one"), "{both}");
}
