//! The per-record table's columns, shared by every exporter that writes one row per record (the
//! records CSV and the Parquet file), so the two cannot drift apart.

/// One row per record, in this order: `launch`, the block index (`block_x`, `block_y`,
/// `block_z`), `warp` (within its block), `global_warp`, `sm`, `hw_warp`, `site`, `site_name`,
/// `region`, `seq`, `start`, `end`, `duration` (0 when the clock wrapped), `mode`, `wrapped`.
pub const RECORD_COLUMNS: [&str; 17] = [
    "launch",
    "block_x",
    "block_y",
    "block_z",
    "warp",
    "global_warp",
    "sm",
    "hw_warp",
    "site",
    "site_name",
    "region",
    "seq",
    "start",
    "end",
    "duration",
    "mode",
    "wrapped",
];
