//! The kernel command line.
//!
//! Words are separated by spaces. A word may be written in double quotes, inside which `\"` and
//! `\\` stand for `"` and `\`, so a word can hold spaces and quotes (`cargo xtask run` quotes
//! every word that needs it). Kernel options:
//! - `poweroff`: power the machine off (QEMU exits with status 0) once boot is complete and any
//!   self-test has passed (no init is started);
//! - `test=NAME`: run a kernel self-test after boot (see `selftest`);
//! - `acpidump`: print every ACPI table in hex (for debugging and for capturing test data);
//! - `norandmaps`: lay every program out at fixed addresses (no address-space layout
//!   randomization, as Linux's option of that name; see `vm::UserLayout`);
//! - `init=PATH ARG...`: the first program and its arguments. Every word after `init=PATH` is
//!   an argument of init (argv[1..]; argv[0] is PATH), so kernel options go before it. Without
//!   `init=`, Reef runs [`DEFAULT_INIT`].
//!
//! Unknown words are reported, not silently ignored; an unterminated quote is reported and the
//! rest of the line is taken as one word.

use alloc::string::String;
use alloc::vec::Vec;
use spin::Once;

/// The first program when the command line names none.
pub const DEFAULT_INIT: &str = "/bin/sh";

/// Parsed command line.
#[derive(Debug, Default)]
pub struct Config {
    /// `poweroff` was given.
    pub poweroff: bool,
    /// The self-test to run, from `test=NAME`.
    pub test: Option<String>,
    /// `acpidump` was given.
    pub acpidump: bool,
    /// `norandmaps` was given.
    pub norandmaps: bool,
    /// `nic_irq=N`: the NICs' interrupts go to core N instead of the boot core (their home,
    /// which a stop or park of N moves them away from and a start or unpark brings them back
    /// to: Barrelfish/DC §4.8).
    pub nic_irq: Option<usize>,
    /// `init=PATH` and the words after it (argv of init).
    pub init: Option<Vec<String>>,
    /// `root=hare` or `root=hare:LIST`: Hare is the root file system, its servers on the
    /// cores of LIST (default `0`), time-sharing them (`/bin/hareroot` starts them, mounts
    /// Hare over `/` with NR-FS's files copied in, and executes init there).
    pub hare_root: Option<String>,
    /// Words Reef does not know.
    pub unknown: Vec<String>,
    /// Problems with the line itself (an unterminated quote).
    pub errors: Vec<&'static str>,
}

/// The configuration [`init`] parsed.
static CONFIG: Once<Config> = Once::new();

/// Splits a command line into words, honouring double quotes with `\"` and `\\` escapes.
/// Returns the words and whether a quote was left open.
pub fn split(line: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if quoted => match chars.next() {
                Some(e @ ('"' | '\\')) => word.push(e),
                Some(other) => {
                    word.push('\\');
                    word.push(other);
                }
                None => word.push('\\'),
            },
            ' ' | '\t' | '\n' if !quoted => {
                if in_word {
                    words.push(core::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    (words, quoted)
}

/// The kernel configuration (the defaults before [`init`] has parsed the command line).
pub fn get() -> &'static Config {
    static DEFAULT: Config = Config {
        poweroff: false,
        test: None,
        acpidump: false,
        norandmaps: false,
        nic_irq: None,
        init: None,
        hare_root: None,
        unknown: Vec::new(),
        errors: Vec::new(),
    };
    CONFIG.get().unwrap_or(&DEFAULT)
}

/// Parses `line` and makes it the kernel configuration.
pub fn init(line: &str) -> &'static Config {
    CONFIG.call_once(|| {
        let mut config = Config::default();
        let (words, open_quote) = split(line);
        if open_quote {
            config.errors.push("unterminated double quote");
        }
        let mut words = words.into_iter();
        while let Some(word) = words.next() {
            match word.split_once('=') {
                None if word == "poweroff" => config.poweroff = true,
                None if word == "acpidump" => config.acpidump = true,
                None if word == "norandmaps" => config.norandmaps = true,
                Some(("test", name)) if !name.is_empty() => config.test = Some(name.into()),
                Some(("nic_irq", core)) if core.parse::<usize>().is_ok() => {
                    config.nic_irq = core.parse().ok();
                }
                Some(("root", "hare")) => config.hare_root = Some("0".into()),
                Some(("root", r)) if r.starts_with("hare:") && r.len() > 5 => {
                    config.hare_root = Some(r[5..].into());
                }
                Some(("init", path)) if !path.is_empty() => {
                    let mut argv = alloc::vec![String::from(path)];
                    argv.extend(words.by_ref());
                    config.init = Some(argv);
                }
                _ => config.unknown.push(word),
            }
        }
        config
    })
}
