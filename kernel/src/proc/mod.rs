//! Processes and threads (NrOS §4.4).
//!
//! A [`Process`] is the kernel object behind a Linux process: its address space (a replicated
//! [`crate::vm::VSpace`]), its threads, file descriptors, signal actions and program break. The
//! process tree and life states are in the replicated [`table::ProcessTable`] (NR-Scheduler);
//! threads are scheduled per core ([`sched`]).
//!
//! A [`Thread`] owns a kernel stack; its user registers and FPU state sit at the top of that
//! stack whenever it is in the kernel (see `arch::x86_64::user`).

pub mod itimer;
pub mod job;
pub mod sched;
pub mod signal;
pub mod table;
pub mod wait;

use crate::arch::idt::InterruptFrame;
use crate::arch::{cpu, user};
use crate::fd::{FdTable, OpenFile};
use crate::kcb;
use crate::mailbox::GrantBudget;
use crate::replicated::NodeReplicated;
use crate::sync::IrqMutex;
use crate::vm::VSpace;
use abi::Errno;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use creds::Credentials;
pub use sched::idle_loop;
use signal::SignalState;
use table::ProcessTable;
use wait::{SleepLock, WaitQueue};

/// A process or thread id (Linux `pid_t`).
pub type Pid = u32;

/// Size of a thread's kernel stack.
pub const KERNEL_STACK_SIZE: usize = 64 * 1024;

/// Life cycle of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ThreadState {
    /// In a run queue.
    Ready = 0,
    /// Running on a core.
    Running = 1,
    /// Waiting for an event.
    Blocked = 2,
    /// Finished; its stack is freed once no core uses it.
    Exited = 3,
}

/// A set of cores (`sched_setaffinity`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSet(pub [u64; kcb::MAX_CORES / 64]);

impl CpuSet {
    /// Every core.
    pub fn all() -> Self {
        CpuSet([u64::MAX; kcb::MAX_CORES / 64])
    }

    /// Whether `core` is in the set.
    pub fn contains(&self, core: usize) -> bool {
        core < kcb::MAX_CORES && self.0[core / 64] & (1 << (core % 64)) != 0
    }
}

/// A task name (`comm`): at most 15 bytes, kept without allocating, as Linux's
/// `TASK_COMM_LEN` buffer. Bytes are kept as given (`PR_GET_NAME` returns them); `/proc`
/// shows them as UTF-8 (invalid sequences replaced).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Comm {
    /// The name, NUL-padded.
    bytes: [u8; 16],
}

impl Comm {
    /// The name `name` gives: its bytes up to the first NUL, at most 15.
    pub fn new(name: &[u8]) -> Comm {
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        let mut bytes = [0u8; 16];
        let len = name.len().min(15);
        bytes[..len].copy_from_slice(&name[..len]);
        Comm { bytes }
    }

    /// The name after the last component of `path` (what `execve` names a program).
    pub fn of_path(path: &[u8]) -> Comm {
        Comm::new(path.rsplit(|&b| b == b'/').next().unwrap_or_default())
    }

    /// The name NUL-padded to 16 bytes (`PR_GET_NAME`).
    pub fn padded(&self) -> [u8; 16] {
        self.bytes
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.bytes.iter().position(|&b| b == 0).unwrap_or(16);
        &self.bytes[..len]
    }
}

impl core::fmt::Display for Comm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for chunk in self.as_bytes().utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}

