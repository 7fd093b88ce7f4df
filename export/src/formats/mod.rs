//! One file per format, each with its writer and its reader: the records and warps CSV
//! (`csv.rs`), Chrome Trace Event JSON (`chrome.rs`), CLOG2 (`clog2.rs`: the record layout;
//! `clog2_write.rs`: the writer; `clog2_read.rs`: the reader, feature `clog2-read`), Parquet
//! (`parquet.rs`, write only; behind the default-on feature `parquet`, which brings polars),
//! OTF2 (`otf2/`, write only, through the OTF2 library loaded at run time; the library's own
//! readers, `otf2-print` and the `otf2` Python module, read it back in the tests).

use trace::SiteInfo;

pub(crate) mod chrome;
pub(crate) mod clog2;
#[cfg(feature = "clog2-read")]
pub(crate) mod clog2_read;
pub(crate) mod clog2_write;
pub(crate) mod csv;
pub(crate) mod otf2;
#[cfg(feature = "parquet")]
pub(crate) mod parquet;

/// A site's name on a timeline: its own, or `site N` for a site without one, which a viewer
/// would otherwise list as a nameless row.
pub(crate) fn site_label(site: &SiteInfo) -> String {
    if site.name.is_empty() {
        format!("site {}", site.id)
    } else {
        site.name.clone()
    }
}
