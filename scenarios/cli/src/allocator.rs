//! The `idemsim` binary's allocator: mimalloc, asked the cheapest way for
//! what a run allocates most.
//!
//! `mimalloc::MiMalloc` asks for every block through mimalloc's aligned
//! entry point, which checks the alignment and the size class before it
//! takes the same free list as a plain allocation. Nearly every block a
//! run takes (a boxed message, a task, an event's string, a channel) is
//! small, with at most word alignment, which every mimalloc block has:
//! those go straight to `mi_malloc_small`. Anything larger or more
//! aligned goes through the aligned entry points as before.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// Blocks up to this size come from mimalloc's small pages
/// (`MI_SMALL_SIZE_MAX`: 128 words).
const SMALL_BYTES_MAX: usize = 128 * std::mem::size_of::<usize>();

/// Every mimalloc block is aligned to at least a word.
const WORD_ALIGN: usize = std::mem::align_of::<usize>();

/// mimalloc, with a fast path for small, word-aligned blocks.
pub struct Allocator;

fn small(layout: Layout) -> bool {
    layout.size() <= SMALL_BYTES_MAX && layout.align() <= WORD_ALIGN
}

// SAFETY: every block comes from mimalloc and goes back to `mi_free` (or
// `mi_realloc*`), which take blocks from any of its allocation functions;
// a small block is at least word-aligned, the most `small` lets through.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match small(layout) {
            true => unsafe { mi::mi_malloc_small(layout.size()) as *mut u8 },
            false => unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8 },
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match small(layout) {
            true => unsafe { mi::mi_zalloc_small(layout.size()) as *mut u8 },
            false => unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8 },
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match layout.align() <= WORD_ALIGN {
            true => unsafe { mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8 },
            false => unsafe { mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size class and alignment come back aligned, keep
    /// their contents through a reallocation, and zeroed blocks are zero.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 9, 24, 100, 1000, 1024, 1025, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = Allocator.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    std::ptr::write_bytes(p, 0xab, size);
                    let grown = Allocator.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown: size {size} align {align}");
                    assert!(std::slice::from_raw_parts(grown, size).iter().all(|&b| b == 0xab));
                    Allocator.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                    let z = Allocator.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    Allocator.dealloc(z, layout);
                }
            }
        }
    }
}
