#!/usr/bin/env python3
"""Regenerates src/syscalls.rs and src/errno.rs from the Linux UAPI headers of the build machine
(Debian's linux-libc-dev). Run from lib/abi: python3 generate.py"""
import re

names = {}
for l in open('/usr/include/x86_64-linux-gnu/asm/unistd_64.h'):
    m = re.match(r'#define __NR_(\w+) (\d+)', l)
    if m:
        names[int(m.group(2))] = m.group(1)
errs = []
aliases = []
for f in ['/usr/include/asm-generic/errno-base.h', '/usr/include/asm-generic/errno.h']:
    for l in open(f):
        m = re.match(r'#define\s+(E\w+)\s+(\d+)\s*/\*\s*(.*?)\s*\*/', l)
        if m:
            errs.append((m.group(1), int(m.group(2)), m.group(3)))
        m = re.match(r'#define\s+(E\w+)\s+(E\w+)\s*(/\*.*)?$', l)
        if m:
            aliases.append((m.group(1), m.group(2)))

out = ["//! Linux x86-64 syscall numbers and names (generated once from the kernel UAPI header\n"
       "//! `asm/unistd_64.h` of Linux 6.1 by `lib/abi/generate.py`; the ABI never renumbers).\n",
       "/// Number of the highest syscall Linux defines, plus one.",
       "pub const SYSCALL_LIMIT: usize = %d;\n" % (max(names) + 1)]
for n in sorted(names):
    out.append("/// `%s`" % names[n])
    out.append("pub const SYS_%s: usize = %d;" % (names[n].upper(), n))
out.append("\n/// The name of syscall `nr`, if Linux defines it.")
out.append("pub fn name(nr: usize) -> Option<&'static str> {")
out.append("    Some(match nr {")
for n in sorted(names):
    out.append('        %d => "%s",' % (n, names[n]))
out.append("        _ => return None,\n    })\n}")
open('src/syscalls.rs', 'w').write("\n".join(out) + "\n")

e = ["//! Linux error numbers (generated once from `asm-generic/errno-base.h` and `errno.h` of Linux\n"
     "//! 6.1 by `lib/abi/generate.py`).\n",
     "use core::fmt;\n",
     "/// A Linux error number (positive; syscalls return it negated).",
     "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]",
     "pub struct Errno(pub i32);\n",
     "impl Errno {"]
for (n, v, d) in errs:
    e.append("    /// %s" % d)
    e.append("    pub const %s: Errno = Errno(%d);" % (n, v))
for (a, b) in aliases:
    e.append("    /// Same as [`Errno::%s`]." % b)
    e.append("    pub const %s: Errno = Errno::%s;" % (a, b))
e.append("\n    /// The symbolic name (`ENOENT`), or `None` for a number Linux does not define.")
e.append("    pub fn name(self) -> Option<&'static str> {")
e.append("        Some(match self.0 {")
seen = set()
for (n, v, d) in errs:
    if v in seen:
        continue
    seen.add(v)
    e.append('            %d => "%s",' % (v, n))
e.append("            _ => return None,\n        })\n    }\n")
e.append("    /// The value a syscall returns for this error (`-errno`).")
e.append("    pub fn to_return(self) -> isize {\n        -(self.0 as isize)\n    }\n}\n")
e.append("impl fmt::Display for Errno {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n"
         "        match self.name() {\n            Some(n) => f.write_str(n),\n"
         "            None => write!(f, \"errno {}\", self.0),\n        }\n    }\n}")
open('src/errno.rs', 'w').write("\n".join(e) + "\n")
