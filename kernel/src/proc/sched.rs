//! The per-core scheduler: run queues in the KCB, preemption by the APIC timer, blocking and
//! waking, and the idle context.
//!
//! Each core runs threads from its own run queue (in its KCB) and only that core takes threads
//! out of it; other cores only append (waking a thread appends it to the queue of the core it
//! last ran on). The kernel is not preemptive: a thread switches only at the return to user
//! mode (when the timer asked for it), when it blocks, and when it exits. A thread that was
//! switched away from is handled by the next context on the same core (`finish_switch`), once
//! its stack is no longer in use, so no other core can run it while its stack is live.
//!
//! A core with nothing to run returns to its idle context (its boot stack), which halts until an
//! interrupt and brings its node's replicas up to date when asked to (NrOS §4.5).
//!
//! Parked KCBs (Barrelfish/DC §4.6). A core may host the KCBs of stopped cores besides its
//! own, and then takes turns between them, best effort as the paper's multi-KCB kernel: a
//! turn lasts at least [`KCB_TURN_TICKS`] timer ticks and ends at the next tick after that when
//! another KCB of the core has a thread ready (or a replica sync asked for), at the
//! turned-out thread's next scheduling point; the core's own KCB runs whenever it has a thread
//! ready at the end of a turn, the parked ones in round robin ([`next_guest`]). Turns change
//! only in the host's idle context ([`idle_loop`]): it adopts a parked KCB (GS base, GDT and
//! TSS), runs [`schedule`] on it, which goes on with
//! that KCB's threads until the turn ends or none is ready and then returns to the idle
//! context, and adopts its own KCB again. While its turn lasts the parked KCB is the current
//! one: its threads run with its run queue, timers, clock and core id (so `getcpu` answers the
//! parked core), exactly as on their own core. The host's timer tick also fires the other KCBs'
//! timers, and its IPI handler takes every KCB's requests (`ipi::handle`).

use super::{Process, Thread, ThreadState};
use crate::arch::{cpu, user};
use crate::kcb::{self, Kcb};
use crate::sync::IrqMutex;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Timer ticks a thread runs before it yields to another ready thread.
pub const TIME_SLICE_TICKS: u64 = 2;

/// Timer ticks a KCB's turn lasts at least on a core that hosts parked KCBs (20 ms, as the
/// naive multi-KCB kernel of Barrelfish/DC §5.2).
pub const KCB_TURN_TICKS: u64 = 2;

/// Per-core scheduler state (part of the KCB).
pub struct CoreScheduler {
    /// Ready threads, in FIFO order.
    pub ready: IrqMutex<VecDeque<Arc<Thread>>>,
    /// The thread running on this core (None: the idle context).
    current: IrqMutex<Option<Arc<Thread>>>,
    /// The same thread as a plain pointer (null: the idle context), for [`with_current`]:
    /// written only by this core, with `current`.
    running: AtomicPtr<Thread>,
    /// The thread this core just switched away from, for `finish_switch`.
    prev: IrqMutex<Option<Arc<Thread>>>,
    /// Saved stack pointer of the idle context.
    idle_rsp: AtomicU64,
    /// The timer asked for a switch at the next return to user mode.
    pub need_resched: AtomicBool,
    /// The core is in its idle loop (wake it with an IPI when giving it work).
    pub idle: AtomicBool,
    /// Ticks left in the current thread's time slice.
    slice: AtomicU64,
    /// Sleeping threads with a deadline (ns) and the number of the sleep it ends
    /// (`Thread::sleep_seq`), woken by the timer.
    timers: IrqMutex<Vec<(u64, u64, Arc<Thread>)>>,
    /// A `Stop` request came (Barrelfish/DC §4.5): the core runs no more threads and stops at
    /// its next scheduling point (`smp::stop_this_core`).
    pub stop_requested: AtomicBool,
    /// An `NrSync` IPI asked this core to bring its node's replicas up to date.
    pub nr_sync: AtomicBool,
    /// This KCB's turn on a core that runs several (see "Parked KCBs" above) is over: the next
    /// scheduling point returns to the idle context, which gives another KCB its turn.
    pub turn_over: AtomicBool,
    /// Timer ticks of this KCB's current turn.
    turn_ticks: AtomicU64,
    /// Unpark asked this KCB's host to give it back (`smp::release_guest`, from the host's
    /// idle context).
    pub release_guest: AtomicBool,
    /// The core of the parked KCB whose turn came last on this core (round robin between
    /// several, [`next_guest`]).
    last_guest: AtomicUsize,
    /// Timer tick at which the idle loop last synced this node's replicas.
    last_idle_sync: AtomicU64,
    /// Id of the address space whose page tables are loaded (0: the kernel's).
    pub active_vspace: AtomicUsize,
    /// Context switches done.
    pub switches: AtomicU64,
    /// The core runs a tickless kernel image (`reef-rt`, set by the image at the core's
    /// entry; false for a KCB parked on a host, which ticks): its timer interrupts only when
    /// needed ([`arm_next_timer`]), so work given to it while it runs a thread needs an IPI.
    /// Every image's code asks this, not which image it is: a thread goes on in the code of
    /// the image it was switched out in, on whatever core it is resumed on.
    pub tickless: AtomicBool,
    /// On a tickless core, when the running thread's time slice ends if other threads wait
    /// (ns; 0: no slice running).
    slice_end: AtomicU64,
}

