/*
 * hello: the smoke test. Prints `hello from <argv[0]>` and exits with status 0.
 *
 * `hello segv` then dereferences a null pointer on purpose, so that a test can check how the
 * kernel reports an init killed by a signal (SIGSEGV: status 139).
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("hello from %s\n", argc > 0 ? argv[0] : "(no argv[0])");
    if (argc > 1 && strcmp(argv[1], "segv") == 0) {
        printf("hello: writing to address 0 on purpose\n");
        *(volatile int *)0 = 1;
        printf("hello: the write to address 0 did not fault\n");
        return 1;
    }
    return 0;
}
