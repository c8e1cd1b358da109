/*
 * signals: signal delivery between and within processes.
 *
 * - rt_sigaction with SA_SIGINFO: kill() to itself runs the handler before kill returns, with
 *   si_signo, si_code SI_USER, si_pid and si_uid; inside the handler the signal and sa_mask are
 *   blocked, afterwards the old mask is back;
 * - rt_sigprocmask: a blocked signal stays pending (sent twice, it is delivered once) and is
 *   delivered when unblocked, before sigprocmask returns; SIGKILL/SIGSTOP cannot be blocked;
 * - kill from parent to child and from child to parent (si_pid is the sender);
 * - tgkill to a particular thread runs the handler on that thread (si_code SI_TKILL);
 * - SIGCHLD on a child's exit (CLD_EXITED, si_status) and on its death by signal (CLD_KILLED);
 * - the default action of SIGTERM kills a child (WIFSIGNALED, WTERMSIG SIGTERM);
 * - sigreturn restores every register: a thread spinning with known values in all general
 *   registers, all 16 XMM registers, MXCSR and the x87 control word is interrupted (tgkill from
 *   another thread) by a handler that overwrites them all and sets the direction flag; after the
 *   handler returns the loop finds its values intact.
 */
#include "reef-test.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static volatile sig_atomic_t usr1_count;
static siginfo_t usr1_info;
static sigset_t usr1_mask;
static atomic_int usr1_tid;

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    usr1_info = *si;
    sigprocmask(SIG_BLOCK, NULL, &usr1_mask);
    atomic_store(&usr1_tid, (int)syscall(SYS_gettid));
    usr1_count++;
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *), int extra_masked)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (extra_masked)
        sigaddset(&sa.sa_mask, extra_masked);
    CHECK_SYS(sigaction(sig, &sa, NULL));
}

static int blocked(int sig)
{
    sigset_t now;
    CHECK_SYS(sigprocmask(SIG_BLOCK, NULL, &now));
    return sigismember(&now, sig);
}

static void self_signal(void)
{
    handle(SIGUSR1, on_usr1, SIGUSR2);
    usr1_count = 0;
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_EQ(usr1_count, 1);
    CHECK_EQ(usr1_info.si_signo, SIGUSR1);
    CHECK_EQ(usr1_info.si_code, SI_USER);
    CHECK_EQ(usr1_info.si_pid, getpid());
    CHECK_EQ(usr1_info.si_uid, getuid());
    CHECK(sigismember(&usr1_mask, SIGUSR1));
    CHECK(sigismember(&usr1_mask, SIGUSR2));
    CHECK(!blocked(SIGUSR1));
    CHECK(!blocked(SIGUSR2));
    SAY("kill to self: SA_SIGINFO handler ran before kill returned (SI_USER, si_pid, si_uid); "
        "the signal and sa_mask were blocked inside it only");
}

static void mask_and_pending(void)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    CHECK_SYS(sigprocmask(SIG_BLOCK, &set, &old));
    usr1_count = 0;
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_EQ(usr1_count, 0);
    CHECK(blocked(SIGUSR1));
    CHECK_SYS(sigprocmask(SIG_SETMASK, &old, NULL));
    CHECK_EQ(usr1_count, 1);
    SAY("blocked SIGUSR1 sent twice stayed pending; unblocking delivered it once");

    sigemptyset(&set);
    sigaddset(&set, SIGKILL);
    sigaddset(&set, SIGSTOP);
    CHECK_SYS(sigprocmask(SIG_BLOCK, &set, NULL));
    CHECK(!blocked(SIGKILL));
    CHECK(!blocked(SIGSTOP));
    SAY("SIGKILL and SIGSTOP cannot be blocked");
}

static volatile sig_atomic_t usr2_count;
static siginfo_t usr2_info;

static void on_usr2(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    usr2_info = *si;
    usr2_count++;
}

static void between_processes(void)
{
    handle(SIGUSR1, on_usr1, 0);
    handle(SIGUSR2, on_usr2, 0);
    usr1_count = 0;
    usr2_count = 0;
    pid_t parent = getpid();
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        while (!usr1_count)
            sched_yield();
        if (usr1_info.si_pid != parent || usr1_info.si_code != SI_USER)
            _exit(10);
        if (kill(parent, SIGUSR2) != 0)
            _exit(11);
        _exit(0);
    }
    CHECK_SYS(kill(pid, SIGUSR1));
    while (!usr2_count)
        sched_yield();
    CHECK_EQ(usr2_info.si_pid, pid);
    CHECK_EQ(usr2_info.si_code, SI_USER);
    CHECK_CHILD_EXIT(pid, 0);
    SAY("parent -> child SIGUSR1 and child -> parent SIGUSR2, each with the sender's si_pid");
}

static atomic_int thread_tid;

static void *tgkill_target(void *arg)
{
    (void)arg;
    atomic_store(&thread_tid, (int)syscall(SYS_gettid));
    while (!usr1_count)
        sched_yield();
    return NULL;
}

