//! What a `no_std` Rust library inside a musl-linked C program needs, shared by the static
//! libraries `usr/hare` (linked into `hared` and `haretest`) and `usr/netd` (into `netd`):
//! a global allocator (`talc`, taking 1 MiB blocks from the C allocator), a panic that reports on standard error (with
//! the program's name) and aborts, and the unwinding symbols the prebuilt `core` and `alloc`
//! refer to (the libraries are built with `panic = "abort"`, so they are never called).
//! A library links this crate with `use reef_cabi as _;`.

#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_char, c_int, c_void, CStr};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};
use talc::lock_api::{GuardSend, RawMutex};
use talc::source::GlobalAllocSource;
use talc::sync::TalcLock;
use talc::DefaultBinning;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn aligned_alloc(align: usize, size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
    fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
    fn abort() -> !;
    /// musl's (and glibc's) name of the running program, without its directory.
    static program_invocation_short_name: *const c_char;
}

/// musl's allocator, which gives the Rust allocator its blocks.
#[derive(Debug)]
struct Libc;

// SAFETY: malloc and aligned_alloc return memory of at least `size` bytes aligned as asked
// (malloc: 16, enough for any layout of alignment 16 or less), or null; free takes what they
// returned.
unsafe impl GlobalAlloc for Libc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: plain C calls; aligned_alloc's size is rounded up to its alignment, as C11
        // asks.
        unsafe {
            if l.align() <= 16 {
                malloc(l.size()).cast()
            } else {
                aligned_alloc(l.align(), l.size().next_multiple_of(l.align())).cast()
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
        // SAFETY: `p` came from `alloc`.
        unsafe { free(p.cast()) }
    }
}

/// The lock of the Rust allocator: a flag taken by spinning. The programs that link these
/// libraries run one thread, so it is never contended; it keeps the allocator sound if one
/// ever runs more.
struct Spin(AtomicBool);

// SAFETY: `lock` returns only once it has turned the flag from false to true (acquiring what
// the last holder released), `try_lock` likewise or not at all, and `unlock` turns it back
// with release ordering: one holder at a time.
unsafe impl RawMutex for Spin {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Spin = Spin(AtomicBool::new(false));
    type GuardMarker = GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            core::hint::spin_loop();
        }
    }

    fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Rust's allocator: `talc` (a well-kept `no_std` allocator, the kernel's too) over 1 MiB
/// blocks of musl's. musl's own `malloc` took a third of `hared`'s time when it lists a
/// directory, an allocation per name (docs/results.md).
#[global_allocator]
static ALLOC: TalcLock<Spin, GlobalAllocSource<Libc>, DefaultBinning> =
    TalcLock::new(GlobalAllocSource::new(Libc));

/// A panic message, cut to fit.
struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut line = Line {
        buf: [0; 256],
        len: 0,
    };
    // SAFETY: libc sets the name before `main` to a NUL-terminated string that lives as long
    // as the program; it is only read.
    let name = unsafe { program_invocation_short_name };
    let name = if name.is_null() {
        "program"
    } else {
        // SAFETY: as above: a NUL-terminated string of the C library.
        unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("program")
    };
    let _ = writeln!(line, "{name}: bug: {info}");
    // SAFETY: `line.buf` holds `line.len` initialized bytes; abort ends the process.
    unsafe {
        write(2, line.buf.as_ptr().cast(), line.len);
        abort()
    }
}

/// Referenced by the prebuilt `alloc` for unwinding; the libraries abort on panic, so it is
/// never called.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

/// Referenced by the prebuilt `core` and `alloc` for unwinding; never called with
/// `panic = "abort"`. Defined here so that the link does not take libgcc's unwinder, which
/// needs glibc.
#[no_mangle]
pub extern "C" fn _Unwind_Resume() -> ! {
    // SAFETY: ends the process.
    unsafe { abort() }
}
