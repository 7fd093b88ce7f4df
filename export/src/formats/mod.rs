//! One file per format, each with its writer and its reader: the records and warps CSV
//! (`csv.rs`), Chrome Trace Event JSON (`chrome.rs`), CLOG2 (`clog2.rs`: the record layout;
//! `clog2_write.rs`: the writer; `clog2_read.rs`: the reader, feature `clog2-read`), Parquet
//! (`parquet.rs`, write only; behind the default-on feature `parquet`, which brings polars).

pub(crate) mod chrome;
pub(crate) mod clog2;
#[cfg(feature = "clog2-read")]
pub(crate) mod clog2_read;
pub(crate) mod clog2_write;
pub(crate) mod csv;
#[cfg(feature = "parquet")]
pub(crate) mod parquet;