impl CoreScheduler {
    /// Whether the core is tickless ([`CoreScheduler::tickless`]).
    pub fn is_tickless(&self) -> bool {
        self.tickless.load(Ordering::Acquire)
    }

    /// An idle core's scheduler.
    pub fn new() -> Self {
        CoreScheduler {
            ready: IrqMutex::new(VecDeque::new()),
            current: IrqMutex::new(None),
            running: AtomicPtr::new(core::ptr::null_mut()),
            prev: IrqMutex::new(None),
            idle_rsp: AtomicU64::new(0),
            need_resched: AtomicBool::new(false),
            idle: AtomicBool::new(false),
            slice: AtomicU64::new(TIME_SLICE_TICKS),
            timers: IrqMutex::new(Vec::new()),
            stop_requested: AtomicBool::new(false),
            nr_sync: AtomicBool::new(false),
            turn_over: AtomicBool::new(false),
            turn_ticks: AtomicU64::new(0),
            release_guest: AtomicBool::new(false),
            last_guest: AtomicUsize::new(0),
            last_idle_sync: AtomicU64::new(0),
            active_vspace: AtomicUsize::new(0),
            switches: AtomicU64::new(0),
            tickless: AtomicBool::new(false),
            slice_end: AtomicU64::new(0),
        }
    }
}

impl Default for CoreScheduler {
    fn default() -> Self {
        Self::new()
    }
}

/// The thread running on this core, if any.
pub fn current() -> Option<Arc<Thread>> {
    kcb::try_current().and_then(|k| k.sched.current.lock().clone())
}

/// The thread running on this core; panics in the idle context (syscalls and user faults
/// always have one).
pub fn current_thread() -> Arc<Thread> {
    current().expect("no thread runs on this core")
}

/// Runs `f` with the thread running on this core, without the lock and reference count of
/// [`current_thread`] (a system call's entry and return take this path: atomic instructions
/// are what a null call on several emulated cores pays for). Call it only on that thread's own
/// kernel stack, in a system call or on the way back to user mode; panics in the idle context.
pub fn with_current<R>(f: impl FnOnce(&Arc<Thread>) -> R) -> R {
    let ptr = kcb::current().sched.running.load(Ordering::Relaxed);
    assert!(!ptr.is_null(), "no thread runs on this core");
    // SAFETY: `ptr` is `Arc::as_ptr` of the `Arc` that `current` holds (the switch stores
    // both), so it may be borrowed as one: `ManuallyDrop` leaves its count alone. The caller
    // runs on the kernel stack of that thread, which the thread owns, so the thread outlives
    // this call even if it blocks or moves to another core meanwhile (the kernel does not
    // preempt, so `running` cannot change between the KCB read and the load above).
    let me = ManuallyDrop::new(unsafe { Arc::from_raw(ptr) });
    f(&me)
}

/// Counts a timer tick of core `k` (`user`: it interrupted user mode) as user, system or
/// idle time, for the core (`Kcb::cpu_ticks`) and for the running thread's process
/// (`Process::cpu_ticks`): the sampling Linux's tick accounting does. A process with a
/// CPU-time interval timer armed has it looked at ([`super::itimer::cpu_tick`]).
fn account_tick(k: &kcb::Kcb, user: bool) {
    let ptr = k.sched.running.load(Ordering::Relaxed);
    let kind = match (ptr.is_null(), user) {
        (true, _) => 2,
        (false, true) => 0,
        (false, false) => 1,
    };
    k.cpu_ticks[kind].fetch_add(1, Ordering::Relaxed);
    if !ptr.is_null() {
        // SAFETY: as in `with_current`: the interrupt runs on the kernel stack of the thread
        // `running` names (an interrupt from its user mode or its kernel code), which keeps
        // the thread alive, and `timer_tick` calls this first, before anything in the handler
        // could switch threads; the count is left alone.
        let me = ManuallyDrop::new(unsafe { Arc::from_raw(ptr) });
        me.cpu_ticks[kind].fetch_add(1, Ordering::Relaxed);
        me.process.cpu_ticks[kind].fetch_add(1, Ordering::Relaxed);
        if super::itimer::cpu_armed(&me.process) {
            super::itimer::cpu_tick(&me.process);
        }
    }
}

/// Whether `core` is free for process `pid`: no fleet member of another process owns it (fos
/// space sharing: a fleet's core runs its member alone).
pub fn core_free(pid: u32, core: usize) -> bool {
    kcb::get(core).is_some_and(|k| {
        let owner = k.fleet_owner.load(Ordering::Acquire);
        owner == 0 || owner == pid
    })
}

/// Whether `core` is free for `thread`'s process (see [`core_free`]).
fn core_free_for(thread: &Thread, core: usize) -> bool {
    core_free(thread.process.pid, core)
}

/// Whether `thread` may run on `core`: the core is free for it and its affinity allows it,
/// or allows no free core at all (see [`choose_core`]). A stopped core still counts as
/// allowed: a thread pinned to it waits for it to start again.
pub fn may_run(thread: &Thread, core: usize) -> bool {
    if !core_free_for(thread, core) {
        return false;
    }
    let allowed = thread.affinity.lock().clone();
    allowed.contains(core)
        || thread.dying()
        || !(0..kcb::MAX_CORES).any(|c| allowed.contains(c) && core_free_for(thread, c))
}

