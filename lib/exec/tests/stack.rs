//! Building the initial stack and decoding it back.

use abi::Errno;
use exec::{auxv::*, AuxInfo, ExecError, Executable, InitialStack, MAX_ARG_BYTES, USER_END};
use std::collections::HashMap;

const FIXTURE: &[u8] = include_bytes!("data/hello-static");
const TOP: u64 = 0x7fff_ffff_f000;
const RANDOM: [u8; 16] = [0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf];

fn aux() -> AuxInfo {
    let exe = Executable::parse(FIXTURE).unwrap();
    let mut aux = AuxInfo::new(&exe, RANDOM);
    aux.uid = 1000;
    aux.euid = 1001;
    aux.gid = 100;
    aux.egid = 101;
    aux.hwcap = 0x178b_fbff;
    aux.hwcap2 = 2;
    aux
}

/// The stack as the new program sees it: reads go through user addresses.
struct View<'a> {
    top: u64,
    s: &'a InitialStack,
}

impl View<'_> {
    fn byte(&self, addr: u64) -> u8 {
        assert!(
            addr >= self.s.rsp && addr < self.top,
            "{addr:#x} outside the stack"
        );
        self.s.bytes[(addr - self.s.rsp) as usize]
    }
    fn word(&self, addr: u64) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|i| self.byte(addr + i as u64)))
    }
    fn cstr(&self, mut addr: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while self.byte(addr) != 0 {
            out.push(self.byte(addr));
            addr += 1;
        }
        out
    }
}

/// What a C runtime's `_start` reads from `rsp`.
struct Decoded {
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    auxv: Vec<(u64, u64)>,
}

fn decode(top: u64, s: &InitialStack) -> Decoded {
    let v = View { top, s };
    assert_eq!(s.rsp % 16, 0, "rsp must be 16-byte aligned at entry");
    assert_eq!(s.bytes.len() as u64, top - s.rsp);
    let mut p = s.rsp;
    let argc = v.word(p);
    p += 8;
    let argv: Vec<Vec<u8>> = (0..argc).map(|i| v.cstr(v.word(p + 8 * i))).collect();
    p += 8 * argc;
    assert_eq!(v.word(p), 0, "argv is NULL-terminated");
    p += 8;
    assert_eq!(p, s.envp_addr);
    let mut envp = Vec::new();
    while v.word(p) != 0 {
        envp.push(v.cstr(v.word(p)));
        p += 8;
    }
    p += 8;
    assert_eq!(p, s.auxv_addr);
    let mut auxv = Vec::new();
    loop {
        let (k, val) = (v.word(p), v.word(p + 8));
        auxv.push((k, val));
        p += 16;
        if k == AT_NULL {
            break;
        }
    }
    Decoded { argv, envp, auxv }
}

