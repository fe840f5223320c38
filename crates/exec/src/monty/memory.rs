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
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU32, AtomicUsize, Ordering};

use monty_types::{BASELINE_MEMORY, LIVE_MEMORY};

use super::whole_process;

/// The slot of every block a self-worker allocates (see `whole_process`).
const WHOLE_PROCESS_SLOT: u32 = u32::MAX;

/// Number of per-session slots; slot 0 means "not counted".
const SLOTS: usize = 1024;

/// Bytes requested by Monty per slot (signed: a slot may be refunded by a late free
/// after its number was recycled, which keeps the sum right).
static SLOT_LIVE: [AtomicIsize; SLOTS] = [const { AtomicIsize::new(0) }; SLOTS];
static NEXT_SLOT: AtomicU32 = AtomicU32::new(1);

/// Set for a slot whose run was frozen: its bytes stay, so it is never handed out again.
static SLOT_FROZEN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// Set for a slot whose run was frozen at the hard ceiling (see [`set_hard_ceiling`]).
static SLOT_AT_CEILING: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// Bytes all Monty threads together may hold; `usize::MAX` until the engine sets it.
static HARD_CEILING: AtomicUsize = AtomicUsize::new(usize::MAX);

thread_local! {
    /// The slot this thread charges right now (0 = outside Monty).
    static CURRENT_SLOT: Cell<u32> = const { Cell::new(0) };
    /// How deep this thread is inside the system allocator (a freeze must wait).
    static IN_SYSTEM_ALLOCATOR: Cell<u32> = const { Cell::new(0) };
    /// A freeze was asked for while this thread could not stop at once.
    static FREEZE_REQUESTED: Cell<bool> = const { Cell::new(false) };
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
    if slot == WHOLE_PROCESS_SLOT {
        return;
    }
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
    if slot == WHOLE_PROCESS_SLOT {
        return;
    }
    SLOT_LIVE[slot as usize % SLOTS].fetch_sub(bytes as isize, Ordering::Relaxed);
}

/// Reads the slot stored just below a user pointer.
///
/// # Safety
/// `user` must have been returned by [`CountingAllocator`].
unsafe fn read_slot(user: *mut u8) -> u32 {
    // SAFETY: the caller guarantees `user` came from this allocator, so the 4 bytes below it are our slot.
    unsafe { user.sub(4).cast::<u32>().read_unaligned() }
}

/// # Safety
/// `user` must point at least 4 bytes into a block we allocated.
unsafe fn write_slot(user: *mut u8, slot: u32) {
    // SAFETY: the caller guarantees `user` is at least 4 bytes into our block.
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
        // SAFETY: `alloc` is forwarded with the same layout; `alloc_with` upholds GlobalAlloc's contract.
        unsafe { self.alloc_with(layout, false) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { self.alloc_with(layout, true) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some((full, header)) = full_layout(layout) else {
            return;
        };
        // SAFETY: `ptr` came from this allocator with `layout`, so it is `header` bytes into a System block of `full`.
        unsafe {
            refund(read_slot(ptr), layout.size());
            {
                let _inside = SystemAllocatorCall::enter();
                System.dealloc(ptr.sub(header), full);
            }
        }
        codemcp_base::process::note_freed(full.size());
        freeze_if_requested();
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some((full, header)) = full_layout(layout) else {
            return null_mut();
        };
        let Some(new_total) = new_size.checked_add(header) else {
            return null_mut();
        };
        let slot = current_slot();
        let growing = Block {
            user: ptr,
            size: layout.size(),
        };
        before_growth(slot, new_size.saturating_sub(layout.size()), Some(growing));
        // SAFETY: as for `dealloc`; the grown block keeps the same header in front of the user pointer.
        unsafe {
            let old_slot = read_slot(ptr);
            let raw = {
                let _inside = SystemAllocatorCall::enter();
                System.realloc(ptr.sub(header), full, new_total)
            };
            if raw.is_null() {
                return out_of_memory(slot, new_size);
            }
            if raw != ptr.sub(header) {
                codemcp_base::process::note_freed(full.size());
            }
            let user = raw.add(header);
            refund(old_slot, layout.size());
            charge(slot, new_size);
            write_slot(user, slot);
            freeze_if_requested();
            user
        }
    }
}

impl CountingAllocator {
    unsafe fn alloc_with(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let Some((full, header)) = full_layout(layout) else {
            return null_mut();
        };
        let slot = current_slot();
        before_growth(slot, layout.size(), None);
        // SAFETY: `full` is non-zero sized (it includes the header); the user pointer is `header` bytes in.
        unsafe {
            let raw = {
                let _inside = SystemAllocatorCall::enter();
                if zeroed {
                    System.alloc_zeroed(full)
                } else {
                    System.alloc(full)
                }
            };
            if raw.is_null() {
                return out_of_memory(slot, layout.size());
            }
            let user = raw.add(header);
            write_slot(user, slot);
            charge(slot, layout.size());
            freeze_if_requested();
            user
        }
    }
}

/// A block a `realloc` is growing: `size` bytes at `user`.
struct Block {
    user: *mut u8,
    size: usize,
}

/// Stops an allocation of `growth` more bytes that would pass its limit: the
/// in-process hard ceiling, or a self-worker's whole-process limit.
fn before_growth(slot: u32, growth: usize, growing: Option<Block>) {
    match slot {
        0 => {}
        WHOLE_PROCESS_SLOT => whole_process::before_growth(growth),
        _ => stop_at_ceiling(slot, growth, growing),
    }
}

/// What a failed system allocation returns: null (Rust then aborts), except
/// in a self-worker, which exits the way monty-pool reads as `MemoryError`.
fn out_of_memory(slot: u32, bytes: usize) -> *mut u8 {
    if slot == WHOLE_PROCESS_SLOT {
        whole_process::allocation_failed(bytes);
    }
    null_mut()
}

/// Marks a call into the system allocator, where a thread may hold malloc's
/// locks and must not freeze.
struct SystemAllocatorCall;

impl SystemAllocatorCall {
    fn enter() -> Self {
        let _ = IN_SYSTEM_ALLOCATOR.try_with(|d| d.set(d.get() + 1));
        Self
    }
}

impl Drop for SystemAllocatorCall {
    fn drop(&mut self) {
        let _ = IN_SYSTEM_ALLOCATOR.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// A Monty thread asked to freeze while it was inside the system allocator
/// freezes on its way out, its accounting done.
fn freeze_if_requested() {
    if current_slot() != 0 && FREEZE_REQUESTED.try_with(Cell::get).unwrap_or(false) {
        freeze_current_thread();
    }
}

/// A Monty allocation of `growth` more bytes would take every in-process run
/// together past the hard ceiling: Monty's own checks missed it (one builtin
/// growing a buffer), an allocation cannot fail safely and no exception can be
/// raised from here, so the thread freezes before allocating. Its supervisor
/// sees the flag and answers `MemoryError`.
///
/// The block being grown (a builtin's result buffer: most of what the run
/// holds, 245 MiB of the escape corpus's `''.join`) is given back first.
fn stop_at_ceiling(slot: u32, growth: usize, growing: Option<Block>) {
    let ceiling = HARD_CEILING.load(Ordering::Relaxed);
    if LIVE_MEMORY.load(Ordering::Relaxed).saturating_add(growth) > ceiling {
        if let Some(block) = growing {
            give_back_abandoned(block);
        }
        SLOT_AT_CEILING[slot as usize % SLOTS].store(true, Ordering::SeqCst);
        freeze_current_thread();
    }
}

/// Gives the pages of `block` back to the OS and refunds its bytes, on a
/// thread about to freeze for good. Nothing reads the block again: `realloc`
/// means its caller owns it alone, and that caller is this thread, which never
/// runs on. The block is never freed (the thread never returns), so the
/// refund is never made twice; only its address range stays reserved.
fn give_back_abandoned(block: Block) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = (block.user as usize).next_multiple_of(page);
    let end = (block.user as usize + block.size) / page * page;
    if end <= start {
        return;
    }
    // SAFETY: [start, end) lies inside the caller's block (allocator
    // metadata sits before it); its contents become zero pages, which
    // nothing reads (see above).
    let given_back =
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) == 0 };
    if given_back {
        // SAFETY: `block.user` came from this allocator (it is being reallocated).
        refund(unsafe { read_slot(block.user) }, block.size);
    }
}

