# jobs.sh: background jobs (&, $!, wait with and without operands), exit statuses, kill of a
# background job (TERM, KILL, USR1), traps (TERM, EXIT, INT ignored), several jobs at once
# writing their own files, a job killed while the shell waits in a pipeline. No terminal.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-jobs.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

echo "== statuses"
(exit 7) &
wait $!
echo "wait: $?"
true &
echo "after & status $?"
wait
echo "wait all: $?"
sh -c 'exit 3' & p1=$!
sh -c 'exit 5' & p2=$!
wait $p2; s2=$?
wait $p1; s1=$?
echo "p1 $s1 p2 $s2"
[ "$p1" != "$p2" ] && [ "$p1" -gt 0 ] && echo "distinct pids"
sh -c 'kill -9 $$' ; echo "self KILL: $?"
sh -c 'kill -TERM $$' ; echo "self TERM: $?"
sh -c 'exit 300'; echo "exit 300: $?"
wait 99999 2>/dev/null; echo "wait unknown pid: $?"

echo "== kill a background job"
# ash names the signal that killed a job only when `wait` itself reaps it, not when it reaped
# the job earlier on its own (which depends on timing): the names go to /dev/null.
sleep 30 & p=$!
kill -0 $p && echo "alive"
kill $p
wait $p 2>/dev/null
echo "TERM: $?"
kill -0 $p 2>/dev/null || echo "gone"
sleep 30 & p=$!
kill -9 $p
wait $p 2>/dev/null
echo "KILL: $?"
sleep 30 & p=$!
kill -USR1 $p
wait $p 2>/dev/null
echo "USR1: $?"
sleep 30 & p=$!
kill -s HUP $p
wait $p 2>/dev/null
echo "HUP: $?"
kill -l 15

echo "== traps"
sh -c 'trap "echo caught TERM; exit 4" TERM; kill -TERM $$; echo not reached'
echo "status $?"
sh -c 'trap "echo exit trap" EXIT; echo body'
sh -c 'trap "echo exit trap after 6" EXIT; exit 6'
echo "status $?"
sh -c 'trap "" INT; kill -INT $$; echo "INT ignored"'
sh -c 'trap "echo usr1" USR1; kill -USR1 $$; kill -USR1 $$; echo done'
# The child reports its pid only once its trap is set; the reader then signals it while it
# waits for a background sleep, which the trap kills, so that the pipe's last writer goes away.
set -o pipefail
sh -c 'trap "echo child caught TERM; kill \$s; exit 9" TERM; sleep 30 & s=$!; echo $$; wait' |
	{ read -r pid; kill -TERM "$pid"; cat; }
echo "pipeline: $?"
set +o pipefail

echo "== several jobs"
i=1
while [ $i -le 8 ]; do
	( n=0; j=0; while [ $j -lt 200 ]; do n=$((n + i)); j=$((j + 1)); done; echo "$i $n" > r.$i ) &
	i=$((i + 1))
done
wait
cat r.* | sort -n
ls r.* | wc -l
i=1
while [ $i -le 6 ]; do seq 1 500 > s.$i & i=$((i + 1)); done
wait
cat s.* | wc -l
md5sum s.* | awk '{ print $1 }' | sort -u | wc -l
rm r.* s.*
( echo a > j1; (echo b > j2) & wait; cat j2 ) &
wait $!
cat j1

echo "== exec and subshell exits"
(exec sh -c 'exit 11'); echo "exec in subshell: $?"
sh -c 'exec false'; echo "exec false: $?"
( exit 2 ) || echo "or branch taken"
sh -c 'nosuchcommand' 2>/dev/null; echo "not found: $?"
printf '#!/bin/sh\nexit 0\n' > noexec
sh -c './noexec' 2>/dev/null; echo "not executable: $?"
rm noexec j1 j2

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end jobs"