static void to_thread(void)
{
    handle(SIGUSR1, on_usr1, 0);
    usr1_count = 0;
    atomic_store(&thread_tid, 0);
    pthread_t th;
    CHECK_PT(pthread_create(&th, NULL, tgkill_target, NULL));
    int tid;
    while ((tid = atomic_load(&thread_tid)) == 0)
        sched_yield();
    CHECK(tid != getpid());
    CHECK_SYS(syscall(SYS_tgkill, getpid(), tid, SIGUSR1));
    CHECK_PT(pthread_join(th, NULL));
    CHECK_EQ(usr1_count, 1);
    CHECK_EQ(atomic_load(&usr1_tid), tid);
    CHECK_EQ(usr1_info.si_code, SI_TKILL);
    CHECK_EQ(usr1_info.si_pid, getpid());
    SAY("tgkill: the handler ran on the target thread (tid %d, SI_TKILL)", tid);
}

static volatile sig_atomic_t chld_count;
static siginfo_t chld_info;

static void on_chld(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    chld_info = *si;
    chld_count++;
}

static void children(void)
{
    handle(SIGCHLD, on_chld, 0);
    chld_count = 0;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(7);
    while (chld_count == 0)
        sched_yield();
    CHECK_EQ(chld_info.si_signo, SIGCHLD);
    CHECK_EQ(chld_info.si_pid, pid);
    CHECK_EQ(chld_info.si_code, CLD_EXITED);
    CHECK_EQ(chld_info.si_status, 7);
    CHECK_CHILD_EXIT(pid, 7);
    SAY("SIGCHLD on a child's exit: si_pid, CLD_EXITED, si_status 7");

    volatile int *ready = shared_page(4096);
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        signal(SIGCHLD, SIG_DFL);
        *ready = 1;
        for (;;)
            sched_yield();
    }
    while (!*ready)
        sched_yield();
    chld_count = 0;
    CHECK_SYS(kill(pid, SIGTERM));
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
        ;
    CHECK_EQ(w, pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM)
        FAIL("child sent SIGTERM %s, expected killed by SIGTERM", describe_wait(st));
    while (chld_count == 0)
        sched_yield();
    CHECK_EQ(chld_info.si_pid, pid);
    CHECK_EQ(chld_info.si_code, CLD_KILLED);
    CHECK_EQ(chld_info.si_status, SIGTERM);
    SAY("SIGTERM's default action killed a child (WTERMSIG 15; SIGCHLD with CLD_KILLED)");
    signal(SIGCHLD, SIG_DFL);
    munmap((void *)ready, 4096);
}

/* ---- sigreturn restores all registers ---- */

/* Values the loop loads (15 general registers, 16 XMM registers) and what it finds after. */
unsigned long reg_in[15], reg_out[15];
unsigned char xmm_in[16][16], xmm_out[16][16];
unsigned int mxcsr_in = 0x3f80, mxcsr_out, mxcsr_saved; /* loop: round down, all masked */
unsigned short fcw_in = 0x27f, fcw_out, fcw_saved;    /* loop: 53-bit precision */
unsigned long rflags_out, handler_rflags;
unsigned int clobber_mxcsr = 0x7f80; /* handler: round toward zero */
unsigned short clobber_fcw = 0x07f;  /* handler: 24-bit precision */
atomic_int in_loop, handler_done;

void register_loop(void);
void clobber_handler(int, siginfo_t *, void *);

#define LOAD_XMM(n) "  movdqu xmm_in+" #n "*16(%rip), %xmm" #n "\n"
#define STORE_XMM(n) "  movdqu %xmm" #n ", xmm_out+" #n "*16(%rip)\n"
#define ONES_XMM(n) "  pcmpeqd %xmm" #n ", %xmm" #n "\n"
#define ALL_XMM(m)                                                                                 \
    m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)