/// Parks the calling thread for good without using CPU. Only ever called where
/// the thread holds no lock: inside Monty, outside the system allocator.
pub fn freeze_current_thread() -> ! {
    loop {
        // SAFETY: pause is async-signal-safe and has no preconditions.
        unsafe {
            libc::pause();
        }
    }
}

/// Whether a freeze signal may stop this thread right where it is.
pub fn executing_monty_outside_allocator() -> bool {
    current_slot() != 0 && IN_SYSTEM_ALLOCATOR.try_with(Cell::get).unwrap_or(1) == 0
}

/// Asks this thread to freeze at its next allocation inside Monty.
pub fn request_freeze() {
    let _ = FREEZE_REQUESTED.try_with(|f| f.set(true));
}

pub fn cancel_freeze_request() {
    let _ = FREEZE_REQUESTED.try_with(|f| f.set(false));
}

/// Stops counting a frozen run's bytes against the budget Monty checks (they
/// can never be freed) while the hard ceiling, which reads the raw total,
/// still sees them. Returns the bytes written off.
pub fn write_off(slot: SessionSlot) -> usize {
    SLOT_FROZEN[slot.0 as usize % SLOTS].store(true, Ordering::SeqCst);
    let bytes = slot.live_bytes();
    BASELINE_MEMORY.fetch_add(bytes, Ordering::SeqCst);
    bytes
}

/// Undoes part of a write-off: the abandoned run's thread freed `bytes` after all.
pub fn take_back_write_off(bytes: usize) {
    let _ = BASELINE_MEMORY.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
        Some(v.saturating_sub(bytes))
    });
}

/// Sets the bytes all in-process Monty runs together may ever hold.
pub fn set_hard_ceiling(bytes: usize) {
    HARD_CEILING.store(bytes, Ordering::Relaxed);
}

fn current_slot() -> u32 {
    if whole_process::counting() {
        return WHOLE_PROCESS_SLOT;
    }
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
        let mut slot = Self::next();
        // Frozen slots keep their bytes for good; the engine retires long
        // before they could fill the table.
        for _ in 0..SLOTS {
            if !SLOT_FROZEN[slot.0 as usize].load(Ordering::SeqCst) {
                break;
            }
            slot = Self::next();
        }
        SLOT_AT_CEILING[slot.0 as usize].store(false, Ordering::SeqCst);
        slot
    }

    fn next() -> Self {
        let n = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
        Self(n % (SLOTS as u32 - 1) + 1)
    }

    /// Whether this slot's run froze at the hard ceiling.
    pub fn hit_ceiling(self) -> bool {
        SLOT_AT_CEILING[self.0 as usize % SLOTS].load(Ordering::SeqCst)
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
