//! The initial process stack of a Linux x86-64 program, laid out as Linux's `create_elf_tables`
//! (fs/binfmt_elf.c) and `copy_strings` (fs/exec.c) lay it out.
//!
//! From the stack top downwards:
//!
//! ```text
//! stack_top  ->  8 zero bytes (end marker)
//!                AT_EXECFN string
//!                environment strings (envp[0] lowest)
//!                argument strings (argv[0] lowest)      <- arg_start
//!                padding to 16 bytes
//!                "x86_64\0" (AT_PLATFORM)
//!                16 random bytes (AT_RANDOM)
//!                padding so that rsp is 16-byte aligned
//!                auxv pairs, ending with (AT_NULL, 0)
//!                NULL, envp[envc-1] .. envp[0]
//!                NULL, argv[argc-1] .. argv[0]
//!       rsp  ->  argc
//! ```
//!
//! Linux additionally moves the stack down by a random amount of up to 8 KiB when address
//! randomisation is on; a caller that wants that passes a lower `stack_top`.

use crate::elf::Executable;
use crate::{ExecError, MAX_ARG_BYTES, MAX_EXECFN_LEN, MIN_USER_ADDR, PAGE_SIZE, USER_END};
use alloc::vec::Vec;

/// Auxiliary-vector keys (`AT_*` from Linux's `include/uapi/linux/auxvec.h` and
/// `arch/x86/include/uapi/asm/auxvec.h`).
pub mod auxv {
    /// End of the vector.
    pub const AT_NULL: u64 = 0;
    /// Address of the program headers in memory.
    pub const AT_PHDR: u64 = 3;
    /// Size of one program header.
    pub const AT_PHENT: u64 = 4;
    /// Number of program headers.
    pub const AT_PHNUM: u64 = 5;
    /// Page size.
    pub const AT_PAGESZ: u64 = 6;
    /// Base address of the interpreter (0: none).
    pub const AT_BASE: u64 = 7;
    /// Flags (0).
    pub const AT_FLAGS: u64 = 8;
    /// The program's entry point.
    pub const AT_ENTRY: u64 = 9;
    /// Real user id.
    pub const AT_UID: u64 = 11;
    /// Effective user id.
    pub const AT_EUID: u64 = 12;
    /// Real group id.
    pub const AT_GID: u64 = 13;
    /// Effective group id.
    pub const AT_EGID: u64 = 14;
    /// Address of the platform string.
    pub const AT_PLATFORM: u64 = 15;
    /// CPU capabilities (CPUID leaf 1, EDX, on x86).
    pub const AT_HWCAP: u64 = 16;
    /// Frequency of `times()` ticks.
    pub const AT_CLKTCK: u64 = 17;
    /// Secure mode (setuid-like execution).
    pub const AT_SECURE: u64 = 23;
    /// Address of 16 random bytes.
    pub const AT_RANDOM: u64 = 25;
    /// More CPU capabilities.
    pub const AT_HWCAP2: u64 = 26;
    /// Address of the file name passed to `execve`.
    pub const AT_EXECFN: u64 = 31;
    /// Address of the vDSO's ELF header.
    pub const AT_SYSINFO_EHDR: u64 = 33;
    /// The least stack a signal handler's frame needs.
    pub const AT_MINSIGSTKSZ: u64 = 51;
}

/// The platform string `AT_PLATFORM` points to.
const PLATFORM: &[u8] = b"x86_64\0";
/// Linux's `USER_HZ`, reported as `AT_CLKTCK`.
const CLOCK_TICKS: u64 = 100;

/// The values of the auxiliary vector that vary between programs and processes.
///
/// The fixed ones are filled in by [`InitialStack::build`]: `AT_PAGESZ` 4096, `AT_FLAGS` 0, `AT_CLKTCK` 100, `AT_SECURE` 0, and the addresses of the random
/// bytes, the platform string "x86_64" and the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuxInfo {
    /// `AT_PHDR`: address of the program headers in memory (0 if they are not loaded).
    pub phdr: u64,
    /// `AT_PHENT`: size of one program header.
    pub phent: u64,
    /// `AT_PHNUM`: number of program headers.
    pub phnum: u64,
    /// `AT_ENTRY`: the program's entry point.
    pub entry: u64,
    /// `AT_BASE`: where the dynamic loader was loaded (0: none).
    pub base: u64,
    /// `AT_UID`.
    pub uid: u64,
    /// `AT_EUID`.
    pub euid: u64,
    /// `AT_GID`.
    pub gid: u64,
    /// `AT_EGID`.
    pub egid: u64,
    /// The 16 bytes `AT_RANDOM` points to (the C library seeds its stack protector and pointer
    /// guard from them, so they should come from a real random source).
    pub random: [u8; 16],
    /// `AT_HWCAP`: on x86, the EDX word of CPUID leaf 1.
    pub hwcap: u64,
    /// `AT_HWCAP2`: on x86, bit 0 `RING3MWAIT`, bit 1 `FSGSBASE`.
    pub hwcap2: u64,
    /// `AT_SYSINFO_EHDR`: the vDSO's address, emitted (first, as in Linux) only if present.
    pub sysinfo_ehdr: Option<u64>,
    /// `AT_MINSIGSTKSZ`: the bytes of stack the kernel's signal frame takes, emitted (after
    /// `AT_SYSINFO_EHDR`, as in Linux) only if given.
    pub minsigstksz: Option<u64>,
}

