#include <unistd.h>
_Thread_local int counter = 7;
int main(int argc, char **argv) {
    static const char msg[] = "hello from reef\n";
    counter += argc;
    write(1, msg, sizeof msg - 1);
    return counter == 8 ? 0 : 1;
}
