/*
 * args: the initial process state the kernel builds: argv, envp and the auxiliary vector.
 *
 * Usage: args [expect=N:HEX,HEX,... ARG...]
 *
 * `expect=` says what argv[2..] must be: N arguments, each written in hex (an empty string is an
 * empty item), so the expectation itself needs no quoting on any command line. Without it the
 * program only prints its arguments. Every argument is printed C-escaped, one per line.
 *
 * Auxiliary vector: read both with getauxval() and by walking the vector that follows envp, and
 * checked against the program's own ELF headers (AT_PHDR, AT_PHNUM, AT_PHENT, AT_ENTRY), and for
 * AT_PAGESZ == 4096, 16 readable AT_RANDOM bytes, AT_EXECFN, AT_SECURE == 0 and AT_HWCAP. Built
 * twice: `args` (ET_EXEC) and `args-pie` (static PIE, ET_DYN, loaded at a bias).
 */
#include "reef-test.h"
#include <elf.h>
#include <sys/auxv.h>

/* Provided by the linker: the program's ELF header, mapped with its first segment. */
extern const Elf64_Ehdr __ehdr_start;
/* The entry point (musl's crt1/rcrt1). */
extern void _start(void);

/* A writable global, to find the data segment. */
static volatile int data_marker = 42;

