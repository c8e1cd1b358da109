//! `lib/hare` behind a C ABI, for the C programs that run Hare on Reef: the file server
//! `hared` (a fleet member: Reef's mailboxes and grants are its C runtime's, `usr/hare.h`)
//! and the client test `haretest` (a client library instance per process, its transport the
//! C side's connections). Declared in `usr/hare.h`; a static library linked by musl-gcc.
//!
//! The state machines are `lib/hare`'s, unchanged: this crate only decodes and encodes
//! messages, drives the client's futures to completion and reaches the buffer cache, a
//! shared mapping the C side gives it.

#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

// The C allocator, the panic handler and the unwinding symbols.
use reef_cabi as _;

mod cabi;

// usr/hare.h repeats this bound for hared's reply rings.
const _: () = assert!(
    hare::wire::IN_FLIGHT == 8,
    "update HARE_IN_FLIGHT in usr/hare.h"
);

mod client;
mod server;