impl AuxInfo {
    /// The auxiliary values for `exe`, with ids, capabilities and vDSO left at 0/`None`.
    pub fn new(exe: &Executable, random: [u8; 16]) -> AuxInfo {
        AuxInfo {
            phdr: exe.phdr_addr().unwrap_or(0),
            phent: u64::from(exe.phent()),
            phnum: u64::from(exe.phnum()),
            entry: exe.entry(),
            base: 0,
            uid: 0,
            euid: 0,
            gid: 0,
            egid: 0,
            random,
            hwcap: 0,
            hwcap2: 0,
            sysinfo_ehdr: None,
            minsigstksz: None,
        }
    }
}

/// A built initial stack: copy [`InitialStack::bytes`] to `rsp .. stack_top` in the new address
/// space and start the program with `rsp` = [`InitialStack::rsp`].
///
/// The other fields locate the parts of the stack for the kernel (for example
/// `/proc/PID/cmdline` needs `arg_start..arg_end`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialStack {
    /// The initial stack pointer: 16-byte aligned, pointing at `argc`.
    pub rsp: u64,
    /// The stack contents from `rsp` up to the stack top.
    pub bytes: Vec<u8>,
    /// The number of arguments (at least 1: an empty `argv` gets `""` as `argv[0]`, as in
    /// Linux since 5.18).
    pub argc: usize,
    /// Address of `argv[0]` (the pointer array).
    pub argv_addr: u64,
    /// Address of `envp[0]` (the pointer array).
    pub envp_addr: u64,
    /// Address of the first auxv pair.
    pub auxv_addr: u64,
    /// The auxv pairs as written, ending with `(AT_NULL, 0)`.
    pub auxv: Vec<(u64, u64)>,
    /// First byte of the argument strings.
    pub arg_start: u64,
    /// End of the argument strings (exclusive; the byte after the last NUL).
    pub arg_end: u64,
    /// First byte of the environment strings.
    pub env_start: u64,
    /// End of the environment strings (exclusive).
    pub env_end: u64,
    /// Address of the `AT_EXECFN` string.
    pub execfn_addr: u64,
    /// Address of the `AT_PLATFORM` string.
    pub platform_addr: u64,
    /// Address of the 16 `AT_RANDOM` bytes.
    pub random_addr: u64,
}

/// Total bytes of a list of strings with their NUL terminators, rejecting embedded NULs.
fn strings_size(list: &[&[u8]], what: &'static str) -> Result<usize, ExecError> {
    let mut size = 0usize;
    for (index, s) in list.iter().enumerate() {
        if s.contains(&0) {
            return Err(ExecError::NulInString { what, index });
        }
        size = size.saturating_add(s.len()).saturating_add(1);
    }
    Ok(size)
}

/// The stack being filled, addressed by user virtual addresses.
struct Image {
    base: u64,
    bytes: Vec<u8>,
}

impl Image {
    /// Writes `data` at user address `addr`; the layout computation guarantees
    /// `base <= addr` and `addr + data.len() <= base + bytes.len()`.
    fn put(&mut self, addr: u64, data: &[u8]) {
        let at = (addr - self.base) as usize;
        self.bytes[at..at + data.len()].copy_from_slice(data);
    }

    fn put_word(&mut self, addr: u64, value: u64) {
        self.put(addr, &value.to_le_bytes());
    }

    /// Writes `list`'s strings from `addr` up and each one's address at `ptrs` up.
    fn put_strings(&mut self, mut addr: u64, list: &[&[u8]], ptrs: u64) {
        for (i, s) in list.iter().enumerate() {
            self.put_word(ptrs + 8 * i as u64, addr);
            self.put(addr, s);
            // The byte after the string is already 0.
            addr += s.len() as u64 + 1;
        }
    }
}

