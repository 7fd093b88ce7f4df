//! The crate's one integration-test binary: MPE fixtures, round trips through every format
//! (fixed and property-based), Perfetto's trace processor, OTF2's own readers, and bounded
//! memory at scale.

mod clog2_fixtures;
mod golden;
mod otf2;
#[cfg(feature = "parquet")]
mod parquet;
mod perfetto;
mod round_trip;
mod scale;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the heap bytes live on the current thread (and their peak), so that a test can
/// measure what an export allocates while other tests run on other threads.
struct ThreadCountingAlloc;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn account(delta: isize) {
    // try_with: the thread-local may already be gone while a thread shuts down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// A counting global allocator is unsafe by nature (GlobalAlloc's contract); it only forwards to
// System and keeps a thread-local tally.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for ThreadCountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: ThreadCountingAlloc = ThreadCountingAlloc;

/// Runs `f` and returns its value and the peak of heap bytes it had live on this thread above
/// what was live when it started.
pub fn peak_heap_bytes<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let v = f();
    let peak = PEAK.with(Cell::get);
    (v, (peak - base).max(0) as usize)
}
