# files.sh: regular files: create, write, append, truncate, overwrite in place, holes, sizes,
# rename, remove, modes, times, names, a file removed while open, errors.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-files.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

echo "== create, append, truncate"
echo one > f
echo two >> f
printf 'three\n' >> f
cat f
stat -c '%s %F' f
: > f
stat -c '%s %F' f
printf 'abc' > g
printf 'def' >> g
cat g; echo
wc -c < g

echo "== overwrite in place, holes"
printf 'abcdefgh' > p
printf 'XY' | dd of=p bs=1 seek=3 conv=notrunc 2>/dev/null
cat p; echo
stat -c %s p
dd if=/dev/zero of=z bs=1024 count=64 2>/dev/null
stat -c %s z
tr -d '\000' < z | wc -c
printf 'end' | dd of=h bs=1 seek=100000 2>/dev/null
stat -c %s h
tail -c 3 h; echo
head -c 100000 h | tr -d '\000' | wc -c
truncate -s 10 p
stat -c %s p
od -c p | head -n 1
truncate -s 4 p
cat p; echo
truncate -s 0 p
stat -c '%s %F' p

echo "== a bigger file"
seq 1 20000 > big
wc -l < big
stat -c %s big
md5sum < big
tail -n 1 big
cat big > big2
cmp big big2 && echo "copy equal"
printf 'x' | dd of=big2 bs=1 seek=50000 conv=notrunc 2>/dev/null
cmp big big2
echo "cmp status $?"

echo "== rename and remove"
mkdir rn
cd rn
echo data > a
mv a b
[ -e a ] || echo "a gone"
cat b
echo other > c
mv c b
cat b
ls
rm b
ls
rm b
echo "rm status $?"
rm -f b
echo "rm -f status $?"
cd ..
rmdir rn

echo "== tests"
: > empty
echo x > full
mkdir dir
ln -s full sym
for t in -e -f -d -s -L -h; do
	for n in empty full dir sym none; do
		# The size of a directory is the file system's business.
		[ $t = -s ] && [ $n = dir ] && continue
		if [ $t $n ]; then printf '%s %s yes\n' $t $n; fi
	done
done

echo "== modes"
chmod 640 full
stat -c '%a %A' full
chmod u+x,g-r,o+w full
stat -c '%a %A' full
chmod a-x full
stat -c '%a' full
chmod 4755 full
stat -c '%a' full
chmod 0644 full
umask 077
: > private
stat -c '%a' private
mkdir privdir
stat -c '%a' privdir
umask 022
: > public
stat -c '%a' public

echo "== times"
touch -d '2001-02-03 04:05:06' old
touch -d '2011-12-13 14:15:16' new
stat -c '%Y' old new
[ new -nt old ] && echo "new is newer"
[ old -ot new ] && echo "old is older"
touch -r old copytime
stat -c '%Y' copytime
echo more >> old
[ "$(stat -c %Y old)" != 981173106 ] && echo "write changed mtime"

echo "== names"
echo s > 'with space'
echo d > -dash
echo u > 'ünï'
echo n > "$(printf 'new\nline')"
ls | sort
cat 'with space' ./-dash ünï
rm -- -dash
long=$(printf '%0255d' 0)
echo ok > $long
cat $long
rm $long
touch $(printf '%0256d' 0) 2>&1 | sed 's/^touch: 0*:/touch: 0...0:/'
rm "$(printf 'new\nline')" 'with space' ünï
ls | sort | tr '\n' ' '; echo

echo "== removed while open"
echo kept > gone
exec 3< gone
rm gone
[ -e gone ] || echo "name gone"
cat <&3
exec 3<&-
exec 4> gone2
echo written >&4
rm gone2
echo after >&4
exec 4>&-
[ -e gone2 ] || echo "gone2 gone"

echo "== errors"
cat nope
cat dir
cat full/x
sh -c 'echo x > dir'
sh -c 'echo x > nodir/file'
sh -c 'set -C; echo x > full'
sh -c 'echo x >| full; cat full'
ln -s loop loop
cat loop
echo x > /dev/null
wc -c < /dev/null

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end files"
