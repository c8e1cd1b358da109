//! Architecture layer. Reef supports x86-64 only; everything hardware-specific is below here.

mod x86_64;

pub use self::x86_64::*;
