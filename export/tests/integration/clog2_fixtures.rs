//! The genuine MPE-written CLOG2 files decode exactly, field by field.

use export::{Clog2Log, CommEntry, RecBody, RecHeader};

const MPE_REF: &[u8] = include_bytes!("../fixtures/mpe_ref.clog2");
const MPE_REF_MPI: &[u8] = include_bytes!("../fixtures/mpe_ref_mpi.clog2");

/// The processor name MPE put in every UUID ("vm", zero padded to 20 bytes).
fn vm() -> [u8; 20] {
    let mut n = [0u8; 20];
    n[..2].copy_from_slice(b"vm");
    n
}

fn h(time: f64, rank: i32) -> RecHeader {
    RecHeader {
        time,
        icomm: 0,
        rank,
        thread: 0,
    }
}

fn uuid(rand: i32, time: f64) -> export::Uuid {
    export::Uuid {
        rand,
        time,
        name: vm(),
    }
}

fn state(state_id: i32, start: i32, color: &str, name: &str, format: &str) -> RecBody {
    RecBody::StateDef {
        state_id,
        start_etype: start,
        final_etype: start + 1,
        color: color.into(),
        name: name.into(),
        format: format.into(),
    }
}

fn bare(etype: i32) -> RecBody {
    RecBody::Bare { etype }
}

fn cargo(etype: i32, first: u32) -> RecBody {
    let mut bytes = [0u8; 32];
    bytes[..4].copy_from_slice(&first.to_be_bytes());
    RecBody::Cargo { etype, bytes }
}

fn marker() -> RecBody {
    RecBody::EventDef {
        etype: 5000,
        color: "green".into(),
        name: "marker".into(),
        format: String::new(),
    }
}

fn write2disk() -> RecBody {
    state(280, 560, "maroon", "CLOG_Buffer_write2disk", "")
}

fn comm(etype: i32, icomm: i32, rank: i32, wrank: i32, gcomm: export::Uuid) -> RecBody {
    RecBody::Comm {
        etype,
        icomm,
        rank,
        wrank,
        gcomm,
    }
}

fn msg(etype: i32, rank: i32, size: i32) -> RecBody {
    RecBody::Msg {
        etype,
        icomm: 0,
        rank,
        tag: 7,
        size,
    }
}

fn check_preamble(log: &Clog2Log, ranks: i32, states: i32) {
    let p = &log.preamble;
    assert_eq!(p.version, "CLOG-02.44");
    assert_eq!(p.tokens[2], "TRUE ");
    assert_eq!(p.tokens[4], "TRUE ");
    assert!(p.is_big_endian && p.is_finalized);
    assert_eq!(p.block_size, 65536);
    assert_eq!(p.num_buffered_blocks, 128);
    assert_eq!(p.max_comm_world_size, ranks);
    assert_eq!(p.max_thread_count, 1);
    assert_eq!(p.known_event_id_start, 0);
    assert_eq!(p.user_event_id_start, 600);
    assert_eq!(p.known_solo_event_id_start, -10);
    assert_eq!(p.user_solo_event_id_start, 5000);
    assert_eq!(p.known_state_id_count, 300);
    assert_eq!(p.user_state_id_count, states);
    assert_eq!(p.known_solo_event_id_count, 0);
    assert_eq!(p.user_solo_event_id_count, 1);
    assert_eq!(
        p.tokens[29..],
        ["commtable_fptr=", "0", "1073741824", "66560"]
    );
    assert_eq!(p.commtable_fptr, 1024 + 65536);
}

#[test]
fn mpe_single_process_file_decodes_exactly() {
    let log = Clog2Log::read(MPE_REF).unwrap();
    check_preamble(&log, 1, 2);
    let (world, self0) = (
        uuid(986258797, 1795264598.414599),
        uuid(1003180682, 1795264598.414603),
    );
    let t_comm = 1.1920928955078125e-06;
    let t_def = 2.1457672119140625e-06;
    let expect: Vec<(RecHeader, RecBody)> = vec![
        (h(0.0, 0), RecBody::TimeShift { shift: -0.0 }),
        (h(t_comm, 0), comm(0, 0, 0, 0, world)),
        (h(t_comm, 0), comm(1, 1, 0, 0, self0)),
        (h(t_comm, 0), state(300, 600, "red", "compute", "")),
        (h(t_def, 0), state(301, 602, "blue", "io", "bytes=%d")),
        (h(t_def, 0), marker()),
        (h(4.100799560546875e-05, 0), bare(600)),
        (h(0.0011391639709472656, 0), bare(5000)),
        (h(0.0011391639709472656, 0), bare(601)),
        (h(0.0011401176452636719, 0), cargo(602, 1234)),
        (h(0.0017251968383789062, 0), bare(603)),
        (h(0.0017251968383789062, 0), bare(600)),
        (h(0.002808094024658203, 0), bare(5000)),
        (h(0.002808094024658203, 0), bare(601)),
        (h(0.0028090476989746094, 0), cargo(602, 1235)),
        (h(0.0033922195434570312, 0), bare(603)),
        (h(0.0033922195434570312, 0), msg(-101, 0, 64)),
        (h(0.0033922195434570312, 0), msg(-102, 0, 64)),
        (h(0.003409147262573242, 0), write2disk()),
        (h(1.0e8, 0), RecBody::EndLog),
    ];
    assert_eq!(log.records.len(), expect.len());
    for (i, (got, want)) in log.records.iter().zip(&expect).enumerate() {
        assert_eq!(got, want, "record {i}");
    }
    // The -0.0 time shift keeps its sign bit: the bytes were read, not guessed.
    let RecBody::TimeShift { shift } = log.records[0].1 else {
        unreachable!()
    };
    assert!(shift.is_sign_negative());
    assert_eq!(
        log.comm_table,
        vec![
            CommEntry {
                gcomm: world,
                local_id: 0,
                kind: 1
            },
            CommEntry {
                gcomm: self0,
                local_id: 1,
                kind: 1
            },
        ]
    );
}

