# coreutils.sh: Debian's GNU coreutils, dynamically linked against Debian's glibc, on files
# this script makes: `ls -l` (modes, sizes, names, a symlink's target), `sort` (text, numbers,
# reversed, by field), `cp -a` (contents, modes, times, symlinks, a subdirectory) and `du`
# (apparent sizes). Runs on Reef as `init=/bin/sh /test/debian/coreutils.sh` (the Debian
# image) and natively on Linux with busybox's sh; prints PASS debian-coreutils or a FAIL line.
bin=/usr/bin
d=/tmp/coreutils.$$
test=coreutils
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/check.sh"
for p in ls sort cp du; do
	[ -x $bin/$p ] || fail "no $bin/$p"
done
rm -rf $d
mkdir -p $d/src/sub || fail "mkdir"
printf 'pear 3\napple 10\nfig 2\n' > $d/src/fruit
printf '%s\n' 3 10 2 > $d/src/sub/nums
ln -s fruit $d/src/link
chmod 640 $d/src/fruit
touch -d '2001-02-03 04:05:06' $d/src/fruit

# ls -l: mode, size (not for the directory, whose size depends on the file system), name.
got=$($bin/ls -l $d/src | sed 1d | awk '{ s = ($1 ~ /^d/) ? "-" : $5; print $1, s, $9, $10, $11 }')
same "ls -l" "-rw-r----- 22 fruit  
lrwxrwxrwx 5 link -> fruit
drwxr-xr-x - sub  " "$got"
same "ls -1S" "fruit
nums
link" "$($bin/ls -1S $d/src/link $d/src/sub/nums $d/src/fruit | sed 's|.*/||')"

same "sort" "apple 10
fig 2
pear 3" "$($bin/sort $d/src/fruit)"
same "sort -n" "2 3 10" "$($bin/sort -n $d/src/sub/nums | tr '\n' ' ' | sed 's/ $//')"
same "sort -rn -k2" "apple 10
pear 3
fig 2" "$($bin/sort -rn -k2 $d/src/fruit)"

$bin/cp -a $d/src $d/dst || fail "cp -a exited $?"
cmp $d/src/fruit $d/dst/fruit || fail "cp -a: contents differ"
cmp $d/src/sub/nums $d/dst/sub/nums || fail "cp -a: contents of sub/nums differ"
same "cp -a: symlink" "fruit" "$(readlink $d/dst/link)"
same "cp -a: modes and times" "$($bin/ls -l --time-style=+%s $d/src/fruit | awk '{ print $1, $6 }')" \
	"$($bin/ls -l --time-style=+%s $d/dst/fruit | awk '{ print $1, $6 }')"

same "du -b" "22	$d/src/fruit
7	$d/src/sub/nums" "$($bin/du -b $d/src/fruit $d/src/sub/nums)"

rm -rf $d
echo "PASS debian-coreutils"
