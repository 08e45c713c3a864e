//! Tree-sitter's C allocations on mimalloc.
//!
//! A search makes and frees thousands of trees from every core, most
//! freed by another thread than the one that made them (the cache's
//! evictions, a staged rewrite's trees). Under glibc's malloc a quarter
//! of a warm search went to its bookkeeping (`malloc_consolidate`,
//! `_int_free`, arena locks); on mimalloc the same search takes 0.93 s
//! instead of 1.21–1.32 s, with 10% less peak memory (bench/ast.sh,
//! `$X.expect($Y)` after `$X.unwrap()` over 10,000 Rust files).
//!
//! Written here, not taken from the `mimalloc` crate, which replaces
//! Rust's global allocator: only tree-sitter's allocator is replaced, and
//! the rest of the process keeps the system allocator whose memory
//! figures the other benches report.

use std::ffi::c_void;

/// Points tree-sitter's allocations at mimalloc.
///
/// # Safety
///
/// Call it first in `main`, before a thread starts and before anything in
/// the process uses tree-sitter (a pattern compiled, a file parsed): a
/// tree made by one allocator and freed by the other corrupts the heap.
pub unsafe fn use_mimalloc_for_trees() {
    // SAFETY: one allocator family, none returns null (each aborts
    // instead, as tree-sitter's own default does), mimalloc aligns like
    // malloc; the caller promises no tree-sitter object exists yet and no
    // other thread runs.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc,
            calloc,
            realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
}

unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: any size is valid for mi_malloc.
    or_abort(unsafe { libmimalloc_sys::mi_malloc(size) }, size)
}

unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: mi_calloc checks `count * size` for overflow itself.
    or_abort(
        unsafe { libmimalloc_sys::mi_calloc(count, size) },
        count.saturating_mul(size),
    )
}

unsafe extern "C" fn realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: tree-sitter only reallocates what this allocator gave it.
    or_abort(unsafe { libmimalloc_sys::mi_realloc(pointer, size) }, size)
}

/// Tree-sitter cannot recover from a failed allocation (its own default
/// aborts too): out of memory ends the process, with a word why.
fn or_abort(pointer: *mut c_void, size: usize) -> *mut c_void {
    if pointer.is_null() && size > 0 {
        eprintln!("gantry: out of memory: tree-sitter asked for {size} bytes");
        std::process::abort();
    }
    pointer
}