#[test]
fn mpe_three_rank_file_decodes_exactly() {
    let log = Clog2Log::read(MPE_REF_MPI).unwrap();
    check_preamble(&log, 3, 1);
    let world = uuid(1777640007, 2335.501620588);
    let selfs = [
        uuid(3165221, 2335.501641269),
        uuid(1500190077, 2335.506190744),
        uuid(1222740148, 2335.513925764),
    ];
    let konst = |value: i32, name: &str| RecBody::ConstDef {
        etype: -201,
        value,
        name: name.into(),
    };
    let expect: Vec<(RecHeader, RecBody)> = vec![
        (
            h(8.709998837730382e-07, 0),
            RecBody::TimeShift { shift: -0.0 },
        ),
        (h(1.4620000001741573e-06, 0), comm(0, 0, 0, 0, world)),
        (h(1.6220001270994544e-06, 0), comm(1, 1, 0, 0, selfs[0])),
        (h(1.8129999261873309e-06, 0), konst(-1, "MPI_PROC_NULL")),
        (h(5.408000106399413e-06, 0), konst(-2, "MPI_ANY_SOURCE")),
        (h(5.517999852600042e-06, 0), konst(-1, "MPI_ANY_TAG")),
        (
            h(6.019000011292519e-06, 0),
            state(300, 600, "red", "compute", ""),
        ),
        (h(6.269000095926458e-06, 0), marker()),
        (h(6.830000074842246e-06, 0), bare(600)),
        (
            h(4.403449975143303e-05, 1),
            RecBody::TimeShift {
                shift: -4.2232499708916293e-05,
            },
        ),
        (h(4.450549977264018e-05, 1), comm(0, 0, 1, 1, world)),
        (h(4.4665499444818124e-05, 1), comm(1, 2, 0, 1, selfs[1])),
        (h(4.563749962471775e-05, 1), bare(600)),
        (
            h(7.254800016198715e-05, 2),
            RecBody::TimeShift {
                shift: -7.227700029943662e-05,
            },
        ),
        (h(7.294800002455304e-05, 2), comm(0, 0, 2, 2, world)),
        (h(7.3078000013993e-05, 2), comm(1, 3, 0, 2, selfs[2])),
        (h(7.32490000245889e-05, 2), bare(600)),
        (h(0.0010967409998556832, 0), bare(601)),
        (h(0.0010969509999085858, 0), msg(-101, 1, 4)),
        (h(0.001107576999856974, 0), bare(5000)),
        (h(0.001135667999733414, 0), write2disk()),
        (h(0.0021538614996643446, 1), bare(601)),
        (h(0.0021739714998147974, 1), msg(-102, 0, 4)),
        (h(0.0021741214995927294, 1), bare(5000)),
        (h(0.003836704000377722, 2), bare(601)),
        (h(0.0038369950000287645, 2), bare(5000)),
        (h(1.0e8, 0), RecBody::EndLog),
    ];
    assert_eq!(log.records.len(), expect.len());
    for (i, (got, want)) in log.records.iter().zip(&expect).enumerate() {
        assert_eq!(got, want, "record {i}");
    }
    // Entries merged in from other ranks are UNKNOWN (-1); local_ID equals the row index.
    let kinds: Vec<(i32, i32)> = log
        .comm_table
        .iter()
        .map(|e| (e.local_id, e.kind))
        .collect();
    assert_eq!(kinds, vec![(0, 1), (1, 1), (2, -1), (3, -1)]);
    let ids: Vec<_> = log.comm_table.iter().map(|e| e.gcomm).collect();
    assert_eq!(ids, [world, selfs[0], selfs[1], selfs[2]]);
}

#[test]
fn a_truncated_fixture_is_an_error_not_a_short_read() {
    for cut in [100, 1024 + 500, MPE_REF.len() - 10] {
        let e = Clog2Log::read(&MPE_REF[..cut]).unwrap_err().to_string();
        assert!(e.contains("CLOG2"), "{e}");
    }
}
