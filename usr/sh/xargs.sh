# xargs.sh: xargs batching (-n, -s), -I, -0 with find -print0 (names with spaces and newlines),
# -r, -t, -E, exit statuses (123, 127), -P (parallel runs, results sorted), many arguments.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-xargs.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

echo "== batching"
seq 1 10 | xargs echo
seq 1 10 | xargs -n 3 echo
seq 1 10 | xargs -n 4 sh -c 'echo "$#: $*"' sh
echo 'a  b
c "d e" '"'f g'"' h\ i' | xargs -n 1 echo
printf 'one two\nthree\n' | xargs printf '<%s>'; echo
seq 1 3000 | xargs echo | wc -w
seq 1 3000 | xargs -s 100 echo | wc -w
seq 1 3000 | xargs -s 100 echo | awk 'length($0) > 99' | wc -l
echo 'x y stop z' | xargs -E stop echo

echo "== -I"
seq 1 3 | xargs -I {} echo 'item {} of {}'
printf 'alpha\nbeta gamma\n' | xargs -I X sh -c 'echo "[X]" > "out.X"'
ls out.* | sort
cat 'out.beta gamma'
rm out.*

echo "== -0 and find"
mkdir files
: > 'files/with space'
: > "files/$(printf 'new\nline')"
: > files/plain
: > files/-dash
find files -type f | wc -l
find files -type f -print0 | tr -cd '\000' | wc -c
find files -type f -print0 | xargs -0 -n 1 echo | wc -l
find files -type f -print0 | xargs -0 -n 1 sh -c '[ -f "$0" ] && echo found' | wc -l
find files -type f -print0 | xargs -0 rm --
ls -A files | wc -l
printf 'a\0b c\0' | xargs -0 -n 1 echo

echo "== empty input and -r"
: | xargs echo "ran with:"
: | xargs -r echo "not run"
echo "status $?"
printf '\n\n' | xargs -r echo "not run either"

echo "== -t"
echo 1 2 | xargs -t echo 2>&1

echo "== statuses"
seq 1 3 | xargs sh -c 'exit 0' sh
echo "ok $?"
seq 1 3 | xargs -n 1 sh -c '[ "$0" != 2 ]'
echo "one failed $?"
seq 1 3 | xargs -n 1 sh -c 'exit 255'
echo "255 $?"
echo x | xargs nosuchcommand 2>/dev/null
echo "missing command $?"

echo "== parallel"
seq 1 24 | xargs -P 4 -n 1 sh -c 'seq 1 $0 > "par.$0"'
ls par.* | wc -l
cat par.* | wc -l
seq 1 24 | xargs -P 4 -n 3 sh -c 'echo "$*"' sh | sort -n | tr '\n' ' '; echo
seq 1 40 | xargs -P 8 -I N sh -c 'echo N' | sort -n | md5sum
seq 1 40 | md5sum
rm par.*

echo "== many files"
mkdir many
seq 1 400 | sed 's|^|many/f|' | xargs touch
ls many | wc -l
find many -type f | xargs rm
ls -A many | wc -l
rmdir many

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end xargs"
