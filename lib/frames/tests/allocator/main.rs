//! Host tests of the frame allocator, against a checked in-memory [`frames::FrameLinks`].

mod carve;
mod common;
mod ncache;
mod random;
mod tcache;