impl InitialStack {
    /// Builds the initial stack for a program whose stack ends at `stack_top` (exclusive,
    /// 16-byte aligned, at most [`USER_END`]).
    ///
    /// `argv` and `envp` are the strings without their NUL terminators; together (counting one
    /// NUL each) they may take at most [`MAX_ARG_BYTES`]. `execfn` is the file name `AT_EXECFN`
    /// points to (the path given to `execve`), at most [`MAX_EXECFN_LEN`] bytes. No string may
    /// contain a NUL byte.
    pub fn build(
        stack_top: u64,
        argv: &[&[u8]],
        envp: &[&[u8]],
        execfn: &[u8],
        aux: &AuxInfo,
    ) -> Result<InitialStack, ExecError> {
        let empty_argv: [&[u8]; 1] = [b""];
        let argv = if argv.is_empty() {
            &empty_argv[..]
        } else {
            argv
        };
        let arg_size = strings_size(argv, "argument")?;
        let env_size = strings_size(envp, "environment string")?;
        let total = arg_size.saturating_add(env_size);
        if total > MAX_ARG_BYTES {
            return Err(ExecError::ArgumentsTooLong {
                size: total,
                max: MAX_ARG_BYTES,
            });
        }
        if execfn.len() > MAX_EXECFN_LEN {
            return Err(ExecError::ExecfnTooLong { len: execfn.len() });
        }
        if execfn.contains(&0) {
            return Err(ExecError::NulInString {
                what: "execfn",
                index: 0,
            });
        }
        let bad_top = ExecError::BadStackTop { top: stack_top };
        if stack_top % 16 != 0 || stack_top > USER_END {
            return Err(bad_top);
        }

        // Addresses, top down. All sizes are bounded (a few hundred KiB at most), so only the
        // subtractions from `stack_top` can fail.
        let sub = |a: u64, n: u64| a.checked_sub(n).ok_or(bad_top.clone());
        let execfn_addr = sub(stack_top, 8 + execfn.len() as u64 + 1)?;
        let env_start = sub(execfn_addr, env_size as u64)?;
        let arg_start = sub(env_start, arg_size as u64)?;
        let platform_addr = sub(arg_start & !15, PLATFORM.len() as u64)?;
        let random_addr = sub(platform_addr, 16)?;

        let mut auxv: Vec<(u64, u64)> = Vec::with_capacity(22);
        if let Some(vdso) = aux.sysinfo_ehdr {
            auxv.push((auxv::AT_SYSINFO_EHDR, vdso));
        }
        if let Some(size) = aux.minsigstksz {
            auxv.push((auxv::AT_MINSIGSTKSZ, size));
        }
        auxv.extend_from_slice(&[
            (auxv::AT_HWCAP, aux.hwcap),
            (auxv::AT_PAGESZ, PAGE_SIZE),
            (auxv::AT_CLKTCK, CLOCK_TICKS),
            (auxv::AT_PHDR, aux.phdr),
            (auxv::AT_PHENT, aux.phent),
            (auxv::AT_PHNUM, aux.phnum),
            (auxv::AT_BASE, aux.base),
            (auxv::AT_FLAGS, 0),
            (auxv::AT_ENTRY, aux.entry),
            (auxv::AT_UID, aux.uid),
            (auxv::AT_EUID, aux.euid),
            (auxv::AT_GID, aux.gid),
            (auxv::AT_EGID, aux.egid),
            (auxv::AT_SECURE, 0),
            (auxv::AT_RANDOM, random_addr),
            (auxv::AT_HWCAP2, aux.hwcap2),
            (auxv::AT_EXECFN, execfn_addr),
            (auxv::AT_PLATFORM, platform_addr),
            (auxv::AT_NULL, 0),
        ]);

        // argc, argv[] + NULL, envp[] + NULL, auxv pairs.
        let words = 1 + (argv.len() + 1) + (envp.len() + 1) + 2 * auxv.len();
        let rsp = sub(random_addr, words as u64 * 8)? & !15;
        if rsp < MIN_USER_ADDR {
            return Err(bad_top);
        }
        let argv_addr = rsp + 8;
        let envp_addr = argv_addr + (argv.len() as u64 + 1) * 8;
        let auxv_addr = envp_addr + (envp.len() as u64 + 1) * 8;

        let size = (stack_top - rsp) as usize;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(size)
            .map_err(|_| ExecError::OutOfMemory { bytes: size })?;
        bytes.resize(size, 0);
        let mut image = Image { base: rsp, bytes };
        image.put_strings(arg_start, argv, argv_addr);
        image.put_strings(env_start, envp, envp_addr);
        image.put(execfn_addr, execfn);
        image.put(platform_addr, PLATFORM);
        image.put(random_addr, &aux.random);
        image.put_word(rsp, argv.len() as u64);
        for (i, &(key, value)) in auxv.iter().enumerate() {
            image.put_word(auxv_addr + 16 * i as u64, key);
            image.put_word(auxv_addr + 16 * i as u64 + 8, value);
        }

        Ok(InitialStack {
            rsp,
            bytes: image.bytes,
            argc: argv.len(),
            argv_addr,
            envp_addr,
            auxv_addr,
            auxv,
            arg_start,
            arg_end: env_start,
            env_start,
            env_end: execfn_addr,
            execfn_addr,
            platform_addr,
            random_addr,
        })
    }
}
