//! Elph's own heap: one malloc arena for the whole process.
//!
//! glibc gives a thread that allocates while another thread holds the shared arena an arena of
//! its own (up to eight per CPU): a 64 MiB reservation whose first pages become resident, and
//! whose freed memory is kept for that thread. Elph's threads (the async runtime's workers, the
//! run log's writer, the sandbox's probe, the terminal's reader) rarely allocate at the same
//! moment, and little when they do, so the extra arenas bought no speed a user could feel, only
//! resident memory (docs/building.md, "Size and memory", has the figures).

/// Makes every thread of this process allocate from one arena. Call it first in `main`, before
/// any other thread starts. Does nothing where the C library is not glibc.
pub fn use_one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a parameter of glibc's allocator, under the allocator's own
    // lock; it reads and writes no memory of the caller's.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
