//! Memory accounting for the in-process Monty engine.
//!
//! Monty 1.4.0 enforces `max_memory` against one process-global counter,
//! `monty_types::LIVE_MEMORY`, that nothing feeds unless the host does. We feed it
//! from our own global allocator with only the bytes that Monty-executing threads
//! allocate: a thread marks itself with a [`MemoryScope`] while it runs Monty, and
//! every block carries a small header naming the session slot it was charged to,
//! so a free on any thread refunds exactly what was charged.
//!
//! The counter is one pool shared by every in-process session (Monty reads a single
//! global); per-slot counters keep each session's own bytes visible so a
//! `MemoryError` caused by a neighbour can be reported as collateral.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicIsize, AtomicU32, Ordering};

use monty_types::{BASELINE_MEMORY, LIVE_MEMORY};

/// Number of per-session slots; slot 0 means "not counted".
const SLOTS: usize = 1024;

/// Bytes requested by Monty per slot (signed: a slot may be refunded by a late free
/// after its number was recycled, which keeps the sum right).
static SLOT_LIVE: [AtomicIsize; SLOTS] = [const { AtomicIsize::new(0) }; SLOTS];
static NEXT_SLOT: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// The slot this thread charges right now (0 = outside Monty).
    static CURRENT_SLOT: Cell<u32> = const { Cell::new(0) };
}

/// The global allocator of the codemcp binary: `System` plus a per-block header.
pub struct CountingAllocator;

/// Header size for a layout: at least 16 bytes and a multiple of the alignment,
/// so `raw + header` keeps the caller's alignment.
fn header_size(layout: Layout) -> usize {
    layout.align().max(16)
}

fn charge(slot: u32, bytes: usize) {
    if slot == 0 {
        return;
    }
    LIVE_MEMORY.fetch_add(bytes, Ordering::Relaxed);
    SLOT_LIVE[slot as usize % SLOTS].fetch_add(bytes as isize, Ordering::Relaxed);
}

fn refund(slot: u32, bytes: usize) {
    if slot == 0 {
        return;
    }
    // Saturating: a counter must never wrap even if accounting were ever off.
    let _ = LIVE_MEMORY.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(bytes))
    });
    SLOT_LIVE[slot as usize % SLOTS].fetch_sub(bytes as isize, Ordering::Relaxed);
}

/// Reads the slot stored just below a user pointer.
///
/// # Safety
/// `user` must have been returned by [`CountingAllocator`].
unsafe fn read_slot(user: *mut u8) -> u32 {
    unsafe { user.sub(4).cast::<u32>().read_unaligned() }
}

/// # Safety
/// `user` must point at least 4 bytes into a block we allocated.
unsafe fn write_slot(user: *mut u8, slot: u32) {
    unsafe { user.sub(4).cast::<u32>().write_unaligned(slot) }
}

fn full_layout(layout: Layout) -> Option<(Layout, usize)> {
    let header = header_size(layout);
    let total = layout.size().checked_add(header)?;
    Layout::from_size_align(total, layout.align())
        .ok()
        .map(|l| (l, header))
}

// SAFETY: every block handed out is `header` bytes into a `System` block of the
// enlarged layout; dealloc/realloc recompute the same header from the same layout.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { self.alloc_with(layout, false) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { self.alloc_with(layout, true) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some((full, header)) = full_layout(layout) else {
            return;
        };
        unsafe {
            refund(read_slot(ptr), layout.size());
            System.dealloc(ptr.sub(header), full);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some((full, header)) = full_layout(layout) else {
            return null_mut();
        };
        let Some(new_total) = new_size.checked_add(header) else {
            return null_mut();
        };
        unsafe {
            let old_slot = read_slot(ptr);
            let raw = System.realloc(ptr.sub(header), full, new_total);
            if raw.is_null() {
                return raw;
            }
            let user = raw.add(header);
            let slot = current_slot();
            refund(old_slot, layout.size());
            charge(slot, new_size);
            write_slot(user, slot);
            user
        }
    }
}

impl CountingAllocator {
    unsafe fn alloc_with(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let Some((full, header)) = full_layout(layout) else {
            return null_mut();
        };
        unsafe {
            let raw = if zeroed {
                System.alloc_zeroed(full)
            } else {
                System.alloc(full)
            };
            if raw.is_null() {
                return raw;
            }
            let user = raw.add(header);
            let slot = current_slot();
            write_slot(user, slot);
            charge(slot, layout.size());
            user
        }
    }
}

fn current_slot() -> u32 {
    // `try_with`: during thread teardown the slot may be gone; count nothing then.
    CURRENT_SLOT.try_with(Cell::get).unwrap_or(0)
}

/// Marks the current thread as executing Monty for one session slot.
///
/// `!Send` on purpose: holding it across an `.await` would charge other tasks'
/// allocations to this session, and the compiler now refuses that.
pub struct MemoryScope {
    previous: u32,
    _not_send: PhantomData<*const ()>,
}

impl MemoryScope {
    pub fn enter(slot: SessionSlot) -> Self {
        let previous = CURRENT_SLOT.with(|s| s.replace(slot.0));
        Self {
            previous,
            _not_send: PhantomData,
        }
    }
}

impl Drop for MemoryScope {
    fn drop(&mut self) {
        CURRENT_SLOT.with(|s| s.set(self.previous));
    }
}

/// A session's accounting slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSlot(u32);

impl SessionSlot {
    /// Hands out slots round-robin; with far more slots than live sessions a
    /// reused number has long been refunded.
    pub fn allocate() -> Self {
        let n = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
        Self(n % (SLOTS as u32 - 1) + 1)
    }

    /// Bytes currently charged to this slot.
    pub fn live_bytes(self) -> usize {
        SLOT_LIVE[self.0 as usize % SLOTS]
            .load(Ordering::Relaxed)
            .max(0) as usize
    }
}

/// Bytes charged to all in-process Monty sessions together: what Monty compares
/// with `max_memory`.
pub fn total_live_bytes() -> usize {
    LIVE_MEMORY.load(Ordering::Relaxed)
}

/// Switches Monty's incremental memory checks on: it measures
/// `LIVE_MEMORY - BASELINE_MEMORY`, and the baseline starts at `usize::MAX`.
pub fn enable_accounting() {
    BASELINE_MEMORY.store(0, Ordering::Relaxed);
}
