//! Linux x86-64 syscall numbers and names (generated once from the kernel UAPI header
//! `asm/unistd_64.h` of Linux 6.1 by `lib/abi/generate.py`; the ABI never renumbers).

/// Number of the highest syscall Linux defines, plus one.
pub const SYSCALL_LIMIT: usize = 451;

/// `read`
pub const SYS_READ: usize = 0;
/// `write`
pub const SYS_WRITE: usize = 1;
/// `open`
pub const SYS_OPEN: usize = 2;
/// `close`
pub const SYS_CLOSE: usize = 3;
/// `stat`
pub const SYS_STAT: usize = 4;
/// `fstat`
pub const SYS_FSTAT: usize = 5;
/// `lstat`
pub const SYS_LSTAT: usize = 6;
/// `poll`
pub const SYS_POLL: usize = 7;
/// `lseek`
pub const SYS_LSEEK: usize = 8;
/// `mmap`
pub const SYS_MMAP: usize = 9;
/// `mprotect`
pub const SYS_MPROTECT: usize = 10;
/// `munmap`
pub const SYS_MUNMAP: usize = 11;
/// `brk`
pub const SYS_BRK: usize = 12;
/// `rt_sigaction`
pub const SYS_RT_SIGACTION: usize = 13;
/// `rt_sigprocmask`
pub const SYS_RT_SIGPROCMASK: usize = 14;
/// `rt_sigreturn`
pub const SYS_RT_SIGRETURN: usize = 15;
/// `ioctl`
pub const SYS_IOCTL: usize = 16;
/// `pread64`
pub const SYS_PREAD64: usize = 17;
/// `pwrite64`
pub const SYS_PWRITE64: usize = 18;
/// `readv`
pub const SYS_READV: usize = 19;
/// `writev`
pub const SYS_WRITEV: usize = 20;
/// `access`
pub const SYS_ACCESS: usize = 21;
/// `pipe`
pub const SYS_PIPE: usize = 22;
/// `select`
pub const SYS_SELECT: usize = 23;
/// `sched_yield`
pub const SYS_SCHED_YIELD: usize = 24;
/// `mremap`
pub const SYS_MREMAP: usize = 25;
/// `msync`
pub const SYS_MSYNC: usize = 26;
/// `mincore`
pub const SYS_MINCORE: usize = 27;
/// `madvise`
pub const SYS_MADVISE: usize = 28;
/// `shmget`
pub const SYS_SHMGET: usize = 29;
/// `shmat`
pub const SYS_SHMAT: usize = 30;
/// `shmctl`
pub const SYS_SHMCTL: usize = 31;
/// `dup`
pub const SYS_DUP: usize = 32;
/// `dup2`
pub const SYS_DUP2: usize = 33;
/// `pause`
pub const SYS_PAUSE: usize = 34;
/// `nanosleep`
pub const SYS_NANOSLEEP: usize = 35;
/// `getitimer`
pub const SYS_GETITIMER: usize = 36;
/// `alarm`
pub const SYS_ALARM: usize = 37;
/// `setitimer`
pub const SYS_SETITIMER: usize = 38;
/// `getpid`
pub const SYS_GETPID: usize = 39;
/// `sendfile`
pub const SYS_SENDFILE: usize = 40;
/// `socket`
pub const SYS_SOCKET: usize = 41;
/// `connect`
pub const SYS_CONNECT: usize = 42;
/// `accept`
pub const SYS_ACCEPT: usize = 43;
/// `sendto`
pub const SYS_SENDTO: usize = 44;
/// `recvfrom`
pub const SYS_RECVFROM: usize = 45;
/// `sendmsg`
pub const SYS_SENDMSG: usize = 46;
/// `recvmsg`
pub const SYS_RECVMSG: usize = 47;
/// `shutdown`
pub const SYS_SHUTDOWN: usize = 48;
/// `bind`
pub const SYS_BIND: usize = 49;
/// `listen`
pub const SYS_LISTEN: usize = 50;
/// `getsockname`
pub const SYS_GETSOCKNAME: usize = 51;
/// `getpeername`
pub const SYS_GETPEERNAME: usize = 52;
/// `socketpair`
pub const SYS_SOCKETPAIR: usize = 53;
/// `setsockopt`
pub const SYS_SETSOCKOPT: usize = 54;
/// `getsockopt`
pub const SYS_GETSOCKOPT: usize = 55;
/// `clone`
pub const SYS_CLONE: usize = 56;
/// `fork`
pub const SYS_FORK: usize = 57;
/// `vfork`
pub const SYS_VFORK: usize = 58;
/// `execve`
pub const SYS_EXECVE: usize = 59;
/// `exit`
pub const SYS_EXIT: usize = 60;
/// `wait4`
pub const SYS_WAIT4: usize = 61;
/// `kill`
pub const SYS_KILL: usize = 62;
/// `uname`
pub const SYS_UNAME: usize = 63;
/// `semget`
pub const SYS_SEMGET: usize = 64;
/// `semop`
pub const SYS_SEMOP: usize = 65;
/// `semctl`
pub const SYS_SEMCTL: usize = 66;
/// `shmdt`
pub const SYS_SHMDT: usize = 67;
/// `msgget`
pub const SYS_MSGGET: usize = 68;
/// `msgsnd`
pub const SYS_MSGSND: usize = 69;
/// `msgrcv`
pub const SYS_MSGRCV: usize = 70;
/// `msgctl`
pub const SYS_MSGCTL: usize = 71;
/// `fcntl`
pub const SYS_FCNTL: usize = 72;
/// `flock`
pub const SYS_FLOCK: usize = 73;
/// `fsync`
pub const SYS_FSYNC: usize = 74;
/// `fdatasync`
pub const SYS_FDATASYNC: usize = 75;
/// `truncate`
pub const SYS_TRUNCATE: usize = 76;
/// `ftruncate`
pub const SYS_FTRUNCATE: usize = 77;
/// `getdents`
pub const SYS_GETDENTS: usize = 78;
/// `getcwd`
pub const SYS_GETCWD: usize = 79;
/// `chdir`
pub const SYS_CHDIR: usize = 80;
/// `fchdir`
pub const SYS_FCHDIR: usize = 81;
/// `rename`
pub const SYS_RENAME: usize = 82;
/// `mkdir`
pub const SYS_MKDIR: usize = 83;
/// `rmdir`
pub const SYS_RMDIR: usize = 84;
/// `creat`
pub const SYS_CREAT: usize = 85;
/// `link`
pub const SYS_LINK: usize = 86;
/// `unlink`
pub const SYS_UNLINK: usize = 87;
/// `symlink`
pub const SYS_SYMLINK: usize = 88;
/// `readlink`
pub const SYS_READLINK: usize = 89;
/// `chmod`
pub const SYS_CHMOD: usize = 90;
/// `fchmod`
pub const SYS_FCHMOD: usize = 91;
/// `chown`
pub const SYS_CHOWN: usize = 92;
/// `fchown`
pub const SYS_FCHOWN: usize = 93;
/// `lchown`
pub const SYS_LCHOWN: usize = 94;
/// `umask`
pub const SYS_UMASK: usize = 95;
/// `gettimeofday`
pub const SYS_GETTIMEOFDAY: usize = 96;
/// `getrlimit`
pub const SYS_GETRLIMIT: usize = 97;
/// `getrusage`
pub const SYS_GETRUSAGE: usize = 98;
/// `sysinfo`
pub const SYS_SYSINFO: usize = 99;
/// `times`
pub const SYS_TIMES: usize = 100;
/// `ptrace`
pub const SYS_PTRACE: usize = 101;
/// `getuid`
pub const SYS_GETUID: usize = 102;
/// `syslog`
pub const SYS_SYSLOG: usize = 103;
/// `getgid`
pub const SYS_GETGID: usize = 104;
/// `setuid`
pub const SYS_SETUID: usize = 105;
/// `setgid`
pub const SYS_SETGID: usize = 106;
/// `geteuid`
pub const SYS_GETEUID: usize = 107;
/// `getegid`
pub const SYS_GETEGID: usize = 108;
/// `setpgid`
pub const SYS_SETPGID: usize = 109;
/// `getppid`
pub const SYS_GETPPID: usize = 110;
/// `getpgrp`
pub const SYS_GETPGRP: usize = 111;
/// `setsid`
pub const SYS_SETSID: usize = 112;
/// `setreuid`
pub const SYS_SETREUID: usize = 113;
/// `setregid`
pub const SYS_SETREGID: usize = 114;
/// `getgroups`
pub const SYS_GETGROUPS: usize = 115;
/// `setgroups`
pub const SYS_SETGROUPS: usize = 116;
/// `setresuid`
pub const SYS_SETRESUID: usize = 117;
/// `getresuid`
pub const SYS_GETRESUID: usize = 118;
/// `setresgid`
pub const SYS_SETRESGID: usize = 119;
/// `getresgid`
pub const SYS_GETRESGID: usize = 120;
/// `getpgid`
pub const SYS_GETPGID: usize = 121;
/// `setfsuid`
pub const SYS_SETFSUID: usize = 122;
/// `setfsgid`
pub const SYS_SETFSGID: usize = 123;
/// `getsid`
pub const SYS_GETSID: usize = 124;
/// `capget`
pub const SYS_CAPGET: usize = 125;
/// `capset`
pub const SYS_CAPSET: usize = 126;
/// `rt_sigpending`
pub const SYS_RT_SIGPENDING: usize = 127;
/// `rt_sigtimedwait`
pub const SYS_RT_SIGTIMEDWAIT: usize = 128;
/// `rt_sigqueueinfo`
pub const SYS_RT_SIGQUEUEINFO: usize = 129;
/// `rt_sigsuspend`
pub const SYS_RT_SIGSUSPEND: usize = 130;
/// `sigaltstack`
pub const SYS_SIGALTSTACK: usize = 131;
/// `utime`
pub const SYS_UTIME: usize = 132;
/// `mknod`
pub const SYS_MKNOD: usize = 133;
/// `uselib`
pub const SYS_USELIB: usize = 134;
/// `personality`
pub const SYS_PERSONALITY: usize = 135;
/// `ustat`
pub const SYS_USTAT: usize = 136;
/// `statfs`
pub const SYS_STATFS: usize = 137;
/// `fstatfs`
pub const SYS_FSTATFS: usize = 138;
/// `sysfs`
pub const SYS_SYSFS: usize = 139;
/// `getpriority`
pub const SYS_GETPRIORITY: usize = 140;
/// `setpriority`
pub const SYS_SETPRIORITY: usize = 141;
/// `sched_setparam`
pub const SYS_SCHED_SETPARAM: usize = 142;
/// `sched_getparam`
pub const SYS_SCHED_GETPARAM: usize = 143;
/// `sched_setscheduler`
pub const SYS_SCHED_SETSCHEDULER: usize = 144;
/// `sched_getscheduler`
pub const SYS_SCHED_GETSCHEDULER: usize = 145;
/// `sched_get_priority_max`
pub const SYS_SCHED_GET_PRIORITY_MAX: usize = 146;
/// `sched_get_priority_min`
pub const SYS_SCHED_GET_PRIORITY_MIN: usize = 147;
/// `sched_rr_get_interval`
pub const SYS_SCHED_RR_GET_INTERVAL: usize = 148;
/// `mlock`
pub const SYS_MLOCK: usize = 149;
/// `munlock`
pub const SYS_MUNLOCK: usize = 150;
/// `mlockall`
pub const SYS_MLOCKALL: usize = 151;
/// `munlockall`
pub const SYS_MUNLOCKALL: usize = 152;
/// `vhangup`
pub const SYS_VHANGUP: usize = 153;
/// `modify_ldt`
pub const SYS_MODIFY_LDT: usize = 154;
/// `pivot_root`
pub const SYS_PIVOT_ROOT: usize = 155;
/// `_sysctl`
pub const SYS__SYSCTL: usize = 156;
/// `prctl`
pub const SYS_PRCTL: usize = 157;
/// `arch_prctl`
pub const SYS_ARCH_PRCTL: usize = 158;
/// `adjtimex`
pub const SYS_ADJTIMEX: usize = 159;
/// `setrlimit`
pub const SYS_SETRLIMIT: usize = 160;
/// `chroot`
pub const SYS_CHROOT: usize = 161;
/// `sync`
pub const SYS_SYNC: usize = 162;
/// `acct`
pub const SYS_ACCT: usize = 163;
/// `settimeofday`
pub const SYS_SETTIMEOFDAY: usize = 164;
/// `mount`
pub const SYS_MOUNT: usize = 165;
/// `umount2`
pub const SYS_UMOUNT2: usize = 166;
/// `swapon`
pub const SYS_SWAPON: usize = 167;
/// `swapoff`
pub const SYS_SWAPOFF: usize = 168;
/// `reboot`
pub const SYS_REBOOT: usize = 169;
/// `sethostname`
pub const SYS_SETHOSTNAME: usize = 170;
/// `setdomainname`
pub const SYS_SETDOMAINNAME: usize = 171;
/// `iopl`
pub const SYS_IOPL: usize = 172;
/// `ioperm`
pub const SYS_IOPERM: usize = 173;
/// `create_module`
pub const SYS_CREATE_MODULE: usize = 174;
/// `init_module`
pub const SYS_INIT_MODULE: usize = 175;
/// `delete_module`
pub const SYS_DELETE_MODULE: usize = 176;
/// `get_kernel_syms`
pub const SYS_GET_KERNEL_SYMS: usize = 177;
/// `query_module`
pub const SYS_QUERY_MODULE: usize = 178;
/// `quotactl`
pub const SYS_QUOTACTL: usize = 179;
/// `nfsservctl`
pub const SYS_NFSSERVCTL: usize = 180;
/// `getpmsg`
pub const SYS_GETPMSG: usize = 181;
/// `putpmsg`
pub const SYS_PUTPMSG: usize = 182;
/// `afs_syscall`
pub const SYS_AFS_SYSCALL: usize = 183;
/// `tuxcall`
pub const SYS_TUXCALL: usize = 184;
/// `security`
pub const SYS_SECURITY: usize = 185;
/// `gettid`
pub const SYS_GETTID: usize = 186;
/// `readahead`
pub const SYS_READAHEAD: usize = 187;
/// `setxattr`
pub const SYS_SETXATTR: usize = 188;
/// `lsetxattr`
pub const SYS_LSETXATTR: usize = 189;
/// `fsetxattr`
pub const SYS_FSETXATTR: usize = 190;
/// `getxattr`
pub const SYS_GETXATTR: usize = 191;
/// `lgetxattr`
pub const SYS_LGETXATTR: usize = 192;
/// `fgetxattr`
pub const SYS_FGETXATTR: usize = 193;
/// `listxattr`
pub const SYS_LISTXATTR: usize = 194;
/// `llistxattr`
pub const SYS_LLISTXATTR: usize = 195;
/// `flistxattr`
pub const SYS_FLISTXATTR: usize = 196;
/// `removexattr`
pub const SYS_REMOVEXATTR: usize = 197;
/// `lremovexattr`
pub const SYS_LREMOVEXATTR: usize = 198;
/// `fremovexattr`
pub const SYS_FREMOVEXATTR: usize = 199;
/// `tkill`
pub const SYS_TKILL: usize = 200;
/// `time`
pub const SYS_TIME: usize = 201;
/// `futex`
pub const SYS_FUTEX: usize = 202;
/// `sched_setaffinity`
pub const SYS_SCHED_SETAFFINITY: usize = 203;
/// `sched_getaffinity`
pub const SYS_SCHED_GETAFFINITY: usize = 204;
/// `set_thread_area`
pub const SYS_SET_THREAD_AREA: usize = 205;
/// `io_setup`
pub const SYS_IO_SETUP: usize = 206;
/// `io_destroy`
pub const SYS_IO_DESTROY: usize = 207;
/// `io_getevents`
pub const SYS_IO_GETEVENTS: usize = 208;
/// `io_submit`
pub const SYS_IO_SUBMIT: usize = 209;
/// `io_cancel`
pub const SYS_IO_CANCEL: usize = 210;
/// `get_thread_area`
pub const SYS_GET_THREAD_AREA: usize = 211;
/// `lookup_dcookie`
pub const SYS_LOOKUP_DCOOKIE: usize = 212;
/// `epoll_create`
pub const SYS_EPOLL_CREATE: usize = 213;
/// `epoll_ctl_old`
pub const SYS_EPOLL_CTL_OLD: usize = 214;
/// `epoll_wait_old`
pub const SYS_EPOLL_WAIT_OLD: usize = 215;
/// `remap_file_pages`
pub const SYS_REMAP_FILE_PAGES: usize = 216;
/// `getdents64`
pub const SYS_GETDENTS64: usize = 217;
/// `set_tid_address`
pub const SYS_SET_TID_ADDRESS: usize = 218;
/// `restart_syscall`
pub const SYS_RESTART_SYSCALL: usize = 219;
/// `semtimedop`
pub const SYS_SEMTIMEDOP: usize = 220;
/// `fadvise64`
pub const SYS_FADVISE64: usize = 221;
/// `timer_create`
pub const SYS_TIMER_CREATE: usize = 222;
/// `timer_settime`
pub const SYS_TIMER_SETTIME: usize = 223;
/// `timer_gettime`
pub const SYS_TIMER_GETTIME: usize = 224;
/// `timer_getoverrun`
pub const SYS_TIMER_GETOVERRUN: usize = 225;
/// `timer_delete`
pub const SYS_TIMER_DELETE: usize = 226;
/// `clock_settime`
pub const SYS_CLOCK_SETTIME: usize = 227;
/// `clock_gettime`
pub const SYS_CLOCK_GETTIME: usize = 228;
/// `clock_getres`
pub const SYS_CLOCK_GETRES: usize = 229;
/// `clock_nanosleep`
pub const SYS_CLOCK_NANOSLEEP: usize = 230;
/// `exit_group`
pub const SYS_EXIT_GROUP: usize = 231;
/// `epoll_wait`
pub const SYS_EPOLL_WAIT: usize = 232;
/// `epoll_ctl`
pub const SYS_EPOLL_CTL: usize = 233;
/// `tgkill`
pub const SYS_TGKILL: usize = 234;
/// `utimes`
pub const SYS_UTIMES: usize = 235;
/// `vserver`
pub const SYS_VSERVER: usize = 236;
/// `mbind`
pub const SYS_MBIND: usize = 237;
/// `set_mempolicy`
pub const SYS_SET_MEMPOLICY: usize = 238;
/// `get_mempolicy`
pub const SYS_GET_MEMPOLICY: usize = 239;
/// `mq_open`
pub const SYS_MQ_OPEN: usize = 240;
/// `mq_unlink`
pub const SYS_MQ_UNLINK: usize = 241;
/// `mq_timedsend`
pub const SYS_MQ_TIMEDSEND: usize = 242;
/// `mq_timedreceive`
pub const SYS_MQ_TIMEDRECEIVE: usize = 243;
/// `mq_notify`
pub const SYS_MQ_NOTIFY: usize = 244;
/// `mq_getsetattr`
pub const SYS_MQ_GETSETATTR: usize = 245;
/// `kexec_load`
pub const SYS_KEXEC_LOAD: usize = 246;
/// `waitid`
pub const SYS_WAITID: usize = 247;
/// `add_key`
pub const SYS_ADD_KEY: usize = 248;
/// `request_key`
pub const SYS_REQUEST_KEY: usize = 249;
/// `keyctl`
pub const SYS_KEYCTL: usize = 250;
/// `ioprio_set`
pub const SYS_IOPRIO_SET: usize = 251;
/// `ioprio_get`
pub const SYS_IOPRIO_GET: usize = 252;
/// `inotify_init`
pub const SYS_INOTIFY_INIT: usize = 253;
/// `inotify_add_watch`
pub const SYS_INOTIFY_ADD_WATCH: usize = 254;
/// `inotify_rm_watch`
pub const SYS_INOTIFY_RM_WATCH: usize = 255;
/// `migrate_pages`
pub const SYS_MIGRATE_PAGES: usize = 256;
/// `openat`
pub const SYS_OPENAT: usize = 257;
/// `mkdirat`
pub const SYS_MKDIRAT: usize = 258;
/// `mknodat`
pub const SYS_MKNODAT: usize = 259;
/// `fchownat`
pub const SYS_FCHOWNAT: usize = 260;
/// `futimesat`
pub const SYS_FUTIMESAT: usize = 261;
/// `newfstatat`
pub const SYS_NEWFSTATAT: usize = 262;
/// `unlinkat`
pub const SYS_UNLINKAT: usize = 263;
/// `renameat`
pub const SYS_RENAMEAT: usize = 264;
/// `linkat`
pub const SYS_LINKAT: usize = 265;
/// `symlinkat`
pub const SYS_SYMLINKAT: usize = 266;
/// `readlinkat`
pub const SYS_READLINKAT: usize = 267;
/// `fchmodat`
pub const SYS_FCHMODAT: usize = 268;
/// `faccessat`
pub const SYS_FACCESSAT: usize = 269;
/// `pselect6`
pub const SYS_PSELECT6: usize = 270;
/// `ppoll`
pub const SYS_PPOLL: usize = 271;
/// `unshare`
pub const SYS_UNSHARE: usize = 272;
/// `set_robust_list`
pub const SYS_SET_ROBUST_LIST: usize = 273;
/// `get_robust_list`
pub const SYS_GET_ROBUST_LIST: usize = 274;
/// `splice`
pub const SYS_SPLICE: usize = 275;
/// `tee`
pub const SYS_TEE: usize = 276;
/// `sync_file_range`
pub const SYS_SYNC_FILE_RANGE: usize = 277;
/// `vmsplice`
pub const SYS_VMSPLICE: usize = 278;
/// `move_pages`
pub const SYS_MOVE_PAGES: usize = 279;
/// `utimensat`
pub const SYS_UTIMENSAT: usize = 280;
/// `epoll_pwait`
pub const SYS_EPOLL_PWAIT: usize = 281;
/// `signalfd`
pub const SYS_SIGNALFD: usize = 282;
/// `timerfd_create`
pub const SYS_TIMERFD_CREATE: usize = 283;
/// `eventfd`
pub const SYS_EVENTFD: usize = 284;
/// `fallocate`
pub const SYS_FALLOCATE: usize = 285;
/// `timerfd_settime`
pub const SYS_TIMERFD_SETTIME: usize = 286;
/// `timerfd_gettime`
pub const SYS_TIMERFD_GETTIME: usize = 287;
/// `accept4`
pub const SYS_ACCEPT4: usize = 288;
/// `signalfd4`
pub const SYS_SIGNALFD4: usize = 289;
/// `eventfd2`
pub const SYS_EVENTFD2: usize = 290;
/// `epoll_create1`
pub const SYS_EPOLL_CREATE1: usize = 291;
/// `dup3`
pub const SYS_DUP3: usize = 292;
/// `pipe2`
pub const SYS_PIPE2: usize = 293;
/// `inotify_init1`
pub const SYS_INOTIFY_INIT1: usize = 294;
/// `preadv`
pub const SYS_PREADV: usize = 295;
/// `pwritev`
pub const SYS_PWRITEV: usize = 296;
/// `rt_tgsigqueueinfo`
pub const SYS_RT_TGSIGQUEUEINFO: usize = 297;
/// `perf_event_open`
pub const SYS_PERF_EVENT_OPEN: usize = 298;
/// `recvmmsg`
pub const SYS_RECVMMSG: usize = 299;
/// `fanotify_init`
pub const SYS_FANOTIFY_INIT: usize = 300;
/// `fanotify_mark`
pub const SYS_FANOTIFY_MARK: usize = 301;
/// `prlimit64`
pub const SYS_PRLIMIT64: usize = 302;
/// `name_to_handle_at`
pub const SYS_NAME_TO_HANDLE_AT: usize = 303;
/// `open_by_handle_at`
pub const SYS_OPEN_BY_HANDLE_AT: usize = 304;
/// `clock_adjtime`
pub const SYS_CLOCK_ADJTIME: usize = 305;
/// `syncfs`
pub const SYS_SYNCFS: usize = 306;
/// `sendmmsg`
pub const SYS_SENDMMSG: usize = 307;
/// `setns`
pub const SYS_SETNS: usize = 308;
/// `getcpu`
pub const SYS_GETCPU: usize = 309;
/// `process_vm_readv`
pub const SYS_PROCESS_VM_READV: usize = 310;
/// `process_vm_writev`
pub const SYS_PROCESS_VM_WRITEV: usize = 311;
/// `kcmp`
pub const SYS_KCMP: usize = 312;
/// `finit_module`
pub const SYS_FINIT_MODULE: usize = 313;
/// `sched_setattr`
pub const SYS_SCHED_SETATTR: usize = 314;
/// `sched_getattr`
pub const SYS_SCHED_GETATTR: usize = 315;
/// `renameat2`
pub const SYS_RENAMEAT2: usize = 316;
/// `seccomp`
pub const SYS_SECCOMP: usize = 317;
/// `getrandom`
pub const SYS_GETRANDOM: usize = 318;
/// `memfd_create`
pub const SYS_MEMFD_CREATE: usize = 319;
/// `kexec_file_load`
pub const SYS_KEXEC_FILE_LOAD: usize = 320;
/// `bpf`
pub const SYS_BPF: usize = 321;
/// `execveat`
pub const SYS_EXECVEAT: usize = 322;
/// `userfaultfd`
pub const SYS_USERFAULTFD: usize = 323;
/// `membarrier`
pub const SYS_MEMBARRIER: usize = 324;
/// `mlock2`
pub const SYS_MLOCK2: usize = 325;
/// `copy_file_range`
pub const SYS_COPY_FILE_RANGE: usize = 326;
/// `preadv2`
pub const SYS_PREADV2: usize = 327;
/// `pwritev2`
pub const SYS_PWRITEV2: usize = 328;
/// `pkey_mprotect`
pub const SYS_PKEY_MPROTECT: usize = 329;
/// `pkey_alloc`
pub const SYS_PKEY_ALLOC: usize = 330;
/// `pkey_free`
pub const SYS_PKEY_FREE: usize = 331;
/// `statx`
pub const SYS_STATX: usize = 332;
/// `io_pgetevents`
pub const SYS_IO_PGETEVENTS: usize = 333;
/// `rseq`
pub const SYS_RSEQ: usize = 334;
/// `pidfd_send_signal`
pub const SYS_PIDFD_SEND_SIGNAL: usize = 424;
/// `io_uring_setup`
pub const SYS_IO_URING_SETUP: usize = 425;
/// `io_uring_enter`
pub const SYS_IO_URING_ENTER: usize = 426;
/// `io_uring_register`
pub const SYS_IO_URING_REGISTER: usize = 427;
/// `open_tree`
pub const SYS_OPEN_TREE: usize = 428;
/// `move_mount`
pub const SYS_MOVE_MOUNT: usize = 429;
/// `fsopen`
pub const SYS_FSOPEN: usize = 430;
/// `fsconfig`
pub const SYS_FSCONFIG: usize = 431;
/// `fsmount`
pub const SYS_FSMOUNT: usize = 432;
/// `fspick`
pub const SYS_FSPICK: usize = 433;
/// `pidfd_open`
pub const SYS_PIDFD_OPEN: usize = 434;
/// `clone3`
pub const SYS_CLONE3: usize = 435;
/// `close_range`
pub const SYS_CLOSE_RANGE: usize = 436;
/// `openat2`
pub const SYS_OPENAT2: usize = 437;
/// `pidfd_getfd`
pub const SYS_PIDFD_GETFD: usize = 438;
/// `faccessat2`
pub const SYS_FACCESSAT2: usize = 439;
/// `process_madvise`
pub const SYS_PROCESS_MADVISE: usize = 440;
/// `epoll_pwait2`
pub const SYS_EPOLL_PWAIT2: usize = 441;
/// `mount_setattr`
pub const SYS_MOUNT_SETATTR: usize = 442;
/// `quotactl_fd`
pub const SYS_QUOTACTL_FD: usize = 443;
/// `landlock_create_ruleset`
pub const SYS_LANDLOCK_CREATE_RULESET: usize = 444;
/// `landlock_add_rule`
pub const SYS_LANDLOCK_ADD_RULE: usize = 445;
/// `landlock_restrict_self`
pub const SYS_LANDLOCK_RESTRICT_SELF: usize = 446;
/// `memfd_secret`
pub const SYS_MEMFD_SECRET: usize = 447;
/// `process_mrelease`
pub const SYS_PROCESS_MRELEASE: usize = 448;
/// `futex_waitv`
pub const SYS_FUTEX_WAITV: usize = 449;
/// `set_mempolicy_home_node`
pub const SYS_SET_MEMPOLICY_HOME_NODE: usize = 450;