__asm__(".text\n"
        ".globl register_loop\n"
        ".type register_loop, @function\n"
        "register_loop:\n"
        "  push %rbx\n  push %rbp\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
        "  stmxcsr mxcsr_saved(%rip)\n"
        "  fnstcw fcw_saved(%rip)\n"
        "  ldmxcsr mxcsr_in(%rip)\n"
        "  fldcw fcw_in(%rip)\n" ALL_XMM(LOAD_XMM)
        "  mov reg_in+0(%rip), %rax\n"
        "  mov reg_in+8(%rip), %rbx\n"
        "  mov reg_in+16(%rip), %rcx\n"
        "  mov reg_in+24(%rip), %rdx\n"
        "  mov reg_in+32(%rip), %rsi\n"
        "  mov reg_in+40(%rip), %rdi\n"
        "  mov reg_in+48(%rip), %rbp\n"
        "  mov reg_in+56(%rip), %r8\n"
        "  mov reg_in+64(%rip), %r9\n"
        "  mov reg_in+72(%rip), %r10\n"
        "  mov reg_in+80(%rip), %r11\n"
        "  mov reg_in+88(%rip), %r12\n"
        "  mov reg_in+96(%rip), %r13\n"
        "  mov reg_in+104(%rip), %r14\n"
        "  mov reg_in+112(%rip), %r15\n"
        "  movl $1, in_loop(%rip)\n"
        "1:\n"
        "  pause\n"
        "  cmpl $0, handler_done(%rip)\n"
        "  je 1b\n"
        "  mov %rax, reg_out+0(%rip)\n"
        "  mov %rbx, reg_out+8(%rip)\n"
        "  mov %rcx, reg_out+16(%rip)\n"
        "  mov %rdx, reg_out+24(%rip)\n"
        "  mov %rsi, reg_out+32(%rip)\n"
        "  mov %rdi, reg_out+40(%rip)\n"
        "  mov %rbp, reg_out+48(%rip)\n"
        "  mov %r8, reg_out+56(%rip)\n"
        "  mov %r9, reg_out+64(%rip)\n"
        "  mov %r10, reg_out+72(%rip)\n"
        "  mov %r11, reg_out+80(%rip)\n"
        "  mov %r12, reg_out+88(%rip)\n"
        "  mov %r13, reg_out+96(%rip)\n"
        "  mov %r14, reg_out+104(%rip)\n"
        "  mov %r15, reg_out+112(%rip)\n" ALL_XMM(STORE_XMM)
        "  pushfq\n"
        "  pop rflags_out(%rip)\n"
        "  stmxcsr mxcsr_out(%rip)\n"
        "  fnstcw fcw_out(%rip)\n"
        "  cld\n"
        "  ldmxcsr mxcsr_saved(%rip)\n"
        "  fldcw fcw_saved(%rip)\n"
        "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbp\n  pop %rbx\n"
        "  ret\n"
        ".size register_loop, . - register_loop\n"
        "\n"
        ".globl clobber_handler\n"
        ".type clobber_handler, @function\n"
        "clobber_handler:\n"
        "  pushfq\n"
        "  pop handler_rflags(%rip)\n"
        "  movabs $0xbad0000000000001, %rax\n"
        "  movabs $0xbad0000000000002, %rbx\n"
        "  movabs $0xbad0000000000003, %rcx\n"
        "  movabs $0xbad0000000000004, %rdx\n"
        "  movabs $0xbad0000000000005, %rsi\n"
        "  movabs $0xbad0000000000006, %rdi\n"
        "  movabs $0xbad0000000000007, %rbp\n"
        "  movabs $0xbad0000000000008, %r8\n"
        "  movabs $0xbad0000000000009, %r9\n"
        "  movabs $0xbad000000000000a, %r10\n"
        "  movabs $0xbad000000000000b, %r11\n"
        "  movabs $0xbad000000000000c, %r12\n"
        "  movabs $0xbad000000000000d, %r13\n"
        "  movabs $0xbad000000000000e, %r14\n"
        "  movabs $0xbad000000000000f, %r15\n" ALL_XMM(ONES_XMM)
        "  ldmxcsr clobber_mxcsr(%rip)\n"
        "  fldcw clobber_fcw(%rip)\n"
        "  movl $1, handler_done(%rip)\n"
        "  std\n"
        "  ret\n"
        ".size clobber_handler, . - clobber_handler\n");

static atomic_int loop_tid;

static void *interrupter(void *arg)
{
    (void)arg;
    while (!atomic_load(&in_loop))
        sched_yield();
    if (syscall(SYS_tgkill, getpid(), atomic_load(&loop_tid), SIGUSR2) != 0)
        FAIL("tgkill to the looping thread: %s", strerror(errno));
    return NULL;
}

static void registers(void)
{
    for (int i = 0; i < 15; i++)
        reg_in[i] = 0x0123456789abcdefUL * (unsigned long)(i + 1) ^ ((unsigned long)i << 56);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            xmm_in[i][j] = (unsigned char)(i * 16 + j + 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = clobber_handler;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    atomic_store(&loop_tid, (int)syscall(SYS_gettid));
    pthread_t th;
    CHECK_PT(pthread_create(&th, NULL, interrupter, NULL));
    register_loop();
    CHECK_PT(pthread_join(th, NULL));
    static const char *names[15] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
                                    "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    for (int i = 0; i < 15; i++)
        if (reg_out[i] != reg_in[i])
            FAIL("after sigreturn %s = 0x%lx, expected 0x%lx", names[i], reg_out[i], reg_in[i]);
    for (int i = 0; i < 16; i++)
        if (memcmp(xmm_out[i], xmm_in[i], 16) != 0)
            FAIL("after sigreturn xmm%d differs from its value before the signal", i);
    CHECK_EQ(mxcsr_out & 0xffc0, mxcsr_in & 0xffc0);
    CHECK_EQ(fcw_out, fcw_in);
    if (handler_rflags & 0x400)
        FAIL("the handler was entered with the direction flag set");
    if (rflags_out & 0x400)
        FAIL("the direction flag the handler set survived sigreturn");
    signal(SIGUSR2, SIG_DFL);
    SAY("sigreturn restored 15 general registers, 16 XMM registers, MXCSR, the x87 control "
        "word and the direction flag");
}

int main(void)
{
    test_begin("signals");
    self_signal();
    mask_and_pending();
    between_processes();
    to_thread();
    children();
    registers();
    PASS();
}