static void print_escaped(const char *label, const char *s)
{
    char out[1024];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < sizeof out - 8; p++) {
        if (*p == '"' || *p == '\\')
            n += (size_t)snprintf(out + n, sizeof out - n, "\\%c", *p);
        else if (*p == '\t')
            n += (size_t)snprintf(out + n, sizeof out - n, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", *p);
        else
            out[n++] = (char)*p;
    }
    out[n] = 0;
    SAY("%s = \"%s\"", label, out);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the hex item starting at `*p` (up to ',' or the end) into `out`; advances `*p`. */
static void decode_item(const char **p, char *out, size_t cap)
{
    size_t n = 0;
    while (**p && **p != ',') {
        int hi = hexval((*p)[0]), lo = (*p)[1] ? hexval((*p)[1]) : -1;
        if (hi < 0 || lo < 0)
            FAIL("bad hex in expect= near '%s'", *p);
        if (n + 1 >= cap)
            FAIL("expected argument longer than %zu bytes", cap);
        out[n++] = (char)(hi * 16 + lo);
        *p += 2;
    }
    out[n] = 0;
    if (**p == ',')
        (*p)++;
}

static void check_argv(int argc, char **argv)
{
    CHECK(argc >= 1);
    CHECK(argv[argc] == NULL);
    SAY("argc = %d", argc);
    for (int i = 0; i < argc; i++) {
        char label[32];
        snprintf(label, sizeof label, "argv[%d]", i);
        print_escaped(label, argv[i]);
    }
    if (argc < 2 || strncmp(argv[1], "expect=", 7) != 0) {
        SAY("no expect= argument: arguments printed, not compared");
        return;
    }
    const char *p = argv[1] + 7;
    char *end;
    long want = strtol(p, &end, 10);
    if (end == p || *end != ':' || want < 0)
        FAIL("expect= must be N:HEX,HEX,... (got '%s')", argv[1]);
    p = end + 1;
    if (argc - 2 != want)
        FAIL("expected %ld arguments after expect=, got %d", want, argc - 2);
    for (long i = 0; i < want; i++) {
        char exp[1024];
        decode_item(&p, exp, sizeof exp);
        if (strcmp(exp, argv[2 + i]) != 0) {
            print_escaped("expected", exp);
            FAIL("argv[%ld] differs from the expectation", 2 + i);
        }
    }
    CHECK(*p == 0);
    SAY("%ld arguments match the expectation", want);
}

static void check_env(char **envp)
{
    int n = 0;
    for (char **e = envp; *e; e++, n++) {
        if (!strchr(*e, '='))
            FAIL("environment entry '%s' has no '='", *e);
    }
    SAY("%d environment variables", n);
    const char *path = getenv("PATH");
    if (!path)
        FAIL("PATH is not in the environment");
    SAY("PATH=%s", path);
    if (on_reef()) {
        /* The kernel's fixed environment for init (and inherited by exec here). */
        const char *home = getenv("HOME"), *term = getenv("TERM");
        if (!home || strcmp(home, "/") != 0)
            FAIL("on Reef HOME must be '/', got '%s'", home ? home : "(unset)");
        if (!term || strcmp(term, "linux") != 0)
            FAIL("on Reef TERM must be 'linux', got '%s'", term ? term : "(unset)");
        if (strcmp(path, "/bin:/usr/local/bin:/usr/bin:/test") != 0)
            FAIL("on Reef PATH must be '/bin:/usr/local/bin:/usr/bin:/test', got '%s'", path);
        SAY("HOME, TERM and PATH are Reef's");
    }
}

/* Auxiliary vector entries found by walking the vector after envp. */
static unsigned long aux_val[64];
static int aux_seen[64];

static void walk_auxv(char **envp)
{
    char **e = envp;
    while (*e)
        e++;
    const Elf64_auxv_t *av = (const Elf64_auxv_t *)(e + 1);
    int n = 0;
    for (; av->a_type != AT_NULL; av++, n++) {
        if (n > 200)
            FAIL("auxiliary vector has no AT_NULL within 200 entries");
        if (av->a_type < 64) {
            if (aux_seen[av->a_type])
                FAIL("auxiliary vector entry %lu appears twice", (unsigned long)av->a_type);
            aux_seen[av->a_type] = 1;
            aux_val[av->a_type] = av->a_un.a_val;
        }
    }
    SAY("auxiliary vector: %d entries before AT_NULL", n);
}

static unsigned long aux(int type, const char *name)
{
    if (!aux_seen[type])
        FAIL("auxiliary vector lacks %s (%d)", name, type);
    errno = 0;
    unsigned long v = getauxval((unsigned long)type);
    if (errno != 0)
        FAIL("getauxval(%s) failed: %s", name, strerror(errno));
    if (v != aux_val[type])
        FAIL("getauxval(%s) = 0x%lx but the vector says 0x%lx", name, v, aux_val[type]);
    SAY("%s = 0x%lx", name, v);
    return v;
}

#define AUX(t) aux(t, #t)

static void check_auxv(int argc, char **argv, char **envp)
{
    walk_auxv(envp);

    unsigned long pagesz = AUX(AT_PAGESZ);
    CHECK_EQ(pagesz, 4096);
    CHECK_EQ(sysconf(_SC_PAGESIZE), 4096);

    /* Program headers: where the kernel says they are must be where the linker put them. */
    const Elf64_Ehdr *eh = &__ehdr_start;
    CHECK(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0);
    unsigned long phdr = AUX(AT_PHDR), phnum = AUX(AT_PHNUM), phent = AUX(AT_PHENT);
    CHECK_EQ(phent, sizeof(Elf64_Phdr));
    CHECK_EQ(phnum, eh->e_phnum);
    CHECK_EQ(phdr, (uintptr_t)eh + eh->e_phoff);
    const Elf64_Phdr *ph = (const Elf64_Phdr *)phdr;
    /* Load bias: where the segment holding the ELF header (file offset 0) landed. */
    long bias = -1;
    for (unsigned long i = 0; i < phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            bias = (long)((uintptr_t)eh - ph[i].p_vaddr);
    if (bias < 0)
        FAIL("no PT_LOAD segment maps file offset 0 (the ELF header)");
    SAY("type %s, load bias 0x%lx", eh->e_type == ET_DYN ? "ET_DYN (static PIE)" : "ET_EXEC",
        bias);
    if (eh->e_type == ET_EXEC)
        CHECK_EQ(bias, 0);
    int text_found = 0, data_found = 0;
    for (unsigned long i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        uintptr_t lo = bias + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
        uintptr_t text = (uintptr_t)&_start, data = (uintptr_t)&data_marker;
        if (text >= lo && text < hi && (ph[i].p_flags & PF_X))
            text_found = 1;
        if (data >= lo && data < hi && (ph[i].p_flags & PF_W))
            data_found = 1;
    }
    if (!text_found)
        FAIL("no executable PT_LOAD (at AT_PHDR) contains _start at %p", (void *)&_start);
    if (!data_found)
        FAIL("no writable PT_LOAD (at AT_PHDR) contains a global at %p", (void *)&data_marker);
    CHECK_EQ(data_marker, 42);
    SAY("AT_PHDR/AT_PHNUM describe this program's segments");

    unsigned long entry = AUX(AT_ENTRY);
    CHECK_EQ(entry, (uintptr_t)&_start);
    CHECK_EQ(entry, bias + eh->e_entry);

    const volatile unsigned char *rnd = (const unsigned char *)AUX(AT_RANDOM);
    CHECK(rnd != NULL);
    char hex[33];
    int nonzero = 0;
    for (int i = 0; i < 16; i++) {
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
        nonzero |= rnd[i];
    }
    SAY("AT_RANDOM bytes: %s", hex);
    if (!nonzero)
        FAIL("the 16 AT_RANDOM bytes are all zero");

    const char *execfn = (const char *)AUX(AT_EXECFN);
    CHECK(execfn != NULL);
    print_escaped("AT_EXECFN", execfn);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (argc < 1 || (strcmp(execfn, argv[0]) != 0 && strcmp(execfn, exe) != 0))
        FAIL("AT_EXECFN '%s' is neither argv[0] nor the executable's path", execfn);

    CHECK_EQ(AUX(AT_SECURE), 0);
    AUX(AT_HWCAP);

    /* Where present, the ids must agree with the system calls. */
    if (aux_seen[AT_UID])
        CHECK_EQ(AUX(AT_UID), getuid());
    if (aux_seen[AT_EUID])
        CHECK_EQ(AUX(AT_EUID), geteuid());
    if (aux_seen[AT_GID])
        CHECK_EQ(AUX(AT_GID), getgid());
    if (aux_seen[AT_EGID])
        CHECK_EQ(AUX(AT_EGID), getegid());
}

static void check_uname(void)
{
    struct utsname u;
    CHECK_SYS(uname(&u));
    SAY("uname: %s %s %s %s", u.sysname, u.nodename, u.release, u.machine);
    CHECK(strcmp(u.sysname, "Linux") == 0);
    CHECK(strcmp(u.machine, "x86_64") == 0);
    if (on_reef()) {
        CHECK(strcmp(u.nodename, "reef") == 0);
        CHECK(strcmp(u.release, "6.1.0-reef") == 0);
    }
}

int main(int argc, char **argv, char **envp)
{
    test_begin(__ehdr_start.e_type == ET_DYN ? "args-pie" : "args");
    check_argv(argc, argv);
    check_env(envp);
    check_auxv(argc, argv, envp);
    check_uname();
    PASS();
}