/// A thread of a process.
pub struct Thread {
    /// Thread id (the process id for the first thread).
    pub tid: Pid,
    /// The process.
    pub process: Arc<Process>,
    /// The kernel stack (`KERNEL_STACK_SIZE` bytes, 16-byte aligned).
    stack: Vec<u128>,
    /// Kernel stack pointer saved while switched out.
    pub(crate) saved_rsp: AtomicU64,
    /// Its context is live on a core: from the switch that resumes it until the switch that
    /// saves it has finished (`sched::finish_switch` on the next context). Another core may
    /// resume it only after that (`sched::schedule` waits): a thread woken while it blocks on
    /// a stopping core goes to another core's queue before its own core has switched away.
    pub(crate) on_core: AtomicBool,
    /// The [`ThreadState`], as its `u8` value.
    state: AtomicU8,
    /// Timer ticks it was running in user mode and in the kernel ([`sched::account_tick`];
    /// `getrusage(RUSAGE_THREAD)`).
    pub cpu_ticks: [AtomicU64; 2],
    /// Core whose run queue the thread belongs to (the core it last ran on).
    pub core: AtomicUsize,
    /// The core it asked to move to ([`sched::move_current`]), [`sched::NO_MOVE`] if none:
    /// the switch away from its core queues it there.
    pub(crate) move_to: AtomicUsize,
    /// Cores it may run on.
    pub affinity: IrqMutex<CpuSet>,
    /// User FS base (TLS).
    pub fs_base: AtomicU64,
    /// `set_tid_address` / `CLONE_CHILD_CLEARTID`: cleared and futex-woken at exit.
    pub clear_child_tid: AtomicU64,
    /// Signal mask and pending signals of this thread.
    pub signals: IrqMutex<signal::ThreadSignals>,
    /// Set by the timer when a sleep's deadline passed.
    pub timed_out: AtomicBool,
    /// Core whose timer list holds this thread's pending wake-up (see `sched::arm_timer`).
    pub timer_core: AtomicUsize,
    /// Number of the thread's latest timed sleep: a timer entry fires only while it matches,
    /// so an entry left behind by an earlier sleep can never end a later one.
    pub sleep_seq: AtomicU64,
    /// `exit` was called: the thread ends on its way back to user mode.
    exit_requested: AtomicBool,
    /// A signal may have become deliverable since the return to user mode last looked (one
    /// was sent to the thread or its process, or its mask changed): see [`Thread::note_signal`].
    signal_check: AtomicBool,
    /// It sleeps because its process is stopped ([`job::wait_while_stopped`]).
    pub parked: AtomicBool,
    /// Its name (`PR_SET_NAME`, `/proc/<pid>/task/<tid>/comm`; see [`Thread::set_comm`]).
    comm: IrqMutex<Comm>,
    /// Its nice value, -20 to 19 (`setpriority`; stored and reported, see
    /// `syscall::sched`).
    pub nice: AtomicI32,
    /// Its scheduling policy (`SCHED_OTHER`, `SCHED_BATCH` or `SCHED_IDLE`; stored and
    /// reported).
    pub policy: AtomicU32,
}

impl Thread {
    /// A new thread of `process` whose first return to user mode uses `frame` and `fpu`;
    /// `ENOMEM` if its kernel stack cannot be had.
    pub fn new(
        tid: Pid,
        process: Arc<Process>,
        frame: &InterruptFrame,
        fpu: &[u8; user::FPU_AREA],
        fs_base: u64,
        affinity: CpuSet,
        sigmask: u64,
    ) -> Result<Arc<Thread>, Errno> {
        let mut stack = Vec::new();
        stack
            .try_reserve_exact(KERNEL_STACK_SIZE / 16)
            .map_err(|_| Errno::ENOMEM)?;
        stack.resize(KERNEL_STACK_SIZE / 16, 0u128);
        let t = Thread {
            tid,
            process,
            stack,
            saved_rsp: AtomicU64::new(0),
            on_core: AtomicBool::new(false),
            move_to: AtomicUsize::new(sched::NO_MOVE),
            state: AtomicU8::new(ThreadState::Ready as u8),
            cpu_ticks: [AtomicU64::new(0), AtomicU64::new(0)],
            core: AtomicUsize::new(kcb::current().core_id),
            affinity: IrqMutex::new(affinity),
            fs_base: AtomicU64::new(fs_base),
            clear_child_tid: AtomicU64::new(0),
            signals: IrqMutex::new(signal::ThreadSignals::new(sigmask)),
            timed_out: AtomicBool::new(false),
            timer_core: AtomicUsize::new(kcb::current().core_id),
            sleep_seq: AtomicU64::new(0),
            exit_requested: AtomicBool::new(false),
            signal_check: AtomicBool::new(true),
            parked: AtomicBool::new(false),
            comm: IrqMutex::new(Comm::default()),
            nice: AtomicI32::new(0),
            policy: AtomicU32::new(0),
        };
        // SAFETY: the stack is this thread's own, unused, 64 KiB, 16-byte aligned (u128), and
        // lives as long as the thread; nothing runs on it before the first switch.
        let rsp = unsafe { user::prepare_stack(t.stack_top(), frame, fpu) };
        t.saved_rsp.store(rsp, Ordering::Relaxed);
        Ok(Arc::new(t))
    }

    /// Top of the kernel stack.
    pub fn stack_top(&self) -> u64 {
        self.stack.as_ptr_range().end as u64
    }

    /// The user registers the thread entered the kernel with (`[rip, rsp, rax, rdi, rsi,
    /// rdx]`), for [`dump_threads`]: stale if it runs meanwhile.
    fn user_registers(&self) -> [u64; 6] {
        // SAFETY: `self` owns its kernel stack, which stays allocated while it is borrowed;
        // every thread's stack holds a user frame from its creation (`prepare_stack`) on.
        unsafe { user::saved_user_registers(self.stack_top()) }
    }

    /// Current state.
    pub fn state(&self) -> ThreadState {
        match self.state.load(Ordering::Acquire) {
            0 => ThreadState::Ready,
            1 => ThreadState::Running,
            2 => ThreadState::Blocked,
            _ => ThreadState::Exited,
        }
    }

