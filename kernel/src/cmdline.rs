//! The kernel command line.
//!
//! Words, separated by spaces:
//! - `poweroff`: power the machine off (QEMU exits with status 0) once boot is complete and any
//!   self-test has passed;
//! - `test=NAME`: run a kernel self-test after boot (see `selftest`);
//! - `acpidump`: print every ACPI table in hex (for debugging and for capturing test data).
//!
//! Unknown words are reported, not silently ignored.

use alloc::string::String;
use alloc::vec::Vec;
use spin::Once;

/// Parsed command line.
#[derive(Debug, Default)]
pub struct Config {
    /// `poweroff` was given.
    pub poweroff: bool,
    /// The self-test to run, from `test=NAME`.
    pub test: Option<String>,
    /// `acpidump` was given.
    pub acpidump: bool,
    /// Words Reef does not know.
    pub unknown: Vec<String>,
}

static CONFIG: Once<Config> = Once::new();

/// Parses `line` and makes it the kernel configuration.
pub fn init(line: &str) -> &'static Config {
    CONFIG.call_once(|| {
        let mut config = Config::default();
        for word in line.split_ascii_whitespace() {
            match word.split_once('=') {
                None if word == "poweroff" => config.poweroff = true,
                None if word == "acpidump" => config.acpidump = true,
                Some(("test", name)) if !name.is_empty() => config.test = Some(name.into()),
                _ => config.unknown.push(word.into()),
            }
        }
        config
    })
}
