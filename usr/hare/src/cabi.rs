//! What a `no_std` library inside a C program needs: the message as C lays it out, the C
//! allocator as Rust's, and a panic that reports and aborts.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_int, c_void};
use core::fmt::Write;

use msg::{Message, PAYLOAD};

/// `struct reef_msg` of `usr/reef_msg.h`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CMsg {
    /// The protocol's tag.
    pub tag: u16,
    /// Payload bytes used.
    pub len: u8,
    /// `REEF_MSG_FLAG_GRANT`.
    pub flags: u8,
    /// The payload.
    pub data: [u8; PAYLOAD],
}

impl CMsg {
    /// The message, or `None` if its length is past the payload or it is a grant (no Hare
    /// message is).
    pub fn to_message(self) -> Option<Message> {
        if self.flags != 0 {
            return None;
        }
        Message::new(self.tag, self.data.get(..usize::from(self.len))?).ok()
    }

    /// The C form of `m`.
    pub fn from_message(m: &Message) -> Self {
        let b = m.bytes();
        let mut data = [0; PAYLOAD];
        data[..b.len()].copy_from_slice(b);
        CMsg {
            tag: m.tag,
            len: b.len() as u8,
            flags: 0,
            data,
        }
    }
}

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn aligned_alloc(align: usize, size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
    fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
    fn abort() -> !;
}

/// musl's allocator.
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

#[global_allocator]
static ALLOC: Libc = Libc;

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
    let _ = writeln!(line, "hare: bug: {info}");
    // SAFETY: `line.buf` holds `line.len` initialized bytes; abort ends the process.
    unsafe {
        write(2, line.buf.as_ptr().cast(), line.len);
        abort()
    }
}

/// Referenced by the prebuilt `alloc` for unwinding; this library aborts on panic, so it is
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
