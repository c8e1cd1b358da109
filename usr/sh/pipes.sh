# pipes.sh: pipes and redirection: > >> < 2> 2>&1 (and its order), <>, noclobber, exec'd
# descriptors, here-documents, | chains (also of more data than a pipe holds), exit statuses of
# pipelines, SIGPIPE, subshells, { } groups, command substitution, read loops, tee.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-pipes.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

echo "== redirection"
echo out > o
echo more >> o
cat < o
sh -c 'echo to-stdout; echo to-stderr >&2' > so 2> se
cat so se
sh -c 'echo to-stdout; echo to-stderr >&2' > both 2>&1
sort both
sh -c 'echo to-stdout; echo to-stderr >&2' 2>&1 > only 2>/dev/null
cat only
sh -c 'echo to-stderr >&2' 2>&1 >/dev/null | tr a-z A-Z
sh -c 'echo to-stdout; echo to-stderr >&2' 2>/dev/null | cat
printf 'hello world\n' > rw
sh -c 'read -r w <&0; echo "$w"; echo X >&0' <> rw
cat rw
sh -c 'set -C; echo clobber > rw' 2>&1
sh -c 'set -C; echo clobber >| rw'
cat rw
sh -c 'set -C; echo new > fresh' && cat fresh

echo "== exec descriptors"
exec 3> fd3
echo first >&3
echo second >&3
exec 3>&-
cat fd3
exec 4< fd3
read -r l1 <&4
read -r l2 <&4
exec 4<&-
echo "$l2 $l1"
exec 5>> fd3
echo third >&5
exec 5>&-
wc -l < fd3
{ echo g1; echo g2 >&2; } > gout 2> gerr
cat gout gerr
{ echo g3; echo g4; } >> gout
cat gout
sh -c 'echo hi >&-' 2>&1
sh -c 'cat <&7' 2>&1

echo "== here-documents"
name=world
cat <<END
hello $name
sum $((2 + 3))
cmd $(echo sub)
END
cat <<'END'
hello $name $((1+1))
END
cat <<-END
	tab stripped $name
		both tabs
	END
cat <<END | wc -l
1
2
3
END
while read -r a b; do echo "[$b|$a]"; done <<END
x 1
y 2 3
END
tr a-z A-Z <<END > upper
shout
END
cat upper

echo "== pipelines"
echo abc | cat | cat | cat
seq 1 100 | grep 5 | sort -rn | head -n 3 | tr '\n' ' '; echo
seq 1 50000 | wc -l
seq 1 50000 | cat | cat | md5sum
seq 1 50000 | md5sum
dd if=/dev/zero bs=4096 count=100 2>/dev/null | cat | wc -c
yes | head -n 1000 | wc -l
yes abc | sed -n '500{p;q}'
true | false; echo "true|false: $?"
false | true; echo "false|true: $?"
! true; echo "!true: $?"
! false; echo "!false: $?"
set -o pipefail
false | true; echo "pipefail false|true: $?"
sh -c 'exit 3' | sh -c 'exit 4' | true; echo "pipefail 3|4|true: $?"
set +o pipefail
echo abc | read -r v; echo "read in pipe: [$v]"
x=$(printf 'a\nb\n' | while read -r l; do printf '%s-' "$l"; done); echo "$x"

echo "== subshells and command substitution"
v=outer
( v=inner; echo "in: $v"; exit 5 ); echo "status $? v=$v"
mkdir sub
( cd sub && pwd | sed 's|.*/||' )
pwd | sed "s|^$T|T|"
{ v=group; }; echo "group v=$v"
echo "$(echo a "$(echo b "$(echo c)")")"
echo `echo back``echo tick`
n=$(printf 'x\n\n\n'); echo "[$n]"
lines=$(seq 1 5)
echo "$lines" | wc -l
c=$(cat < o); echo "$c"
s=$(sh -c 'echo err >&2; echo out' 2>/dev/null); echo "$s"
s=$(sh -c 'echo err >&2' 2>&1); echo "$s"
s=$(exit 9); echo "status $?"
echo "$(( $(seq 1 10 | wc -l) * 2 ))"

echo "== tee"
echo tee-data | tee t1 t2 > t3
cat t1 t2 t3
echo again | tee -a t1 > /dev/null
cat t1

echo "== mkfifo"
# Under $T, which is in Hare when the suite runs with /tmp on Hare (FIFOs there too).
F=$T/fifo
mkfifo -m 600 "$F"
ls -l "$F" | cut -c1-10
{ echo through the fifo; seq 1 3; } > "$F" &
cat < "$F"
wait
echo "status $?"
mkfifo "$F" 2>&1 | sed "s|$F|F|"
rm "$F"
[ -e "$F" ] && echo "$F left behind"

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end pipes"
