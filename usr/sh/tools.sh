# tools.sh: busybox's process and system tools, which read /proc and the kernel log: `top -n 1`
# (its memory, CPU and load lines, a line for itself), `ps -o pid,comm,stat` (the header, this
# shell's state, `ps` running), `uptime`, `nproc` within /proc/stat's cores, and `dmesg` (on
# Reef it must hold the boot line; Linux may refuse it without CAP_SYSLOG). Prints facts, not
# the tools' numbers, so the output is the same on Reef and Linux.
t=/tmp/tools.$$
top -n 1 -b > $t || echo "top failed"
grep -q '^Mem: [0-9]*K used, [0-9]*K free' $t && echo "top: memory line"
grep -q '^CPU: .* usr .* sys .* idle' $t && echo "top: CPU line"
grep -q '^Load average: [0-9.]* [0-9.]* [0-9.]* [0-9]*/[0-9]* [0-9]*' $t && echo "top: load line"
grep -q 'PID .*PPID .*STAT .*COMMAND' $t && echo "top: header"
grep -q "^ *[0-9]* *$$ .* top -n 1 -b" $t && echo "top: its own line, child of this shell"

ps -o pid,comm,stat > $t || echo "ps failed"
head -1 $t | grep -q '^PID *COMMAND *STAT' && echo "ps: header"
# The shell sleeps in wait4 for `ps`, unless `ps` reads its state first (another core).
grep -q "^ *$$ [^ ]* *[RS]" $t && echo "ps: this shell running or sleeping"
grep -q "^ *[0-9]* ps *R" $t && echo "ps: ps running"

uptime | grep -q 'up .*load average: [0-9.]*, [0-9.]*, [0-9.]*$' && echo "uptime: up, load average"
# nproc counts the cores this shell may run on (fewer where fleet servers own cores).
cores=$(grep -c '^cpu[0-9]' /proc/stat)
n=$(nproc)
[ "$n" -ge 1 ] && [ "$n" -le "$cores" ] && echo "nproc: between 1 and the cores of /proc/stat"

if uname -r | grep -q reef; then
	dmesg | grep -q 'reef: boot ok' && echo "dmesg: the kernel log"
elif dmesg > /dev/null 2>&1; then
	dmesg | grep -q . && echo "dmesg: the kernel log"
else
	echo "dmesg: the kernel log"
fi
rm -f $t