/// The name of syscall `nr`, if Linux defines it.
pub fn name(nr: usize) -> Option<&'static str> {
    Some(match nr {
        0 => "read",
        1 => "write",
        2 => "open",
        3 => "close",
        4 => "stat",
        5 => "fstat",
        6 => "lstat",
        7 => "poll",
        8 => "lseek",
        9 => "mmap",
        10 => "mprotect",
        11 => "munmap",
        12 => "brk",
        13 => "rt_sigaction",
        14 => "rt_sigprocmask",
        15 => "rt_sigreturn",
        16 => "ioctl",
        17 => "pread64",
        18 => "pwrite64",
        19 => "readv",
        20 => "writev",
        21 => "access",
        22 => "pipe",
        23 => "select",
        24 => "sched_yield",
        25 => "mremap",
        26 => "msync",
        27 => "mincore",
        28 => "madvise",
        29 => "shmget",
        30 => "shmat",
        31 => "shmctl",
        32 => "dup",
        33 => "dup2",
        34 => "pause",
        35 => "nanosleep",
        36 => "getitimer",
        37 => "alarm",
        38 => "setitimer",
        39 => "getpid",
        40 => "sendfile",
        41 => "socket",
        42 => "connect",
        43 => "accept",
        44 => "sendto",
        45 => "recvfrom",
        46 => "sendmsg",
        47 => "recvmsg",
        48 => "shutdown",
        49 => "bind",
        50 => "listen",
        51 => "getsockname",
        52 => "getpeername",
        53 => "socketpair",
        54 => "setsockopt",
        55 => "getsockopt",
        56 => "clone",
        57 => "fork",
        58 => "vfork",
        59 => "execve",
        60 => "exit",
        61 => "wait4",
        62 => "kill",
        63 => "uname",
        64 => "semget",
        65 => "semop",
        66 => "semctl",
        67 => "shmdt",
        68 => "msgget",
        69 => "msgsnd",
        70 => "msgrcv",
        71 => "msgctl",
        72 => "fcntl",
        73 => "flock",
        74 => "fsync",
        75 => "fdatasync",
        76 => "truncate",
        77 => "ftruncate",
        78 => "getdents",
        79 => "getcwd",
        80 => "chdir",
        81 => "fchdir",
        82 => "rename",
        83 => "mkdir",
        84 => "rmdir",
        85 => "creat",
        86 => "link",
        87 => "unlink",
        88 => "symlink",
        89 => "readlink",
        90 => "chmod",
        91 => "fchmod",
        92 => "chown",
        93 => "fchown",
        94 => "lchown",
        95 => "umask",
        96 => "gettimeofday",
        97 => "getrlimit",
        98 => "getrusage",
        99 => "sysinfo",
        100 => "times",
        101 => "ptrace",
        102 => "getuid",
        103 => "syslog",
        104 => "getgid",
        105 => "setuid",
        106 => "setgid",
        107 => "geteuid",
        108 => "getegid",
        109 => "setpgid",
        110 => "getppid",
        111 => "getpgrp",
        112 => "setsid",
        113 => "setreuid",
        114 => "setregid",
        115 => "getgroups",
        116 => "setgroups",
        117 => "setresuid",
        118 => "getresuid",
        119 => "setresgid",
        120 => "getresgid",
        121 => "getpgid",
        122 => "setfsuid",
        123 => "setfsgid",
        124 => "getsid",
        125 => "capget",
        126 => "capset",
        127 => "rt_sigpending",
        128 => "rt_sigtimedwait",
        129 => "rt_sigqueueinfo",
        130 => "rt_sigsuspend",
        131 => "sigaltstack",
        132 => "utime",
        133 => "mknod",
        134 => "uselib",
        135 => "personality",
        136 => "ustat",
        137 => "statfs",
        138 => "fstatfs",
        139 => "sysfs",
        140 => "getpriority",
        141 => "setpriority",
        142 => "sched_setparam",
        143 => "sched_getparam",
        144 => "sched_setscheduler",
        145 => "sched_getscheduler",
        146 => "sched_get_priority_max",
        147 => "sched_get_priority_min",
        148 => "sched_rr_get_interval",
        149 => "mlock",
        150 => "munlock",
        151 => "mlockall",
        152 => "munlockall",
        153 => "vhangup",
        154 => "modify_ldt",
        155 => "pivot_root",
        156 => "_sysctl",
        157 => "prctl",
        158 => "arch_prctl",
        159 => "adjtimex",
        160 => "setrlimit",
        161 => "chroot",
        162 => "sync",
        163 => "acct",
        164 => "settimeofday",
        165 => "mount",
        166 => "umount2",
        167 => "swapon",
        168 => "swapoff",
        169 => "reboot",
        170 => "sethostname",
        171 => "setdomainname",
        172 => "iopl",
        173 => "ioperm",
        174 => "create_module",
        175 => "init_module",
        176 => "delete_module",
        177 => "get_kernel_syms",
        178 => "query_module",
        179 => "quotactl",
        180 => "nfsservctl",
        181 => "getpmsg",
        182 => "putpmsg",
        183 => "afs_syscall",
        184 => "tuxcall",
        185 => "security",
        186 => "gettid",
        187 => "readahead",
        188 => "setxattr",
        189 => "lsetxattr",
        190 => "fsetxattr",
        191 => "getxattr",
        192 => "lgetxattr",
        193 => "fgetxattr",
        194 => "listxattr",
        195 => "llistxattr",
        196 => "flistxattr",
        197 => "removexattr",
        198 => "lremovexattr",
        199 => "fremovexattr",
        200 => "tkill",
        201 => "time",
        202 => "futex",
        203 => "sched_setaffinity",
        204 => "sched_getaffinity",
        205 => "set_thread_area",
        206 => "io_setup",
        207 => "io_destroy",
        208 => "io_getevents",
        209 => "io_submit",
        210 => "io_cancel",
        211 => "get_thread_area",
        212 => "lookup_dcookie",
        213 => "epoll_create",
        214 => "epoll_ctl_old",
        215 => "epoll_wait_old",
        216 => "remap_file_pages",
        217 => "getdents64",
        218 => "set_tid_address",
        219 => "restart_syscall",
        220 => "semtimedop",
        221 => "fadvise64",
        222 => "timer_create",
        223 => "timer_settime",
        224 => "timer_gettime",
        225 => "timer_getoverrun",
        226 => "timer_delete",
        227 => "clock_settime",
        228 => "clock_gettime",
        229 => "clock_getres",
        230 => "clock_nanosleep",
        231 => "exit_group",
        232 => "epoll_wait",
        233 => "epoll_ctl",
        234 => "tgkill",
        235 => "utimes",
        236 => "vserver",
        237 => "mbind",
        238 => "set_mempolicy",
        239 => "get_mempolicy",
        240 => "mq_open",
        241 => "mq_unlink",
        242 => "mq_timedsend",
        243 => "mq_timedreceive",
        244 => "mq_notify",
        245 => "mq_getsetattr",
        246 => "kexec_load",
        247 => "waitid",
        248 => "add_key",
        249 => "request_key",
        250 => "keyctl",
        251 => "ioprio_set",
        252 => "ioprio_get",
        253 => "inotify_init",
        254 => "inotify_add_watch",
        255 => "inotify_rm_watch",
        256 => "migrate_pages",
        257 => "openat",
        258 => "mkdirat",
        259 => "mknodat",
        260 => "fchownat",
        261 => "futimesat",
        262 => "newfstatat",
        263 => "unlinkat",
        264 => "renameat",
        265 => "linkat",
        266 => "symlinkat",
        267 => "readlinkat",
        268 => "fchmodat",
        269 => "faccessat",
        270 => "pselect6",
        271 => "ppoll",
        272 => "unshare",
        273 => "set_robust_list",
        274 => "get_robust_list",
        275 => "splice",
        276 => "tee",
        277 => "sync_file_range",
        278 => "vmsplice",
        279 => "move_pages",
        280 => "utimensat",
        281 => "epoll_pwait",
        282 => "signalfd",
        283 => "timerfd_create",
        284 => "eventfd",
        285 => "fallocate",
        286 => "timerfd_settime",
        287 => "timerfd_gettime",
        288 => "accept4",
        289 => "signalfd4",
        290 => "eventfd2",
        291 => "epoll_create1",
        292 => "dup3",
        293 => "pipe2",
        294 => "inotify_init1",
        295 => "preadv",
        296 => "pwritev",
        297 => "rt_tgsigqueueinfo",
        298 => "perf_event_open",
        299 => "recvmmsg",
        300 => "fanotify_init",
        301 => "fanotify_mark",
        302 => "prlimit64",
        303 => "name_to_handle_at",
        304 => "open_by_handle_at",
        305 => "clock_adjtime",
        306 => "syncfs",
        307 => "sendmmsg",
        308 => "setns",
        309 => "getcpu",
        310 => "process_vm_readv",
        311 => "process_vm_writev",
        312 => "kcmp",
        313 => "finit_module",
        314 => "sched_setattr",
        315 => "sched_getattr",
        316 => "renameat2",
        317 => "seccomp",
        318 => "getrandom",
        319 => "memfd_create",
        320 => "kexec_file_load",
        321 => "bpf",
        322 => "execveat",
        323 => "userfaultfd",
        324 => "membarrier",
        325 => "mlock2",
        326 => "copy_file_range",
        327 => "preadv2",
        328 => "pwritev2",
        329 => "pkey_mprotect",
        330 => "pkey_alloc",
        331 => "pkey_free",
        332 => "statx",
        333 => "io_pgetevents",
        334 => "rseq",
        424 => "pidfd_send_signal",
        425 => "io_uring_setup",
        426 => "io_uring_enter",
        427 => "io_uring_register",
        428 => "open_tree",
        429 => "move_mount",
        430 => "fsopen",
        431 => "fsconfig",
        432 => "fsmount",
        433 => "fspick",
        434 => "pidfd_open",
        435 => "clone3",
        436 => "close_range",
        437 => "openat2",
        438 => "pidfd_getfd",
        439 => "faccessat2",
        440 => "process_madvise",
        441 => "epoll_pwait2",
        442 => "mount_setattr",
        443 => "quotactl_fd",
        444 => "landlock_create_ruleset",
        445 => "landlock_add_rule",
        446 => "landlock_restrict_self",
        447 => "memfd_secret",
        448 => "process_mrelease",
        449 => "futex_waitv",
        450 => "set_mempolicy_home_node",
        _ => return None,
    })
}