#[test]
fn decodes_back_to_its_inputs() {
    let argv: [&[u8]; 3] = [b"/bin/hello", b"-x", b"two words"];
    let envp: [&[u8]; 2] = [b"PATH=/bin:/usr/bin", b"HOME=/"];
    let s = InitialStack::build(TOP, &argv, &envp, b"/bin/hello", &aux()).unwrap();
    let d = decode(TOP, &s);
    assert_eq!(s.argc, 3);
    assert_eq!(d.argv, argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
    assert_eq!(d.envp, envp.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
    assert_eq!(d.auxv, s.auxv);

    let map: HashMap<u64, u64> = d.auxv.iter().copied().collect();
    assert_eq!(map.len(), d.auxv.len(), "no key twice");
    assert_eq!(map[&AT_PHDR], 0x400040);
    assert_eq!(map[&AT_PHENT], 56);
    assert_eq!(map[&AT_PHNUM], 7);
    assert_eq!(map[&AT_PAGESZ], 4096);
    assert_eq!(map[&AT_BASE], 0);
    assert_eq!(map[&AT_FLAGS], 0);
    assert_eq!(map[&AT_ENTRY], 0x40105a);
    assert_eq!(map[&AT_UID], 1000);
    assert_eq!(map[&AT_EUID], 1001);
    assert_eq!(map[&AT_GID], 100);
    assert_eq!(map[&AT_EGID], 101);
    assert_eq!(map[&AT_SECURE], 0);
    assert_eq!(map[&AT_HWCAP], 0x178b_fbff);
    assert_eq!(map[&AT_HWCAP2], 2);
    assert_eq!(map[&AT_CLKTCK], 100);
    assert!(!map.contains_key(&AT_SYSINFO_EHDR));
    assert_eq!(d.auxv.len(), 19);

    let v = View { top: TOP, s: &s };
    let random: Vec<u8> = (0..16).map(|i| v.byte(map[&AT_RANDOM] + i)).collect();
    assert_eq!(random, RANDOM);
    assert_eq!(map[&AT_RANDOM], s.random_addr);
    assert_eq!(v.cstr(map[&AT_EXECFN]), b"/bin/hello");
    assert_eq!(v.cstr(map[&AT_PLATFORM]), b"x86_64");

    // Strings sit above the pointer tables, contiguous, in order, with the end marker on top.
    let strings: Vec<u8> = (s.arg_start..s.arg_end).map(|a| v.byte(a)).collect();
    assert_eq!(strings, b"/bin/hello\0-x\0two words\0");
    let env: Vec<u8> = (s.env_start..s.env_end).map(|a| v.byte(a)).collect();
    assert_eq!(env, b"PATH=/bin:/usr/bin\0HOME=/\0");
    assert_eq!(s.env_end, s.execfn_addr);
    assert_eq!(s.execfn_addr + 11 + 8, TOP);
    assert!((TOP - 8..TOP).all(|a| v.byte(a) == 0));
    assert!(s.random_addr + 16 <= s.platform_addr);
    assert!(s.platform_addr + 7 <= s.arg_start);
    assert!(s.auxv_addr + 16 * s.auxv.len() as u64 <= s.random_addr);
}

#[test]
fn alignment_holds_for_every_string_length() {
    for len in 0..48usize {
        for envc in 0..3usize {
            let arg = vec![b'a'; len];
            let envs: Vec<Vec<u8>> = (0..envc).map(|i| vec![b'e'; i + len]).collect();
            let envp: Vec<&[u8]> = envs.iter().map(|e| &e[..]).collect();
            let s = InitialStack::build(TOP, &[b"p", &arg], &envp, b"p", &aux()).unwrap();
            let d = decode(TOP, &s);
            assert_eq!(d.argv[1], arg);
            assert_eq!(d.envp, envs);
        }
    }
}

#[test]
fn empty_argv_gets_an_empty_argv0() {
    let s = InitialStack::build(TOP, &[], &[], b"/bin/x", &aux()).unwrap();
    let d = decode(TOP, &s);
    assert_eq!(s.argc, 1);
    assert_eq!(d.argv, vec![Vec::<u8>::new()]);
    assert!(d.envp.is_empty());
}

#[test]
fn vdso_address_comes_first() {
    let mut a = aux();
    a.sysinfo_ehdr = Some(0x7fff_f7ff_d000);
    let s = InitialStack::build(TOP, &[b"x"], &[], b"x", &a).unwrap();
    assert_eq!(decode(TOP, &s).auxv[0], (AT_SYSINFO_EHDR, 0x7fff_f7ff_d000));
}

#[test]
fn loader_base_and_signal_stack_size() {
    let mut a = aux();
    a.base = 0x7f00_1234_5000;
    a.sysinfo_ehdr = Some(0x7fff_f7ff_d000);
    a.minsigstksz = Some(1088);
    let s = InitialStack::build(TOP, &[b"x"], &[], b"x", &a).unwrap();
    let d = decode(TOP, &s);
    assert_eq!(d.auxv[1], (AT_MINSIGSTKSZ, 1088));
    let map: HashMap<u64, u64> = d.auxv.iter().copied().collect();
    assert_eq!(map[&AT_BASE], 0x7f00_1234_5000);
    assert_eq!(map[&AT_ENTRY], a.entry);
    // Without a size, no AT_MINSIGSTKSZ.
    let s = InitialStack::build(TOP, &[b"x"], &[], b"x", &aux()).unwrap();
    assert!(decode(TOP, &s)
        .auxv
        .iter()
        .all(|&(k, _)| k != AT_MINSIGSTKSZ));
}

#[test]
fn auxv_order_follows_the_host_kernel() {
    // Linux writes its auxv in create_elf_tables order; ours must be a subsequence of it.
    let Ok(raw) = std::fs::read("/proc/self/auxv") else {
        println!("skipped: /proc/self/auxv not readable");
        return;
    };
    let host: Vec<u64> = raw
        .chunks_exact(16)
        .map(|c| u64::from_le_bytes(c[..8].try_into().unwrap()))
        .collect();
    let mut a = aux();
    a.minsigstksz = Some(2048);
    let s = InitialStack::build(TOP, &[b"x"], &[], b"x", &a).unwrap();
    let ours: Vec<u64> = s
        .auxv
        .iter()
        .map(|&(k, _)| k)
        .filter(|k| host.contains(k))
        .collect();
    let host_common: Vec<u64> = host.iter().copied().filter(|k| ours.contains(k)).collect();
    assert!(ours.len() >= 15, "host auxv shares too few keys: {host:?}");
    assert_eq!(ours, host_common);
}

#[test]
fn argument_size_limit() {
    // One argument "x" (2 bytes) plus an environment string filling the rest exactly.
    let fill = vec![b'e'; MAX_ARG_BYTES - 2 - 1];
    let s = InitialStack::build(TOP, &[b"x"], &[&fill], b"x", &aux()).unwrap();
    assert_eq!(decode(TOP, &s).envp[0], fill);
    let over = vec![b'e'; MAX_ARG_BYTES - 2];
    let e = InitialStack::build(TOP, &[b"x"], &[&over], b"x", &aux()).unwrap_err();
    assert_eq!(
        e,
        ExecError::ArgumentsTooLong {
            size: MAX_ARG_BYTES + 1,
            max: MAX_ARG_BYTES
        }
    );
    assert_eq!(e.to_errno(), Errno::E2BIG);
    // Many empty arguments count their terminators.
    let many: Vec<&[u8]> = vec![b""; MAX_ARG_BYTES + 1];
    let e = InitialStack::build(TOP, &many, &[], b"x", &aux()).unwrap_err();
    assert_eq!(e.to_errno(), Errno::E2BIG);
}

#[test]
fn nul_bytes_are_rejected() {
    let a = aux();
    assert_eq!(
        InitialStack::build(TOP, &[b"ok", b"b\0d"], &[], b"x", &a),
        Err(ExecError::NulInString {
            what: "argument",
            index: 1
        })
    );
    assert_eq!(
        InitialStack::build(TOP, &[b"ok"], &[b"A=\0"], b"x", &a),
        Err(ExecError::NulInString {
            what: "environment string",
            index: 0
        })
    );
    let e = InitialStack::build(TOP, &[b"ok"], &[], b"x\0", &a).unwrap_err();
    assert_eq!(
        e,
        ExecError::NulInString {
            what: "execfn",
            index: 0
        }
    );
    assert_eq!(e.to_errno(), Errno::EINVAL);
}

#[test]
fn execfn_length_limit() {
    let name = vec![b'n'; 4095];
    assert!(InitialStack::build(TOP, &[b"x"], &[], &name, &aux()).is_ok());
    let name = vec![b'n'; 4096];
    let e = InitialStack::build(TOP, &[b"x"], &[], &name, &aux()).unwrap_err();
    assert_eq!(e, ExecError::ExecfnTooLong { len: 4096 });
    assert_eq!(e.to_errno(), Errno::ENAMETOOLONG);
}

#[test]
fn bad_stack_tops() {
    let a = aux();
    for top in [TOP + 8, TOP - 1, USER_END + 16, !15u64, 0, 0x1_0100] {
        let e = InitialStack::build(top, &[b"x"], &[], b"x", &a).unwrap_err();
        assert_eq!(e, ExecError::BadStackTop { top }, "{top:#x}");
        assert_eq!(e.to_errno(), Errno::EINVAL);
    }
    // USER_END itself is a valid (exclusive) top, and so is a low one with room to spare.
    for top in [USER_END, 0x2_0000] {
        let s = InitialStack::build(top, &[b"x"], &[], b"x", &a).unwrap();
        assert_eq!(decode(top, &s).argv, vec![b"x".to_vec()]);
    }
}
