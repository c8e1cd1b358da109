//! Errors returned by the allocator.

use core::fmt;

use crate::frame::{Frame, FrameSize};

/// Why an allocator operation failed. No operation panics on these conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// No free frame of class `size` is left on NUMA node `node`.
    OutOfMemory {
        /// Node that ran out of memory.
        node: usize,
        /// Class of the requested frame.
        size: FrameSize,
    },
    /// A frame was released to a cache of another node. The frame is handed back so the caller
    /// can release it to the right node; nothing was modified.
    ForeignFrame {
        /// Node of the cache the frame was released to.
        node: usize,
        /// The rejected frame (its [`Frame::node`] differs from `node`).
        frame: Frame,
    },
    /// A [`TCache`](crate::TCache) was used with the [`NCache`](crate::NCache) of another node.
    /// Nothing was modified.
    NodeMismatch {
        /// Node of the TCache.
        tcache: usize,
        /// Node of the NCache it was given.
        ncache: usize,
    },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::OutOfMemory { node, size } => {
                write!(f, "out of memory: no free {size} frame on node {node}")
            }
            AllocError::ForeignFrame { node, frame } => {
                write!(f, "{frame} released to a cache of node {node}")
            }
            AllocError::NodeMismatch { tcache, ncache } => {
                write!(
                    f,
                    "TCache of node {tcache} used with the NCache of node {ncache}"
                )
            }
        }
    }
}
