//! The global allocator: mimalloc, asked the way its fast path wants.
//!
//! Why mimalloc: per-thread free lists without glibc's consolidation
//! passes. A request's small allocations (the CGI environment, a
//! WebAssembly store's tables, response heads) are freed on the thread
//! that made them, which is the case mimalloc is built for.
//!
//! Why not the `mimalloc` crate's `MiMalloc`: it passes every request to
//! `mi_malloc_aligned`, and mimalloc 3 takes its plain path there only for
//! blocks of at most 1 KiB that happen to be aligned; a larger one (a
//! boxed request future, a read buffer) goes through the generic aligned
//! path, and a size whose bin is not a power of two is over-allocated. A
//! FastCGI "Hello!" made 40 allocations and spent 2,900 instructions in
//! them (docs/PERFORMANCE.md, "Instructions per request"). Here a layout
//! that every mimalloc block of its size already satisfies goes to
//! `mi_malloc`, as std's `System` allocator does with `malloc`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc's guaranteed alignment (`MI_MAX_ALIGN_SIZE`). Its size classes
/// are whole words up to 8 words and even numbers of words above, and the
/// first block of a page is 16-aligned: a block for a size that is a
/// multiple of an alignment of at most 16 is aligned to it.
const NATURAL_ALIGN: usize = 16;

/// Whether `mi_malloc` of `size` is aligned to `align` (a power of two).
fn natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && size & (align - 1) == 0
}

/// mimalloc, with the unaligned entry points where they suffice.
pub(crate) struct Mimalloc;

#[allow(
    unsafe_code,
    reason = "a global allocator implements an unsafe trait over mimalloc's C functions"
)]
// SAFETY (for every method): mimalloc's functions take and return the
// pointers `GlobalAlloc` describes: `mi_malloc` and `mi_zalloc` return
// null or a block of at least `size` bytes aligned as `natural` says (see
// `NATURAL_ALIGN`), the `_aligned` variants one aligned to `align`;
// `mi_free` takes any block mimalloc returned, whichever function made
// it; `mi_realloc` and `mi_realloc_aligned` take such a block and keep its
// first bytes, with the new block aligned as the function says.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { new_block(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { new_block(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: see the impl.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        let p = if natural(new_size, align) {
            // SAFETY: see the impl.
            unsafe { mi::mi_realloc(ptr.cast(), new_size) }
        } else {
            // SAFETY: see the impl.
            unsafe { mi::mi_realloc_aligned(ptr.cast(), new_size, align) }
        };
        debug_assert_eq!(p as usize & (align - 1), 0);
        p.cast()
    }
}

/// A block for `layout` from `plain` when its size class is aligned
/// enough (see [`natural`]), else from `aligned`.
///
/// # Safety
/// `plain` and `aligned` are mimalloc's allocating functions of those
/// shapes (see the `GlobalAlloc` impl).
#[allow(unsafe_code, reason = "calls mimalloc's C functions")]
#[inline]
unsafe fn new_block(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    let (size, align) = (layout.size(), layout.align());
    let p = if natural(size, align) {
        // SAFETY: the caller's promise.
        unsafe { plain(size) }
    } else {
        // SAFETY: the caller's promise.
        unsafe { aligned(size, align) }
    };
    debug_assert_eq!(p as usize & (align - 1), 0);
    p.cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment a Rust type can have (sizes are multiples
    /// of their alignment), and layouts made by hand that are not: each
    /// block is aligned, holds its bytes, and keeps them through a realloc.
    #[test]
    #[allow(unsafe_code, reason = "the allocator's own calls, as std makes them")]
    fn blocks_are_aligned_and_hold_their_bytes() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1, 3, 8, 16, 24, 40, 48, 56, 100, 1000, 1024, 1040, 5000, 70_000,
            ] {
                let Ok(layout) = Layout::from_size_align(size, align) else {
                    continue;
                };
                // SAFETY: a layout of non-zero size; the block is used
                // within its size and freed once, with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xab, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xab));
                    let grown = Layout::from_size_align(size * 3, align).unwrap();
                    a.dealloc(q, grown);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
