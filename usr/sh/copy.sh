# copy.sh: cp (files, -r trees, -a and -p preserving modes, times and symlinks), mv across
# directories (same inode), rm -r, ln -s and ln (link counts, same inode, dangling links, loops,
# relative targets, -f, -n), readlink (-f), stat -c, errors.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-copy.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

same_inode() {
	if [ "$(stat -c %i "$1")" = "$(stat -c %i "$2")" ]; then
		echo "$1 $2: same inode"
	else
		echo "$1 $2: different inodes"
	fi
}

# Every entry of tree $1: type, mode, size, link target; times where $2 is "times".
describe() {
	(cd "$1" && find . | sort | while read -r p; do
		if [ -L "$p" ]; then
			echo "$p -> $(readlink "$p")"
		elif [ -d "$p" ]; then
			stat -c '%n dir %a' "$p"
		elif [ "$2" = times ]; then
			stat -c '%n %a %s %Y' "$p"
		else
			stat -c '%n %a %s' "$p"
		fi
	done)
}

mkdir -p src/sub/deeper src/empty
echo top > src/top
seq 1 3000 > src/sub/numbers
printf '#!/bin/sh\necho hi\n' > src/sub/deeper/run
chmod 750 src/sub/deeper/run
chmod 600 src/top
ln -s ../top src/sub/up
ln -s nowhere src/dangling
find src ! -type l -exec touch -d '2003-04-05 06:07:08' {} +

echo "== cp files"
cp src/top copy1
cat copy1
stat -c '%a %s' copy1
same_inode src/top copy1
echo changed > copy1
cat src/top
cp src/sub/numbers .
cmp numbers src/sub/numbers && echo "numbers equal"
cp -p src/sub/deeper/run run
stat -c '%a %Y' run
cp src/sub/deeper/run run2
stat -c '%a' run2
[ "$(stat -c %Y run2)" != 1049522828 ] && echo "cp without -p: new mtime"
cp copy1 numbers src/empty
ls src/empty
rm src/empty/*
cp src/top src/top
echo "cp onto itself $?"
cp nothere x
cp src x
echo "cp dir without -r $?"

echo "== cp -r"
cp -r src dst
describe src > ta
describe dst > tb
cmp ta tb && echo "cp -r: same tree"
cat ta
readlink dst/sub/up
cat dst/sub/up
cp -r src dst
ls dst | sort | tr '\n' ' '; echo
ls dst/src | sort | tr '\n' ' '; echo
rm -r dst

echo "== cp -a"
cp -a src arch
describe src times > ta
describe arch times > tb
cmp ta tb && echo "cp -a: same tree with modes and times"
grep -c 1049522828 tb
[ -L arch/dangling ] && echo "dangling link copied as a link"
cp -L src/sub/up deref
[ -L deref ] || echo "cp -L copied the target: $(cat deref)"
rm -r arch

echo "== mv across directories"
mkdir d1 d2
echo moving > d1/file
before=$(stat -c %i d1/file)
mv d1/file d2/
[ -e d1/file ] || echo "gone from d1"
cat d2/file
[ "$(stat -c %i d2/file)" = "$before" ] && echo "same inode after mv"
mkdir -p d1/tree/inner
echo in > d1/tree/inner/f
mv d1/tree d2/tree2
find d1 d2 | sort
mv d2/file d2/tree2/inner/f
cat d2/tree2/inner/f
mv d2/tree2 d1
ls d1 d2
mv d1/tree2/inner/f d1/tree2/inner/f
echo "mv onto itself $?"
mv nothere d1
echo "mv missing $?"

echo "== rm -r"
mkdir -p big/a/b/c
i=0
while [ $i -lt 50 ]; do echo $i > big/a/f$i; : > big/a/b/c/g$i; i=$((i + 1)); done
ln -s /nowhere big/a/b/link
find big | wc -l
rm -r big
[ -e big ] || echo "big removed"
rm big
echo "rm missing $?"
rm -r big 2>/dev/null
echo "rm -r missing $?"
rm -rf big
echo "rm -rf missing $?"
mkdir keep
rm keep
echo "rm dir $?"
rm -r keep
ln -s src linkdir
rm -r linkdir
[ -d src ] && [ ! -e linkdir ] && echo "rm -r of a link leaves its target"

echo "== ln -s"
ln -s src/top rel
readlink rel
cat rel
ln -s "$T/src/top" abs
readlink abs | sed "s|^$T|T|"
stat -c '%F' rel src/top src
stat -L -c '%F %s' rel
ln -s missing dangling
[ -L dangling ] && [ ! -e dangling ] && echo "dangling: link, no target"
cat dangling
echo created > dangling
cat missing
rm missing
ln -s rel rel2
readlink rel2
readlink -f rel2 | sed "s|^$T|T|"
cat rel2
ln -s src dirlink
ls dirlink/sub | sort | tr '\n' ' '; echo
cd dirlink/sub && pwd -P | sed "s|^$T|T|" && cd "$T"
echo through > rel
cat src/top
rm rel
[ -e src/top ] && echo "rm of a link leaves its target"
ln -s l1 l2
ln -s l2 l1
cat l1
ln -s src/top abs
echo "ln -s existing $?"
ln -sf src/sub/numbers abs
readlink abs
ln -s ../elsewhere dirlink
readlink src/elsewhere
ln -sfn src/sub dirlink
readlink dirlink
rm l1 l2 abs dangling rel2 dirlink src/top src/elsewhere

echo "== ln"
echo linked > orig
ln orig hard
stat -c '%h %s' orig hard
same_inode orig hard
echo appended >> hard
cat orig
ln orig hard
echo "ln existing $?"
ln orig hard2
stat -c '%h' orig
rm orig
stat -c '%h' hard
cat hard2
rm hard hard2
ln src nodir
echo "ln dir $?"
ln nothere x
echo "ln missing $?"
link src/sub/numbers n2 && unlink n2 && echo "link and unlink"

echo "== stat -c"
echo twelve bytes > s
chmod 640 s
stat -c '%n|%s|%a|%A|%F|%h' s
stat -c '%n|%a|%F' src/empty
ln -s s sl
stat -c '%n|%F|%N' sl
: > e
stat -c '%s %F' e
stat nothere
echo "stat missing $?"

rm -r src ta tb copy1 numbers run run2 d1 d2 deref s sl e
ls -A
cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end copy"