/// Gives back the core exited process `p` owns as a fleet member, if it owns one. A bind takes a core
/// for a process and records it in `Process::fleet` under that lock only if the process has
/// not exited, so either this finds it recorded or the bind found the process gone.
pub fn release_core(p: &Process) {
    let Some(m) = *p.fleet.lock() else { return };
    if m.shared {
        return;
    }
    if let Some(k) = kcb::get(m.core) {
        let _ = k
            .fleet_owner
            .compare_exchange(p.pid, 0, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// [`Thread::move_to`] when the thread asked to move nowhere.
pub const NO_MOVE: usize = usize::MAX;

/// Whether running thread `p` goes on running on `k`'s core at a switch: its affinity allows
/// the core and it did not ask to move to another ([`move_current`]).
fn stays(p: &Thread, k: &Kcb) -> bool {
    may_run(p, k.core_id) && p.move_to.load(Ordering::Relaxed) == NO_MOVE
}

/// Moves the calling thread to `core` if it may run there (Hare §3.6's placement of an
/// `execve`; Linux's `sched_exec`): it switches away and the switch queues it on `core`, where
/// it resumes. Returns at once if it runs there already or may not run there. The caller holds
/// no lock (a switch happens).
pub fn move_current(core: usize) {
    let me = current_thread();
    if core == kcb::current().core_id || !may_run(&me, core) {
        return;
    }
    me.move_to.store(core, Ordering::Relaxed);
    schedule();
}

/// The online cores `thread` may be placed on, in increasing order: those its affinity
/// allows that no other process's fleet owns.
pub fn placeable_cores(thread: &Thread) -> Vec<usize> {
    let allowed = thread.affinity.lock().clone();
    let mut cores = kcb::online_cores();
    cores.retain(|&c| allowed.contains(c) && core_free_for(thread, c));
    cores
}

/// Chooses the core a new or migrating thread goes to: the online allowed core with the fewest
/// ready threads, preferring `preferred` on a tie. Cores that fleets of other processes own are
/// never chosen; a thread whose affinity allows only such cores goes to any other core (as
/// Linux moves a task whose cpuset lost its cores), and there is always one, since the last
/// free core cannot be bound (`fleet::bind`). A thread whose allowed cores are all stopped
/// goes to one of them (`preferred` if it is one) and waits there until it starts again,
/// unless it is dying: it must run to exit, so it goes to any core, as [`may_run`] allows.
pub fn choose_core(thread: &Thread, preferred: usize) -> usize {
    let allowed = thread.affinity.lock().clone();
    let cores = crate::kcb::online_cores();
    let free = |c: usize| core_free_for(thread, c);
    let any_allowed = cores.iter().any(|&c| allowed.contains(c) && free(c));
    if !any_allowed && !thread.dying() {
        let stopped = |c: usize| allowed.contains(c) && free(c);
        if stopped(preferred) {
            return preferred;
        }
        if let Some(c) = (0..kcb::MAX_CORES).find(|&c| stopped(c)) {
            return c;
        }
    }
    let mut best: Option<(usize, usize)> = None;
    for core in cores {
        if !free(core) || (any_allowed && !allowed.contains(core)) {
            continue;
        }
        let k = kcb::get(core).expect("online core has a KCB");
        let mut load = k.sched.ready.lock().len();
        if k.sched.current.lock().is_some() {
            load += 1;
        }
        let better = match best {
            None => true,
            Some((c, l)) => load < l || (load == l && core == preferred && c != preferred),
        };
        if better {
            best = Some((core, load));
        }
    }
    best.map(|(c, _)| c).unwrap_or(preferred)
}

/// Appends a ready thread to `core`'s run queue and wakes the core if it idles. A core that is
/// stopping, stopped or parked takes only threads that may run nowhere else (they wait for it,
/// or run on its host); others
/// go to the core [`choose_core`] picks. The state is read under the queue's lock, which the
/// stopping core takes to change it (`request_stop`), so a thread is either queued before and
/// moved by `evacuate`, or sees the stop here.
pub fn enqueue(core: usize, thread: Arc<Thread>) {
    let Some(k) = kcb::get(core) else { return };
    {
        let mut ready = k.sched.ready.lock();
        if k.state() == kcb::CoreState::Online || k.state() == kcb::CoreState::Starting {
            thread.core.store(core, Ordering::Release);
            ready.push_back(thread);
            drop(ready);
            // A tickless core that runs a thread learns of the work only from an IPI (it then
            // arms its timer for the running thread's slice).
            let busy_tickless = k.sched.is_tickless();
            if core != kcb::current().core_id
                && (k.sched.idle.load(Ordering::Acquire) || busy_tickless)
            {
                let _ = crate::ipi::send(core, crate::ipi::IpiKind::Ping);
            }
            return;
        }
    }
    let other = choose_core(&thread, core);
    if other == core {
        thread.core.store(core, Ordering::Release);
        k.sched.ready.lock().push_back(thread);
        // A parked core's host runs it: wake the host if it idles and is another core (a
        // stopped core answers no IPI and takes the thread when it starts).
        if k.sched.idle.load(Ordering::Acquire) && k.ipi_apic_id() != kcb::current().ipi_apic_id() {
            let _ = crate::ipi::send(core, crate::ipi::IpiKind::Ping);
        }
    } else {
        enqueue(other, thread);
    }
}

/// Makes a new thread runnable on a core its affinity allows.
pub fn start(thread: Arc<Thread>) {
    let here = kcb::current().core_id;
    let core = choose_core(&thread, here);
    thread.set_state(ThreadState::Ready);
    enqueue(core, thread);
}

/// Wakes a blocked thread: it becomes ready on the core it last ran on. Returns whether it was
/// blocked.
pub fn wake(thread: &Arc<Thread>) -> bool {
    if thread.transition(ThreadState::Blocked, ThreadState::Ready) {
        enqueue(thread.core.load(Ordering::Acquire), thread.clone());
        true
    } else {
        false
    }
}

/// Takes the next thread this core may run; threads whose affinity no longer allows this core
/// move to one that is allowed.
fn pick_next(k: &Kcb, prev: Option<&Arc<Thread>>) -> Option<Arc<Thread>> {
    if leaving(k) {
        return None;
    }
    loop {
        let t = k.sched.ready.lock().pop_front()?;
        if t.state() == ThreadState::Exited {
            continue;
        }
        let is_prev = prev.is_some_and(|p| Arc::ptr_eq(p, &t));
        if !is_prev && !may_run(&t, k.core_id) {
            let core = choose_core(&t, k.core_id);
            if core != k.core_id {
                enqueue(core, t);
                continue;
            }
        }
        return Some(t);
    }
}

/// Switches to the next ready thread, or to the idle context if there is none and the current
/// thread cannot continue. Returns when this context runs again.
pub fn schedule() {
    let were = cpu::disable_interrupts();
    let k = kcb::current();
    k.sched.need_resched.store(false, Ordering::Relaxed);
    let prev = k.sched.current.lock().clone();
    // A thread whose affinity no longer allows this core must leave it (`finish_switch` then
    // queues it on an allowed core), even if nothing else is ready here.
    // So must every thread of a core that is stopping, and of a KCB whose turn is over (it
    // goes back to this KCB's queue).
    let stopping = leaving(k);
    let prev_runnable = !stopping
        && prev.as_ref().is_some_and(|p| {
            matches!(p.state(), ThreadState::Running | ThreadState::Ready) && stays(p, k)
        });
    let mut next = pick_next(k, prev.as_ref());
    if let (Some(p), Some(n)) = (&prev, &next) {
        if Arc::ptr_eq(p, n) {
            // The current thread was woken while it was blocking, so it was queued here
            // again: it goes on running (never "switch" to oneself, which would resume a stale
            // context), unless its affinity excludes this core; then it leaves for the idle
            // context and `finish_switch` queues it on an allowed core.
            p.set_state(ThreadState::Running);
            if !stopping && stays(p, k) {
                k.sched.slice.store(TIME_SLICE_TICKS, Ordering::Relaxed);
                cpu::restore_interrupts(were);
                return;
            }
            next = None;
        }
    }
    if next.is_none() && (prev_runnable || prev.is_none()) {
        if let Some(p) = &prev {
            p.set_state(ThreadState::Running);
        }
        k.sched.slice.store(TIME_SLICE_TICKS, Ordering::Relaxed);
        cpu::restore_interrupts(were);
        return;
    }
    if let Some(p) = &prev {
        // Its user x87 and MXCSR state is still in the CPU if it entered with `syscall`:
        // into its FPU area, before another thread's state replaces it.
        // SAFETY: `p` is the thread running on this core, which entered from user mode.
        unsafe { user::complete_fpu(p.stack_top()) };
    }
    let save: *mut u64 = match &prev {
        Some(p) => p.saved_rsp.as_ptr(),
        None => k.sched.idle_rsp.as_ptr(),
    };
    let target = match &next {
        Some(n) => {
            take_context(n);
            n.set_state(ThreadState::Running);
            n.core.store(k.core_id, Ordering::Release);
            k.set_kernel_stack(n.stack_top());
            n.process.vm().activate(k);
            user::set_fs_base(n.fs_base.load(Ordering::Relaxed));
            n.saved_rsp.load(Ordering::Relaxed)
        }
        None => {
            crate::vm::activate_kernel(k);
            k.sched.idle_rsp.load(Ordering::Relaxed)
        }
    };
    k.sched.slice.store(TIME_SLICE_TICKS, Ordering::Relaxed);
    k.sched.switches.fetch_add(1, Ordering::Relaxed);
    *k.sched.prev.lock() = prev;
    let running = next
        .as_ref()
        .map_or(core::ptr::null_mut(), |n| Arc::as_ptr(n).cast_mut());
    k.sched.running.store(running, Ordering::Relaxed);
    *k.sched.current.lock() = next;
    // SAFETY: `target` was saved by a previous switch of a context that is not running (the idle
    // context of this core, or a thread that only this core takes from its run queue), or made
    // by `prepare_stack`; interrupts are off; `save` points into a live object (the previous
    // thread, kept alive by `prev`, or this core's KCB).
    unsafe { user::switch_to(save, target) };
    finish_switch();
    cpu::restore_interrupts(were);
}

/// Claims `n`'s saved context for this core ([`Thread::on_core`]), waiting while the core it
/// last ran on is still switching away from it (it was woken while it blocked there, and that
/// core was stopping). That core is on its way from marking the thread blocked to the switch,
/// waiting for no other core (it only answers IPIs), so the wait is short.
fn take_context(n: &Thread) {
    while n
        .on_core
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        cpu::pause();
    }
}

/// Whether `k` runs no more threads now: its core is stopping, or its turn on a core that runs
/// two KCBs is over.
fn leaving(k: &Kcb) -> bool {
    k.sched.stop_requested.load(Ordering::Acquire) || k.sched.turn_over.load(Ordering::Acquire)
}

/// Runs on the new context right after a switch: re-queues the previous thread if it was
/// preempted, and drops it if it exited (freeing its stack, which is no longer in use).
pub fn finish_switch() {
    let k = kcb::current();
    let Some(prev) = k.sched.prev.lock().take() else {
        return;
    };
    // Its context is saved: another core may resume it from now on.
    prev.on_core.store(false, Ordering::Release);
    let wanted = prev.move_to.swap(NO_MOVE, Ordering::Relaxed);
    if prev.transition(ThreadState::Running, ThreadState::Ready) {
        // A preempted thread stays on this core (no scan of every core's queue on this path)
        // unless it asked to move, its affinity excludes this core or the core is stopping.
        let core = if wanted != NO_MOVE && may_run(&prev, wanted) {
            wanted
        } else if may_run(&prev, k.core_id) && !k.sched.stop_requested.load(Ordering::Acquire) {
            k.core_id
        } else {
            choose_core(&prev, k.core_id)
        };
        enqueue(core, prev);
    }
}

/// First code a new thread runs on its own stack, before it enters user mode.
#[no_mangle]
extern "C" fn thread_first_run(frame: &mut crate::arch::idt::InterruptFrame) {
    finish_switch();
    super::return_to_user(frame);
}

/// A preemption point for long kernel work (big copies, console output, work over large
/// ranges): switches to another ready thread if the timer asked for it, then comes back. The
/// caller must hold no lock (a spin lock held across the switch could be wanted by the next
/// thread on this core).
pub fn cond_resched() {
    if kcb::current().sched.need_resched.load(Ordering::Relaxed) {
        schedule();
    }
}

/// A step boundary of long work on behalf of `me` (big copies, console output, work over
/// large ranges): a preemption point ([`cond_resched`]), then whether to go on: `false` once
/// `me` is dying (SIGKILL, exit), so that a killed process stops promptly. Same rule as
/// `cond_resched`: no lock held.
pub fn keep_going(me: &Thread) -> bool {
    cond_resched();
    !me.dying()
}

/// Called on every timer interrupt (`user`: it interrupted user mode): counts the tick
/// ([`account_tick`]), wakes sleepers whose deadline passed (also the other KCBs', on a core
/// that runs several) and asks for a switch when the time slice is used up and another thread
/// is ready, or when this KCB's turn is used up and another KCB of the core has work.
pub fn timer_tick(user: bool) {
    let Some(k) = kcb::try_current() else { return };
    account_tick(k, user);
    fire_timers(k, crate::time::now_ns());
    // A tickless core: the interrupt wakes sleepers and ends a slice others wait for.
    if k.sched.is_tickless() {
        end_slice(k);
        arm_next_timer(k);
    } else {
        slices_and_turns(k);
    }
}

/// Each core's tick count when the boot core's tick last looked at it ([`watch_ticks`]).
static TICKS_SEEN: [AtomicU64; kcb::MAX_CORES] = [const { AtomicU64::new(0) }; kcb::MAX_CORES];
/// Timers found stopped on a core with a periodic tick and started again ([`check_timer`]).
pub static TIMER_RESTARTS: AtomicU64 = AtomicU64::new(0);

/// The tick watch, on the boot core's tick (`k` is its current KCB): once a second, every other
/// online core with a periodic tick whose tick count has not moved since the last look gets a
/// `CheckTimer` IPI ([`check_timer`]). A core whose timer stopped takes no tick, and its
/// sleepers would never wake. Sends only: a core that ticks after all (its count read between
/// two of its own ticks, or a parked KCB's turn took them) checks a running timer and does
/// nothing.
pub fn watch_ticks(k: &Kcb) {
    if !k.timer_ticks.load(Ordering::Relaxed).is_multiple_of(crate::time::TIMER_HZ) {
        return;
    }
    for (core, seen) in TICKS_SEEN.iter().enumerate().skip(1) {
        let Some(other) = kcb::get(core) else {
            continue;
        };
        let ticks = other.timer_ticks.load(Ordering::Relaxed);
        let last = seen.swap(ticks, Ordering::Relaxed);
        if ticks == last
            && other.state() == kcb::CoreState::Online
            && !other.sched.is_tickless()
        {
            // Not online any more: it stopped meanwhile, and has nothing to check.
            let _ = crate::ipi::send(core, crate::ipi::IpiKind::CheckTimer);
        }
    }
}

/// The `CheckTimer` request to `k`, one of the KCBs this core runs, in its IPI handler: if `k`
/// is this core's own, online, with a periodic tick, and its timer is masked or has no count,
/// starts it again and says so on the console.
pub fn check_timer(k: &Kcb) {
    let own = kcb::current().runner();
    if !core::ptr::eq(k, own)
        || k.state() != kcb::CoreState::Online
        || k.sched.is_tickless()
        || crate::arch::apic::timer_running()
    {
        return;
    }
    crate::time::start_timer();
    TIMER_RESTARTS.fetch_add(1, Ordering::Relaxed);
    crate::kprintln!(
        "reef: timer: core {} had stopped its timer after {} ticks; started again",
        k.core_id,
        k.timer_ticks.load(Ordering::Relaxed)
    );
}

/// The tick's scheduling: ends the running thread's time slice, and the turn of this core's
/// KCB or a parked one when another has work.
fn slices_and_turns(k: &'static Kcb) {
    let (mut mates, mut waiting) = (false, false);
    for p in k.turn_mates() {
        fire_timers(p, crate::time::now_ns_of(p));
        mates = true;
        waiting |= !p.sched.ready.lock().is_empty() || p.sched.nr_sync.load(Ordering::Acquire);
    }
    let left = k.sched.slice.load(Ordering::Relaxed).saturating_sub(1);
    k.sched.slice.store(left, Ordering::Relaxed);
    if left == 0 && !k.sched.ready.lock().is_empty() {
        k.sched.need_resched.store(true, Ordering::Relaxed);
    }
    if mates {
        let turn = k.sched.turn_ticks.load(Ordering::Relaxed) + 1;
        k.sched.turn_ticks.store(turn, Ordering::Relaxed);
        if turn >= KCB_TURN_TICKS && waiting {
            k.sched.turn_over.store(true, Ordering::Release);
            k.sched.need_resched.store(true, Ordering::Relaxed);
        }
    }
}

/// Has this core's timer interrupt when it is next needed (the `reef-rt` image's cores have no
/// periodic tick, as Linux's `nohz_full`): at the earliest deadline of its sleepers and, while
/// other threads wait, at the end of the running thread's time slice, which the interrupt
/// then ends; a thread alone on the core is never interrupted by the timer. Only for a
/// tickless core (`k` is the current one).
pub fn arm_next_timer(k: &Kcb) {
    let now = crate::time::now_ns();
    let waiting = !k.sched.ready.lock().is_empty();
    let slice = if waiting {
        let end = match k.sched.slice_end.load(Ordering::Relaxed) {
            0 => now + TIME_SLICE_TICKS * 1_000_000_000 / crate::time::TIMER_HZ,
            end => end,
        };
        k.sched.slice_end.store(end, Ordering::Relaxed);
        Some(end)
    } else {
        k.sched.slice_end.store(0, Ordering::Relaxed);
        None
    };
    let sleeper = k.sched.timers.lock().iter().map(|&(d, _, _)| d).min();
    crate::time::arm_oneshot(sleeper.into_iter().chain(slice).min());
}

/// The timer interrupt of a tickless core: ends the running thread's time slice if it is over
/// and another thread waits.
fn end_slice(k: &Kcb) {
    let end = k.sched.slice_end.load(Ordering::Relaxed);
    if end != 0 && crate::time::now_ns() >= end && !k.sched.ready.lock().is_empty() {
        k.sched.slice_end.store(0, Ordering::Relaxed);
        k.sched.need_resched.store(true, Ordering::Relaxed);
    }
}

/// Wakes the sleepers on `k`'s timer list whose deadline is past `now` (`k`'s clock).
fn fire_timers(k: &Kcb, now: u64) {
    let expired: Vec<(u64, Arc<Thread>)> = {
        let mut timers = k.sched.timers.lock();
        let mut out = Vec::new();
        timers.retain(|(deadline, seq, t)| {
            if *deadline <= now {
                out.push((*seq, t.clone()));
                false
            } else {
                true
            }
        });
        out
    };
    for (seq, t) in expired {
        if t.sleep_seq.load(Ordering::Acquire) == seq {
            t.timed_out.store(true, Ordering::Release);
            wake(&t);
        }
    }
}

/// Arms a wake-up of the current thread at `deadline_ns` (on this core's timer list).
pub fn arm_timer(thread: &Arc<Thread>, deadline_ns: u64) {
    thread.timed_out.store(false, Ordering::Release);
    let k = kcb::current();
    let mut timers = k.sched.timers.lock();
    let seq = thread.sleep_seq.fetch_add(1, Ordering::AcqRel) + 1;
    thread.timer_core.store(k.core_id, Ordering::Release);
    timers.push((deadline_ns, seq, thread.clone()));
    drop(timers);
    if k.sched.is_tickless() {
        arm_next_timer(k);
    }
}

/// Removes the current thread's pending wake-up, if any. The entry is looked for on the core
/// that holds it (`Thread::timer_core`: the thread may have moved since it armed it); one
/// that a stopping core moves meanwhile stays until its deadline but can no longer fire, since
/// the sleep number changes here.
pub fn disarm_timer(thread: &Arc<Thread>) {
    thread.sleep_seq.fetch_add(1, Ordering::AcqRel);
    if let Some(k) = kcb::get(thread.timer_core.load(Ordering::Acquire)) {
        k.sched
            .timers
            .lock()
            .retain(|(_, _, t)| !Arc::ptr_eq(t, thread));
    }
}

/// Asks core `k` to stop (Barrelfish/DC §4.5): from now on it takes only threads that may run
/// nowhere else, and at its next scheduling point it switches to its idle context, which
/// stops it (`smp::stop_this_core`). Called by the `Stop` IPI on `k`'s own core, or directly
/// when a thread asks for its own core to stop.
pub fn request_stop(k: &Kcb) {
    {
        let _ready = k.sched.ready.lock();
        k.set_state(kcb::CoreState::Stopping);
    }
    k.sched.stop_requested.store(true, Ordering::Release);
    k.sched.need_resched.store(true, Ordering::Release);
}

/// Woken each time a host gives a parked KCB back (`smp::release_guest`), for the thread
/// that unparks it (`corectl::unpark`), which may run on the host itself: it must sleep, not
/// poll, for the host's idle context to run.
pub static GUEST_RELEASED: super::wait::WaitQueue = super::wait::WaitQueue::new();

/// The `Host` IPI on core `own` (its own KCB): takes the KCBs claimed for parking here whose
/// cores have stopped (`smp::host_guest`), and when asked to give one back, ends the current
/// turn so that the idle context does it (`smp::release_guest`).
pub fn host_request(own: &Kcb) {
    for g in own.claimed() {
        if g.state() == kcb::CoreState::Stopped {
            crate::smp::host_guest(own, g);
        }
    }
    if own
        .hosted()
        .any(|g| g.sched.release_guest.load(Ordering::Acquire))
    {
        let turn = kcb::current();
        turn.sched.turn_over.store(true, Ordering::Release);
        turn.sched.need_resched.store(true, Ordering::Release);
    }
}

/// The parked KCB whose turn is next on `own`'s core: the first after the one that ran last
/// (in core order, round robin) that has a thread ready.
fn next_guest(own: &Kcb) -> Option<&'static Kcb> {
    let last = own.sched.last_guest.load(Ordering::Relaxed);
    let ready = |g: &&'static Kcb| !g.sched.ready.lock().is_empty();
    own.hosted()
        .filter(|g| g.core_id > last)
        .find(ready)
        .or_else(|| own.hosted().find(ready))
}

/// One turn of a KCB parked on this core (see "Parked KCBs" above), from the idle context of
/// `own`, this core's KCB, with interrupts off: runs the parked KCB's threads until its turn is
/// over or none is ready, then makes `own` current again.
fn run_guest(own: &'static Kcb, guest: &'static Kcb) {
    own.sched.last_guest.store(guest.core_id, Ordering::Relaxed);
    guest.sched.idle.store(false, Ordering::Release);
    guest.sched.turn_ticks.store(0, Ordering::Relaxed);
    // SAFETY: this core runs on its own boot stack in its idle context, with interrupts off;
    // the guest's core is stopped (held in wait-for-SIPI since its stop) and only its host, this
    // core, runs its KCB, from here only.
    unsafe { guest.adopt() };
    schedule();
    guest.sched.turn_over.store(false, Ordering::Release);
    // SAFETY: back in this core's idle context with interrupts off (`schedule` returns with
    // them as they were); the KCB is this core's own.
    unsafe { own.adopt() };
    own.sched.turn_ticks.store(0, Ordering::Relaxed);
}

/// Moves everything a stopping core holds that may run elsewhere (ready threads, and the
/// timed wake-ups of sleeping threads) to the cores [`choose_core`] picks; threads that may run
/// only here stay, with their wake-ups, until the core starts again. Runs in the stopping
/// core's idle context with interrupts off, after [`request_stop`].
fn evacuate(k: &Kcb) {
    let threads = core::mem::take(&mut *k.sched.ready.lock());
    for t in threads {
        if t.state() != ThreadState::Exited {
            enqueue(choose_core(&t, k.core_id), t);
        }
    }
    let timers = core::mem::take(&mut *k.sched.timers.lock());
    let mut kept = Vec::new();
    for (deadline, seq, t) in timers {
        let core = choose_core(&t, k.core_id);
        match kcb::get(core).filter(|_| core != k.core_id) {
            Some(other) => {
                {
                    let mut list = other.sched.timers.lock();
                    t.timer_core.store(core, Ordering::Release);
                    list.push((deadline, seq, t));
                }
                // A tickless core (`reef-rt`) has its timer armed for its own sleepers only:
                // its IPI handler arms it again, for this one too.
                if other.sched.is_tickless() {
                    let _ = crate::ipi::send(core, crate::ipi::IpiKind::Ping);
                }
            }
            None => kept.push((deadline, seq, t)),
        }
    }
    k.sched.timers.lock().extend(kept);
}

/// Moves `thread`, if it is dying and waits in the run queue of a core that is stopped or
/// stopping, to a core that runs: a killed thread must run to exit (a stopping core that has
/// already taken its queue moves it itself, since [`choose_core`] sees it dying).
pub fn rescue(thread: &Arc<Thread>) {
    if !thread.dying() {
        return;
    }
    let core = thread.core.load(Ordering::Acquire);
    let Some(k) = kcb::get(core) else { return };
    if matches!(k.state(), kcb::CoreState::Online | kcb::CoreState::Starting) {
        return;
    }
    let taken = {
        let mut ready = k.sched.ready.lock();
        let before = ready.len();
        ready.retain(|t| !Arc::ptr_eq(t, thread));
        ready.len() != before
    };
    if taken {
        enqueue(choose_core(thread, core), thread.clone());
    }
}

/// Threads whose run queue is this core's: ready ones and the running one.
pub fn queued_threads(k: &Kcb) -> usize {
    k.sched.ready.lock().len() + usize::from(k.sched.current.lock().is_some())
}

/// Whether an idle core should sync its node's replicas now (once per timer tick).
fn idle_sync_due(k: &Kcb) -> bool {
    k.sched.last_idle_sync.load(Ordering::Relaxed) != k.timer_ticks.load(Ordering::Relaxed)
}

/// The idle loop of every core: runs ready threads (and gives the KCB parked here its turns,
/// and gives it back when asked to), brings the node's replicas up to date when asked to, sends the console's pending Ctrl-C (and similar) signals and the SIGALRMs of
/// expired interval timers, runs pending self-test work, and otherwise halts until an
/// interrupt.
pub fn idle_loop() -> ! {
    // This core's own KCB: the current one here, except inside a parked KCB's turn.
    let k = kcb::current();
    loop {
        cpu::disable_interrupts();
        // This KCB's turn ended (a guest asked for one), or it has nothing to run: the next
        // guest's turn, if one has a thread ready.
        let turn_ended = k.sched.turn_over.load(Ordering::Relaxed)
            && k.sched.turn_over.swap(false, Ordering::AcqRel);
        let guest_due = if turn_ended || k.sched.ready.lock().is_empty() {
            next_guest(k)
        } else {
            None
        };
        let releasing = k
            .hosted()
            .find(|g| g.sched.release_guest.load(Ordering::Acquire));
        if k.sched.stop_requested.load(Ordering::Acquire) {
            evacuate(k);
            crate::smp::stop_this_core(k);
        } else if let Some(g) = releasing {
            crate::smp::release_guest(k, g);
            GUEST_RELEASED.notify_all();
        } else if let Some(g) = guest_due {
            k.sched.idle.store(false, Ordering::Release);
            run_guest(k, g);
        } else if !k.sched.ready.lock().is_empty() {
            k.sched.idle.store(false, Ordering::Release);
            schedule();
        } else if k.sched.nr_sync.swap(false, Ordering::AcqRel) || idle_sync_due(k) {
            // NrOS §4.5: an idle core keeps its node's replicas up to date, so they neither
            // hold up log space nor keep objects that other nodes already released (a reaped
            // process stays referenced by a replica until that replica applies the reap).
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            crate::replicated::sync_local_node();
            k.sched
                .last_idle_sync
                .store(k.timer_ticks.load(Ordering::Relaxed), Ordering::Relaxed);
        } else if DUMP_THREADS.swap(false, Ordering::AcqRel) {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            super::dump_threads();
        } else if crate::tty::signals_pending() {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            crate::tty::send_signals();
        } else if super::itimer::pending() {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            super::itimer::send_due();
        } else if crate::net::pending() {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            crate::net::run_due();
        } else if crate::selftest::pending() {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            crate::selftest::run_pending();
        } else {
            k.sched.idle.store(true, Ordering::Release);
            for g in k.hosted() {
                g.sched.idle.store(true, Ordering::Release);
            }
            let guests_idle = k.hosted().all(|g| {
                g.sched.ready.lock().is_empty() && !g.sched.release_guest.load(Ordering::Acquire)
            });
            if k.sched.ready.lock().is_empty()
                && guests_idle
                && !k.sched.nr_sync.load(Ordering::Acquire)
            {
                // A tickless core's sleepers may have been moved here with their timers.
                if k.sched.is_tickless() {
                    arm_next_timer(k);
                }
                cpu::enable_and_halt();
            }
        }
    }
}

/// The NMI's report asks the next core that goes idle to print every process and thread
/// (`proc::dump_threads`), which takes locks the NMI may not.
static DUMP_THREADS: AtomicBool = AtomicBool::new(false);

/// Prints every core's scheduler state on the console (the NMI's report, `irq::nmi`;
/// QEMU's monitor command `nmi` sends one): per KCB its state, image, flags, IPI mailbox, the
/// running thread, the ready queue and the timed wake-ups (ms from now, thread, `off` for one
/// no longer armed), each thread with its state. For a guest that hangs with every core idle,
/// it shows where a wake-up went; a core whose tick count stands still while the others' move
/// has lost its timer. It allocates nothing and only tries locks (the interrupted code may hold
/// them): `?` for one held. Then asks for the thread report ([`DUMP_THREADS`]).
pub fn dump() {
    use crate::console::print_emergency as out;
    for k in (0..kcb::MAX_CORES).filter_map(kcb::get) {
        let now = crate::time::now_ns_of(k);
        out(format_args!(
            "reef: nmi: core {} {:?} image {} starts {} ticks {} idle {} tickless {} stop {} \
             resched {} ipi {}/{}",
            k.core_id,
            k.state(),
            k.image.load(Ordering::Relaxed),
            k.starts.load(Ordering::Relaxed),
            k.timer_ticks.load(Ordering::Relaxed),
            k.sched.idle.load(Ordering::Relaxed),
            k.sched.tickless.load(Ordering::Relaxed),
            k.sched.stop_requested.load(Ordering::Relaxed),
            k.sched.need_resched.load(Ordering::Relaxed),
            k.ipi.handled.load(Ordering::Relaxed),
            k.ipi.requested.load(Ordering::Relaxed),
        ));
        match k.sched.current.try_lock_for(1000) {
            Some(c) => match c.as_deref() {
                Some(t) => out(format_args!(" running {}:{:?}", t.tid, t.state())),
                None => out(format_args!(" running idle")),
            },
            None => out(format_args!(" running ?")),
        }
        match k.sched.ready.try_lock_for(1000) {
            Some(q) => {
                out(format_args!(" ready ["));
                for t in q.iter() {
                    out(format_args!(" {}:{:?}", t.tid, t.state()));
                }
                out(format_args!(" ]"));
            }
            None => out(format_args!(" ready ?")),
        }
        match k.sched.timers.try_lock_for(1000) {
            Some(timers) => {
                out(format_args!(" timers ["));
                for (deadline, seq, t) in timers.iter() {
                    let off = t.sleep_seq.load(Ordering::Relaxed) != *seq;
                    out(format_args!(
                        " {}ms {}:{:?}{}",
                        deadline.saturating_sub(now) / 1_000_000,
                        t.tid,
                        t.state(),
                        if off { "(off)" } else { "" }
                    ));
                }
                out(format_args!(" ]"));
            }
            None => out(format_args!(" timers ?")),
        }
        out(format_args!("\n"));
    }
    DUMP_THREADS.store(true, Ordering::Release);
}