    /// Sets the state.
    pub fn set_state(&self, s: ThreadState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Moves from `from` to `to` if the thread is in `from`.
    pub fn transition(&self, from: ThreadState, to: ThreadState) -> bool {
        self.state
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The user FPU state, saved below the user registers at the top of the kernel stack;
    /// valid while this thread is the current one on this core and in the kernel.
    #[allow(clippy::mut_from_ref)]
    pub fn fpu(&self) -> &mut [u8; user::FPU_AREA] {
        // SAFETY: the thread entered the kernel from user mode (or was prepared), so its FPU
        // area is at the top of its stack; only the thread itself calls this, on its own core,
        // and the syscall and signal code never hold two references to it at once. Completing
        // it first makes it a whole image (see `user::complete_fpu`).
        unsafe {
            user::complete_fpu(self.stack_top());
            user::fpu_area(self.stack_top())
        }
    }

    /// Whether a signal that is not blocked is pending for this thread or its process. A
    /// `true` also makes the next return to user mode look for a signal to deliver
    /// ([`Thread::note_signal`]): a wait that ends with `EINTR` because it saw a signal must
    /// have it delivered on the way out, where an ignored one restarts the call. The sender
    /// sets that flag only after it made the signal pending, so a wait on another core could
    /// see the signal first, return `EINTR`, and find no signal to deliver: `wait4` answered
    /// `EINTR` to a process that ignores `SIGCHLD` (once, `user-forkexec-4c2n` in CI: a child
    /// that exits while its parent's `fork` has every signal blocked leaves `SIGCHLD` pending).
    pub fn signal_pending(&self) -> bool {
        let pending = {
            let own = self.signals.lock();
            let shared = self.process.signals.lock().pending;
            (own.pending | shared) & !own.mask != 0
                || self.process.exiting.load(Ordering::Acquire)
        };
        if pending {
            self.note_signal();
        }
        pending
    }

    /// Says that a signal may have become deliverable to this thread: one was sent to it or
    /// its process, or its mask changed. Call it after the change, with the signal lock
    /// released.
    pub fn note_signal(&self) {
        self.signal_check.store(true, Ordering::Release);
    }

    /// For the return to user mode: whether a signal is deliverable, looked up under the signal
    /// locks only if one may have become so since the last look ([`Thread::note_signal`]): a
    /// system call that changes no signal state pays two plain loads, not two locks. Clearing
    /// the flag before the look loses nothing: a sender updates the pending set under the
    /// lock this look takes, then sets the flag, so either the look sees the signal or the flag
    /// is set again after it was cleared.
    fn signal_to_deliver(&self) -> bool {
        if !self.signal_check.load(Ordering::Acquire) {
            return false;
        }
        self.signal_check.store(false, Ordering::Relaxed);
        // A signal pending sets the flag again (`signal_pending`): delivery takes one signal,
        // and the next pass looks again.
        self.signal_pending()
    }

    /// Its name.
    pub fn comm(&self) -> Comm {
        *self.comm.lock()
    }

    /// Names the thread (`PR_SET_NAME`, a write of its `/proc` `comm`, a new thread taking
    /// its creator's name); the main thread's name is also the process's (Linux shows the
    /// thread group leader's in `/proc/<pid>/stat`), which stays after the main thread ends.
    pub fn set_comm(&self, name: Comm) {
        *self.comm.lock() = name;
        if self.tid == self.process.pid {
            self.process.set_comm(name);
        }
    }

    /// Names the thread and its process after the program `execve` runs from `path` (the
    /// process's only thread then, main thread or not).
    pub fn name_after(&self, path: &[u8]) {
        let name = Comm::of_path(path);
        *self.comm.lock() = name;
        self.process.set_comm(name);
    }

    /// Whether this thread is about to end whatever it does (SIGKILL pending, its process
    /// exiting, or `exit` called): long kernel work on its behalf stops early.
    pub fn dying(&self) -> bool {
        let kill = 1u64 << (signal::SIGKILL - 1);
        self.process.exiting.load(Ordering::Acquire)
            || self.exit_requested.load(Ordering::Acquire)
            || (self.signals.lock().pending | self.process.signals.lock().pending) & kill != 0
    }
}

/// The parent of a `vfork` child waits on this until the child execs or exits.
#[derive(Default)]
pub struct VforkDone {
    /// Set once the child has exec'd or exited.
    done: AtomicBool,
    /// Where the parent sleeps until `done` is set.
    queue: WaitQueue,
}

impl VforkDone {
    /// Releases the parent.
    pub fn complete(&self) {
        self.done.store(true, Ordering::Release);
        self.queue.notify_all();
    }

    /// Waits until [`VforkDone::complete`] (signals do not end the wait, as on Linux, where
    /// only a fatal signal would: they are delivered once the child has let go).
    pub fn wait(&self) {
        loop {
            let seq = self.queue.seq();
            if self.done.load(Ordering::Acquire) {
                return;
            }
            self.queue.wait_uninterruptible(seq);
        }
    }
}

/// A process's membership of a fleet (`fleet::bind`).
#[derive(Clone, Copy)]
pub struct Membership {
    /// The fleet's name, which the member may register.
    pub name: crate::names::Name,
    /// The core it is pinned to.
    pub core: usize,
    /// It time-shares the core (`REEF_FLEET_SHARED`) rather than owning it.
    pub shared: bool,
}

impl Process {
    /// Its user and system time in ticks, with its reaped children's (a `wait` status's
    /// `rusage`, and what its parent adds to its own children's time).
    pub fn total_ticks(&self) -> [u64; 2] {
        [0, 1].map(|i| {
            self.cpu_ticks[i].load(Ordering::Relaxed)
                + self.children_ticks[i].load(Ordering::Relaxed)
        })
    }

    /// Ends a `vfork` borrowing (at `execve` or exit): releases the parent and says whether
    /// the current address space was borrowed (and so must not be torn down).
    pub fn end_vfork(&self) -> bool {
        match self.vfork.lock().take() {
            Some(done) => {
                done.complete();
                true
            }
            None => false,
        }
    }
}

/// A process.
pub struct Process {
    /// Process id.
    pub pid: Pid,
    /// The address space (replaced by `execve`).
    vm: IrqMutex<Arc<VSpace>>,
    /// Live threads.
    pub threads: IrqMutex<Vec<Arc<Thread>>>,
    /// `exit_group` or a fatal signal began: every thread exits at its next chance.
    pub exiting: AtomicBool,
    /// The wait status the process exits with once `exiting`.
    pub exit_status: AtomicI32,
    /// Its address space has been torn down (its memory is back).
    released: AtomicBool,
    /// It has registered a name (its registrations go when it exits).
    named: AtomicBool,
    /// Timer ticks its threads were running in user mode and in the kernel
    /// ([`sched::account_tick`]; `/proc/<pid>/stat`'s `utime` and `stime`).
    pub cpu_ticks: [AtomicU64; 2],
    /// When it was made (`fork`, or boot for process 1), in nanoseconds since boot
    /// (`/proc/<pid>/stat`'s `starttime`).
    pub started_ns: u64,
    /// The same of its children it reaped, theirs included (`times`' `cutime` and `cstime`).
    pub children_ticks: [AtomicU64; 2],
    /// Bumped when a child exits, stops or continues (`wait4` sleeps on it).
    pub child_events: WaitQueue,
    /// The signal that stopped the process, 0 while it runs ([`job`]).
    pub stop_signal: AtomicU32,
    /// The parent was told of the current stop ([`job`]: once every thread has stopped).
    pub stop_told: AtomicBool,
    /// `mlockall(MCL_FUTURE)`: anonymous mappings are populated when made.
    pub lock_future: AtomicBool,
    /// The `membarrier` commands it registered for (`MEMBARRIER_CMD_REGISTER_*` bits).
    pub membarrier: AtomicU32,
    /// Its last stop or continue, until the parent waits for it ([`job::take_report`]).
    pub job_report: IrqMutex<Option<job::Report>>,
    /// Bumped when the process continues, is killed or exits: its stopped threads sleep on
    /// it.
    pub resumed: WaitQueue,
    /// The pages it has granted over message connections and not revoked.
    pub grants: Arc<GrantBudget>,
    /// File descriptors.
    pub files: IrqMutex<FdTable>,
    /// Signal actions and process-wide pending signals.
    pub signals: IrqMutex<SignalState>,
    /// Real-time signals queued for the process and its threads, which
    /// `RLIMIT_SIGPENDING` bounds (`signal::Queue`).
    pub rt_queued: AtomicUsize,
    /// The address-space lock (Linux's `mmap_lock`), held by every system call that changes
    /// regions (`mmap`, `munmap`, `mprotect`, `madvise`, `brk`, `fork`'s copy); it guards the
    /// program break, (start, current). Its waiters sleep, so a thread waiting for another's
    /// `munmap` leaves its core (idle cores are no TLB shootdown's targets), and interrupts
    /// stay on while it is held, so a waiter elsewhere still acknowledges the holder's
    /// shootdowns.
    pub mm: SleepLock<(u64, u64)>,
    /// Path of the running program.
    pub exe: IrqMutex<String>,
    /// Its name: its main thread's ([`Thread::set_comm`], [`Thread::name_after`]).
    comm: IrqMutex<Comm>,
    /// Its arguments and environment (`/proc/<pid>/cmdline`, `environ`).
    pub args: IrqMutex<Arc<crate::exec::ExecArgs>>,
    /// Working directory (a directory description: it keeps the directory open).
    pub cwd: IrqMutex<Arc<OpenFile>>,
    /// A `vfork` child runs in its parent's address space until it execs or exits: then it
    /// must not tear that space down, and it releases the waiting parent through this.
    pub vfork: IrqMutex<Option<Arc<VforkDone>>>,
    /// File-creation mask.
    pub umask: AtomicU32,
    /// User and group IDs and supplementary groups (the `set*id` calls, file permission
    /// checks in `fs::perm`, signal permission). Root's for init; copied by `fork`.
    pub creds: IrqMutex<Credentials>,
    /// Its `personality`: Linux's execution domain (always PER_LINUX, 0) and flags, of which
    /// only [`ADDR_NO_RANDOMIZE`] changes anything. Inherited by `fork`, kept by `execve`.
    pub personality: AtomicU32,
    /// The parent's pid, for `getppid` without a process-table read: a copy of the table's,
    /// stored before `Spawn` and set to 1 by the parent's `exit_process` when init adopts it.
    pub ppid: AtomicU32,
    /// It runs the fleet manager (`fs::is_trusted_exe`): it may bind processes to cores
    /// and register names under `fleet/`. Inherited by `fork`, kept by `execve` of the manager
    /// alone.
    pub fleet_manager: AtomicBool,
    /// The fleet it serves as a member (`fleet::bind`): it may register the fleet's name. Set
    /// with the core's `Kcb::fleet_owner`, under this lock, by a bind that found the process
    /// alive; `exit_process` gives the core back if it finds it set.
    pub fleet: IrqMutex<Option<Membership>>,
    /// Where its next `execve` goes in the round-robin order of a Hare mount's `exec=rr`
    /// (Hare §3.6, `exec::place`): each `fork` gives the child the parent's value and moves
    /// the parent's on, and each `execve` moves its own on, so the children a process forks
    /// and that then execute a program go to successive cores.
    pub exec_turn: AtomicUsize,
    /// Its network stack instance, made at its first socket (not inherited: a forked child's
    /// inherited sockets stay in this one, its new ones go to its own).
    pub net: IrqMutex<Option<Arc<crate::net::Instance>>>,
    /// Its POSIX timers and CPU-time interval timers ([`itimer`]; not inherited by `fork`).
    pub timers: itimer::Timers,
}

/// A `personality` flag: the next `execve` lays the program out at the fixed places
/// ([`crate::vm::UserLayout::FIXED`]) instead of random ones.
pub const ADDR_NO_RANDOMIZE: u32 = 0x0040000;

impl Process {
    /// A process with no threads yet, working in `cwd`.
    pub fn new(
        pid: Pid,
        vm: Arc<VSpace>,
        files: FdTable,
        signals: SignalState,
        cwd: Arc<OpenFile>,
    ) -> Arc<Process> {
        Arc::new(Process {
            pid,
            vm: IrqMutex::new(vm),
            threads: IrqMutex::new(Vec::new()),
            exiting: AtomicBool::new(false),
            released: AtomicBool::new(false),
            cpu_ticks: [AtomicU64::new(0), AtomicU64::new(0)],
            started_ns: crate::time::now_ns(),
            children_ticks: [AtomicU64::new(0), AtomicU64::new(0)],
            named: AtomicBool::new(false),
            exit_status: AtomicI32::new(0),
            child_events: WaitQueue::new(),
            stop_signal: AtomicU32::new(0),
            stop_told: AtomicBool::new(false),
            lock_future: AtomicBool::new(false),
            membarrier: AtomicU32::new(0),
            job_report: IrqMutex::new(None),
            resumed: WaitQueue::new(),
            grants: Arc::new(GrantBudget::default()),
            files: IrqMutex::new(files),
            signals: IrqMutex::new(signals),
            rt_queued: AtomicUsize::new(0),
            mm: SleepLock::new((0, 0)),
            exe: IrqMutex::new(String::new()),
            comm: IrqMutex::new(Comm::default()),
            args: IrqMutex::new(Arc::default()),
            cwd: IrqMutex::new(cwd),
            vfork: IrqMutex::new(None),
            umask: AtomicU32::new(0o022),
            creds: IrqMutex::new(Credentials::root()),
            personality: AtomicU32::new(0),
            ppid: AtomicU32::new(0),
            fleet_manager: AtomicBool::new(false),
            fleet: IrqMutex::new(None),
            exec_turn: AtomicUsize::new(0),
            net: IrqMutex::new(None),
            timers: itimer::Timers::new(),
        })
    }

    /// Records that the process registers names (they are removed when it exits).
    pub fn note_named(&self) {
        self.named.store(true, Ordering::Release);
    }

    /// Whether its last thread has ended (`exit_process` has released what it held).
    pub fn has_exited(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Whether the process has registered names.
    pub fn is_named(&self) -> bool {
        self.named.load(Ordering::Acquire)
    }

    /// The program name (`comm`: the main thread's name, `/proc/<pid>/stat`).
    pub fn comm(&self) -> Comm {
        *self.comm.lock()
    }

    /// Sets the program name (through [`Thread::set_comm`] and [`Thread::name_after`]; a
    /// `fork` child's before it has threads).
    pub fn set_comm(&self, name: Comm) {
        *self.comm.lock() = name;
    }

    /// The address space.
    pub fn vm(&self) -> Arc<VSpace> {
        self.vm.lock().clone()
    }

    /// Replaces the address space (`execve`), returning the old one.
    pub fn replace_vm(&self, vm: Arc<VSpace>) -> Arc<VSpace> {
        core::mem::replace(&mut *self.vm.lock(), vm)
    }
}

/// The next process/thread id [`next_pid`] hands out.
static NEXT_PID: AtomicU32 = AtomicU32::new(1);
/// The replicated process table, created on first use.
static TABLE: spin::Once<Arc<NodeReplicated<ProcessTable>>> = spin::Once::new();

/// Draws a fresh process/thread id (before the operation that uses it enters the log).
pub fn next_pid() -> Pid {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
}

/// The replicated process table.
pub fn table() -> &'static NodeReplicated<ProcessTable> {
    TABLE.call_once(|| NodeReplicated::new(1024, |_| ProcessTable::default()))
}

/// Every process in the table (live and zombie), in order.
pub fn all_pids() -> Vec<Pid> {
    match table().execute(table::ReadOp::Pids) {
        table::Resp::Pids(p) => p,
        _ => Vec::new(),
    }
}

/// Looks up a live or zombie process.
pub fn lookup(pid: Pid) -> Option<table::Entry> {
    match table().execute(table::ReadOp::Get(pid)) {
        table::Resp::Entry(e) => e,
        _ => None,
    }
}

/// Prints every process and its threads on the console, each thread with its state, its core
/// and the user registers it entered the kernel with (a system call's number, named, and first
/// arguments): the second half of the NMI's report of a hung guest. The NMI may take no lock,
/// so it asks the next core that goes idle to print this (`sched::DUMP_THREADS`); it takes the
/// process table and each process's `threads` lock as `/proc` does.
pub fn dump_threads() {
    for pid in all_pids() {
        let Some(e) = lookup(pid) else {
            continue;
        };
        let p = &e.process;
        crate::kprintln!(
            "reef: threads: process {pid} ({}) parent {} group {} {:?}",
            p.comm(),
            e.ppid,
            e.pgid,
            e.life
        );
        for t in p.threads.lock().iter() {
            let [rip, rsp, rax, rdi, rsi, rdx] = t.user_registers();
            let call = usize::try_from(rax).ok().and_then(abi::syscalls::name);
            crate::kprintln!(
                "reef: threads:   {} {:?} core {} user rip={rip:#x} rsp={rsp:#x} rax={rax:#x} \
                 ({}) rdi={rdi:#x} rsi={rsi:#x} rdx={rdx:#x}",
                t.tid,
                t.state(),
                t.core.load(Ordering::Relaxed),
                call.unwrap_or("-")
            );
        }
    }
}

/// Work done on every return to user mode: switching when the timer asked for it, syncing
/// replicas after an `NrSync` IPI, sending the console's Ctrl-C (and similar) signals, exiting
/// a dying process, delivering signals. Returns with
/// interrupts disabled.
pub fn return_to_user(frame: &mut InterruptFrame) {
    sched::with_current(|me| loop {
        cpu::disable_interrupts();
        let k = kcb::current();
        if k.sched.need_resched.load(Ordering::Relaxed) {
            sched::schedule();
            continue;
        }
        // A load first: the swap is an atomic read-modify-write, slow on emulated cores.
        if k.sched.nr_sync.load(Ordering::Relaxed) && k.sched.nr_sync.swap(false, Ordering::AcqRel)
        {
            // SAFETY: the IDT and local APIC of this core are set up.
            unsafe { cpu::enable_interrupts() };
            crate::replicated::sync_local_node();
            continue;
        }
        if crate::tty::signals_pending() {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            crate::tty::send_signals();
            continue;
        }
        if itimer::pending() {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            itimer::send_due();
            continue;
        }
        if crate::net::pending() {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            crate::net::run_due();
            continue;
        }
        if me.process.exiting.load(Ordering::Acquire) || me.exit_requested.load(Ordering::Acquire) {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            exit_thread(me.clone());
        }
        if job::is_stopped(&me.process) && !me.dying() {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            job::wait_while_stopped(me);
            continue;
        }
        if me.signal_to_deliver() {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            signal::deliver(me, frame);
            continue;
        }
        if !user::returnable(frame) {
            // A handler address or a restored frame the program chose: `iretq` would fault in
            // the kernel. Linux delivers SIGSEGV; so does Reef (its default action, or a
            // handler, which may repair the frame).
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
            signal::force(me, signal::SIGSEGV, signal::SigInfo::kernel());
            continue;
        }
        return;
    })
}

/// The process last killed for memory and when (ns), until its memory is back.
static OOM_VICTIM: IrqMutex<Option<(Arc<Process>, u64)>> = IrqMutex::new(None);
/// How long a victim may take to give its memory back before another may be chosen.
const OOM_PATIENCE_NS: u64 = 5_000_000_000;

/// Whether a process killed for memory is still giving it back (forgets one that has, or
/// that has taken longer than [`OOM_PATIENCE_NS`]).
fn oom_victim_pending() -> bool {
    let mut victim = OOM_VICTIM.lock();
    if let Some((v, at)) = victim.as_ref() {
        let waited = crate::time::now_ns().saturating_sub(*at);
        if v.released.load(Ordering::Acquire) || waited > OOM_PATIENCE_NS {
            *victim = None;
        }
    }
    victim.is_some()
}

/// A page fault of `me` at `addr` found no memory left: as Linux's OOM killer, ends (SIGKILL)
/// the live process with the most resident pages, never init while another process holds any,
/// and says so on the console. The faulting process is that victim only if it is the largest;
/// otherwise it yields and takes the fault again, when the victim's memory is back. While a
/// victim is still exiting no other process is killed, so one shortage costs one process.
pub fn out_of_memory(me: &Arc<Thread>, addr: u64) {
    let retry = || {
        kcb::current()
            .sched
            .need_resched
            .store(true, Ordering::Relaxed)
    };
    if oom_victim_pending() {
        retry();
        return;
    }
    let mut victim: Option<(u64, Arc<Process>)> = None;
    for pid in all_pids() {
        let Some(entry) = lookup(pid) else { continue };
        let p = entry.process;
        if entry.life != table::Life::Alive || pid == 1 || p.exiting.load(Ordering::Acquire) {
            continue;
        }
        let pages = p.vm().resident_pages();
        if victim.as_ref().is_none_or(|(most, _)| pages > *most) {
            victim = Some((pages, p));
        }
    }
    let (pages, victim) = match victim {
        Some((pages, v)) if pages > 0 => (pages, v),
        _ => (me.process.vm().resident_pages(), me.process.clone()),
    };
    {
        let mut slot = OOM_VICTIM.lock();
        if slot.is_some() {
            // Another core chose a victim meanwhile: that one frees memory for both.
            drop(slot);
            retry();
            return;
        }
        *slot = Some((victim.clone(), crate::time::now_ns()));
    }
    crate::kprintln!(
        "reef: out of memory: killed process {} ({}, {} KiB resident) for a page fault of \
         process {} at {addr:#x}",
        victim.pid,
        victim.comm(),
        pages * 4,
        me.process.pid,
    );
    signal::send_process(&victim, signal::SIGKILL, signal::SigInfo::kernel());
    if !Arc::ptr_eq(&victim, &me.process) {
        retry();
    }
}

/// Ends the current thread (called on its way back to user mode, holding the only reference
/// on this stack: a reference left in a frame of a stack that never returns would leak the
/// thread). The last thread of a process ends the process: it releases the address space and
/// files, becomes a zombie in the process table (or is removed from it at once, if its
/// parent's `SIGCHLD` action says so), and notifies its parent.
fn exit_thread(me: Arc<Thread>) -> ! {
    {
        let p = me.process.clone();
        let ctid = me.clear_child_tid.swap(0, Ordering::AcqRel);
        if ctid != 0
            && !p.exiting.load(Ordering::Acquire)
            && crate::uaccess::write_user(ctid, &0u32).is_ok()
        {
            let _ = crate::futex::wake(&p, ctid, u32::MAX);
        }
        let last = {
            let mut threads = p.threads.lock();
            threads.retain(|t| !Arc::ptr_eq(t, &me));
            threads.is_empty()
        };
        signal::thread_gone(&me);
        if last {
            exit_process(&p);
        }
    }
    me.set_state(ThreadState::Exited);
    drop(me);
    sched::schedule();
    unreachable!("an exited thread was scheduled again");
}

/// Asks the current thread to end when it next returns to user mode (`exit`).
pub fn request_exit(me: &Thread) {
    me.exit_requested.store(true, Ordering::Release);
}

/// The last thread of `p` has ended: free what the process holds and make it a zombie, or
/// remove it at once if its parent ignores `SIGCHLD` or set `SA_NOCLDWAIT` (Linux's
/// `do_notify_parent`; the process table decides, `table::UpdateOp::Exit`).
fn exit_process(p: &Arc<Process>) {
    let status = p.exit_status.load(Ordering::Acquire);
    let files = p.files.lock().take_all();
    drop(files);
    crate::fs::lock::process_gone(p.pid);
    // Close the working directory now, not when the last reference to the process goes
    // (possibly inside a process-table operation on another core).
    if let Ok(root) = crate::fs::root_dir() {
        let cwd = core::mem::replace(&mut *p.cwd.lock(), root);
        drop(cwd);
    }
    // Leave the process's page tables before they go away with the zombie's reaping.
    crate::vm::activate_kernel(kcb::current());
    if !p.end_vfork() {
        p.vm().teardown();
    }
    // The zombie holds an empty address space shared by all; its own goes now, unless a
    // reader elsewhere still holds it (it goes when that reader lets go).
    if let Some(empty) = crate::vm::retired() {
        drop(p.replace_vm(empty));
    }
    itimer::forget(p);
    signal::process_gone(p);
    p.released.store(true, Ordering::Release);
    // After `released`: a bind that comes later sees it (`fleet::bind`).
    sched::release_core(p);
    if p.named.load(Ordering::Acquire) {
        crate::names::process_gone(p.pid);
        crate::fs::hare::process_gone(p.pid);
    }
    crate::net::server::process_gone(p.pid);
    if p.pid == 1 {
        crate::init_exited(status);
    }
    let before = lookup(p.pid);
    let table::Resp::Exited(exited) =
        table().execute_mut(table::UpdateOp::Exit { pid: p.pid, status })
    else {
        return;
    };
    for o in &exited.adopted {
        o.ppid.store(1, Ordering::Release);
    }
    if let Some(before) = before {
        job::exit_orphans(&before, &exited.adopted);
    }
    if let Some(parent) = exited.parent {
        // Reaped at once with `SIG_IGN`: no signal (Linux's `do_notify_parent`). Its time is
        // not added to the parent's children's, as Linux adds it only when a wait reaps.
        if exited.outcome != table::OnChildExit::ReapQuietly {
            signal::send_process(
                &parent,
                signal::SIGCHLD,
                signal::SigInfo::child(p.pid, status),
            );
        }
        // A wait wakes to find the zombie, or, reaped, maybe no child left (`ECHILD`).
        parent.child_events.notify_all();
    }
    if !exited.adopted_zombies.is_empty() {
        // Init is told of the zombies it adopted, as their parent would have been.
        if let Some(init) = lookup(1) {
            for &(pid, status) in &exited.adopted_zombies {
                signal::send_process(
                    &init.process,
                    signal::SIGCHLD,
                    signal::SigInfo::child(pid, status),
                );
            }
            init.process.child_events.notify_all();
        }
    }
}

/// Starts `exit_group` for `p` with wait status `status`: every thread exits at its next return
/// to user mode (sleeping threads are woken).
pub fn begin_group_exit(p: &Arc<Process>, status: i32) {
    if p.exiting
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        p.exit_status.store(status, Ordering::Release);
    }
    // Pairs with the fence in `wait::block`: a thread marking itself blocked either sees the
    // process exiting or is seen blocked here and woken.
    core::sync::atomic::fence(Ordering::SeqCst);
    let threads = p.threads.lock().clone();
    for t in threads {
        sched::wake(&t);
        sched::rescue(&t);
    }
    // Stopped threads wake to exit.
    p.resumed.notify_all();
}

/// Creates process 1 running `argv[0]` with `argv`, its descriptors 0-2 on the console, which
/// becomes the controlling terminal of its session.
pub fn spawn_init(argv: &[String]) -> Result<(), abi::Errno> {
    let pid = next_pid();
    let args: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    let envp = [
        b"HOME=/".to_vec(),
        b"TERM=linux".to_vec(),
        b"PATH=/bin:/usr/local/bin:/usr/bin:/test".to_vec(),
    ];
    let image = crate::exec::load(None, argv[0].as_bytes(), args, &envp)?;
    let p = Process::new(
        pid,
        image.vm.clone(),
        FdTable::console(),
        SignalState::new(),
        crate::fs::root_dir()?,
    );
    *p.mm.lock() = (image.brk, image.brk);
    *p.exe.lock() = String::from_utf8_lossy(&crate::fs::path::join(b"/", &image.path)).into_owned();
    *p.args.lock() = Arc::new(image.args);
    let frame = crate::exec::initial_frame(image.entry, image.rsp);
    let t = Thread::new(
        pid,
        p.clone(),
        &frame,
        &user::initial_fpu_state(),
        0,
        CpuSet::all(),
        0,
    )?;
    t.name_after(&image.path);
    p.threads.lock().push(t.clone());
    table().execute_mut(table::UpdateOp::Spawn {
        pid,
        ppid: 0,
        process: nr::Payload::new(p, table().replica_count()),
        on_child_exit: table::OnChildExit::Zombie,
    });
    crate::tty::attach_init(pid);
    sched::start(t);
    Ok(())
}
