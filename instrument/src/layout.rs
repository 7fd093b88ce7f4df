//! The probe log's structures as tables: each field's offset and width from the header's
//! constants (`kernels::layout`, generated from `kernels/warpscope.cuh`), with its name and
//! meaning. The decoder names header fields through [`HEADER`], and the reference page
//! (`docs/reference/logs.md`) is rendered from [`LOG_LAYOUT`], so neither can drift from the
//! header's offsets.

use kernels::layout as L;

/// One field of a structure of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutField {
    /// Byte offset from the structure's start.
    pub offset: u32,
    /// Width in bytes (little-endian unsigned integers).
    pub bytes: u32,
    pub name: &'static str,
    pub meaning: &'static str,
}

/// One structure of the log: where it lies in the buffer, its size and its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutStruct {
    pub name: &'static str,
    /// Its size in bytes; fields not listed are zero.
    pub bytes: u32,
    /// Where it lies in the buffer and who writes it, in words.
    pub place: &'static str,
    pub fields: &'static [LayoutField],
}

const fn field(offset: u32, bytes: u32, name: &'static str, meaning: &'static str) -> LayoutField {
    LayoutField {
        offset,
        bytes,
        name,
        meaning,
    }
}

/// The header, written by the host before the launch; the decoder checks every field.
pub const HEADER: LayoutStruct = LayoutStruct {
    name: "header",
    bytes: L::WS_LOG_HEADER_BYTES,
    place: "at offset 0; written by the host before the launch, never by the kernel",
    fields: &[
        field(L::WS_HDR_MAGIC_OFFSET, 4, "magic", "`0x57534C47` (`WSLG`)"),
        field(
            L::WS_HDR_VERSION_OFFSET,
            4,
            "version",
            "the layout's version",
        ),
        field(
            L::WS_HDR_MODE_OFFSET,
            4,
            "mode",
            "probe mode (`WS_MODE`: 0 off, 1 naive, 2 fence, 3 dummy, 4 auto)",
        ),
        field(
            L::WS_HDR_KIND_OFFSET,
            4,
            "kind",
            "0: every warp traced; 1: per-site statistics, and the selected warps traced",
        ),
        field(
            L::WS_HDR_SLOTS_OFFSET,
            4,
            "slots",
            "records each traced warp can keep",
        ),
        field(L::WS_HDR_N_WARPS_OFFSET, 4, "n_warps", "warps in the grid"),
        field(
            L::WS_HDR_RECORD_BYTES_OFFSET,
            4,
            "record_bytes",
            "size of a trace record",
        ),
        field(
            L::WS_HDR_WARP_HEADER_BYTES_OFFSET,
            4,
            "warp_header_bytes",
            "size of a warp header",
        ),
        field(
            L::WS_HDR_SITES_OFFSET,
            4,
            "sites",
            "entries of each warp's site table",
        ),
        field(
            L::WS_HDR_N_TRACED_OFFSET,
            4,
            "n_traced",
            "traced warps: trace areas after the warp areas",
        ),
    ],
};

/// A warp's header, the start of its warp area.
pub const WARP_HEADER: LayoutStruct = LayoutStruct {
    name: "warp header",
    bytes: L::WS_WARP_HEADER_BYTES,
    place: "warp area i at `header + i × (warp_header_bytes + sites × 16)`, i = linear block × warps per block + warp in block; the kernel keeps it in shared memory and copies it out at `WS_KERNEL_END`",
    fields: &[
        field(
            L::WS_WH_BEGIN_OFFSET,
            8,
            "begin",
            "the warp's clock at `WS_KERNEL_BEGIN`",
        ),
        field(
            L::WS_WH_END_OFFSET,
            8,
            "end",
            "the warp's clock at `WS_KERNEL_END`",
        ),
        field(
            L::WS_WH_SMID_OFFSET,
            4,
            "smid",
            "the SM it ran on (`%smid`)",
        ),
        field(
            L::WS_WH_WARPID_OFFSET,
            4,
            "warpid",
            "its hardware warp slot (`%warpid`)",
        ),
        field(
            L::WS_WH_COUNT_OFFSET,
            4,
            "count",
            "trace records attempted, kept and dropped (0 for an untraced warp)",
        ),
        field(
            L::WS_WH_FLAGS_OFFSET,
            4,
            "flags",
            "bit 0: `WS_KERNEL_END` ran",
        ),
        field(
            L::WS_WH_TRACE_OFFSET,
            4,
            "trace",
            "written by the host: the warp's trace area, or `0xFFFFFFFF` when it is not traced",
        ),
        field(
            L::WS_WH_DROPPED_SITES_OFFSET,
            4,
            "dropped_sites",
            "accesses at sites outside the site table",
        ),
        field(
            L::WS_WH_UNTIMED_OFFSET,
            4,
            "untimed",
            "written by the host: 1 when the warp takes the bare path (times nothing; its site table stays empty), 0 when it times its accesses. A sampled build copies it back with bit 1 set (2 or 3), which tells the host that the build samples; a build that times every warp does not read it, and the word it writes back means nothing",
        ),
    ],
};

/// One entry of a warp's site table, after its header.
pub const SITE_SUMMARY: LayoutStruct = LayoutStruct {
    name: "site summary",
    bytes: L::WS_SUMMARY_SITE_BYTES,
    place: "`sites` entries after each warp header, entry s for site s",
    fields: &[
        field(
            L::WS_SUM_COUNT_OFFSET,
            4,
            "count",
            "accesses timed at this site (0 in an untimed warp)",
        ),
        field(
            L::WS_SUM_MIN_OFFSET,
            4,
            "min",
            "the shortest, in cycles (the host writes `0xFFFFFFFF`)",
        ),
        field(L::WS_SUM_MAX_OFFSET, 4, "max", "the longest, in cycles"),
        field(
            L::WS_SUM_SUM_OFFSET,
            4,
            "sum",
            "their cycles, modulo 2³² (the decoder widens it with count, min and max)",
        ),
    ],
};

/// One record of a traced warp.
pub const TRACE_RECORD: LayoutStruct = LayoutStruct {
    name: "trace record",
    bytes: L::WS_RECORD_BYTES,
    place: "trace area t at `header + n_warps × (warp_header_bytes + sites × 16) + t × slots × 16`, one per traced warp, `slots` records each",
    fields: &[
        field(
            L::WS_REC_START_OFFSET,
            4,
            "start",
            "the clock's low 32 bits before the access (widened against the warp's `begin`)",
        ),
        field(
            L::WS_REC_DURATION_OFFSET,
            4,
            "duration",
            "cycles from `start` to the closing clock read",
        ),
        field(L::WS_REC_SITE_OFFSET, 4, "site", "the access's site id"),
    ],
};

/// Every structure of the log, in buffer order.
pub const LOG_LAYOUT: [LayoutStruct; 4] = [HEADER, WARP_HEADER, SITE_SUMMARY, TRACE_RECORD];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lie_in_order_inside_their_structure_without_overlap() {
        for s in LOG_LAYOUT {
            let mut end = 0;
            for f in s.fields {
                assert!(
                    f.offset >= end,
                    "{}.{} overlaps the field before",
                    s.name,
                    f.name
                );
                assert!(f.bytes == 4 || f.bytes == 8, "{}.{}", s.name, f.name);
                end = f.offset + f.bytes;
            }
            assert!(
                end <= s.bytes,
                "{}: fields end at {end}, past {}",
                s.name,
                s.bytes
            );
        }
        assert_eq!(HEADER.fields[0].offset, 0);
    }
}
