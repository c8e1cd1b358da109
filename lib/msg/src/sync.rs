//! The atomics of the channel, swapped for loom's instrumented ones under `--cfg loom`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64};

pub(crate) use core::sync::atomic::Ordering;
