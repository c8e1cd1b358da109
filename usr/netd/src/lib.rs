//! `lib/net`'s network server behind a C ABI, for `netd` (`usr/netd.c`), the process that owns
//! the shared NIC in server mode (LibrettOS §3.2). The C side attaches (`reef_netd`), which
//! maps the kernel's region and port table, and calls [`netd_serve`]; everything the server
//! decides is `net::server::Server`'s, the code the host tests run.

#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

// The C allocator, the panic handler and the unwinding symbols.
use reef_cabi as _;

use core::ffi::c_int;
use core::sync::atomic::Ordering;
use net::ring::Page;
use net::server::{AttachError, Server, PORT_PAGES, REGION_PAGES};

/// Frames taken from each ring per step.
const BUDGET: usize = 32;

/// Serves the region at `region` and the port table at `ports`, as `reef_netd(ATTACH)` mapped
/// them, until the process ends. It polls `spins` empty passes before it marks its rings and
/// sleeps, calling `pause()` between two: a frame that comes within that time costs the kernel
/// no wake-up (UMP's receivers poll the same way). On a core of its own `pause` is the CPU's
/// spin hint; on a shared one it yields the core (`sched_yield`), so the passes take only time
/// nobody else wants. `kick(mask)` asks the kernel to look at the rings of `mask`;
/// `wait(word, value)` sleeps while the 32-bit word at `word` holds `value` (a futex wait).
/// Returns only if the region is not one it can serve: -1 pages missing, -2 not a region,
/// -3 another layout version.
///
/// # Safety
/// `region` and `ports` must be the mappings `reef_netd(ATTACH)` made ([`REGION_PAGES`] and
/// [`PORT_PAGES`] pages), kept for the rest of the process.
#[no_mangle]
pub unsafe extern "C" fn netd_serve(
    region: *const Page,
    ports: *const Page,
    kick: extern "C" fn(u32) -> i64,
    wait: extern "C" fn(*const u32, u32) -> i64,
    spins: u32,
    pause: extern "C" fn(),
) -> c_int {
    // SAFETY: the caller hands the kernel's mappings of that many pages, which stay for the
    // process's life; a page is atomics, valid for any bytes and made to be shared.
    let region: &'static [Page] = unsafe { core::slice::from_raw_parts(region, REGION_PAGES) };
    // SAFETY: as above, for the port table (read-only: the server only loads from it).
    let ports: &'static [Page] = unsafe { core::slice::from_raw_parts(ports, PORT_PAGES) };
    let mut server = match Server::attach(region, ports) {
        Ok(s) => s,
        Err(AttachError::Short) => return -1,
        Err(AttachError::Magic) => return -2,
        Err(AttachError::Version) => return -3,
    };
    let Some(events) = server.control().events() else {
        return -1;
    };
    let hello = server.hello();
    if hello.kick != 0 {
        kick(hello.kick);
    }
    let mut idle = 0;
    loop {
        let step = server.step(BUDGET);
        if step.kick != 0 {
            kick(step.kick);
        }
        if step.moved > 0 {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle < spins {
            pause();
            continue;
        }
        idle = 0;
        let seen = events.load(Ordering::Acquire) as u32;
        if server.may_sleep() {
            // The word's low half (x86 is little-endian) is the futex.
            wait(events.as_ptr().cast::<u32>(), seen);
        }
    }
}
