# tar.sh: tar archives of a tree (empty and bigger files, empty directories, a symlink, a hard
# link, modes, times, names with spaces, a name longer than 100 bytes): create, list, extract,
# compare the trees; gzip; through pipes; single members; -O, -C, --strip-components, -k.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-tar.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

# Prints every entry of tree $1 with its type and what must survive a round trip.
describe() {
	(cd "$1" && find . | sort | while read -r p; do
		if [ -L "$p" ]; then
			echo "$p -> $(readlink "$p")"
		elif [ -d "$p" ]; then
			# Not the time: busybox tar sets it before it fills the directory.
			stat -c '%n dir %a' "$p"
		else
			stat -c '%n %a %s %h %Y' "$p"
		fi
	done)
}

long=a234567890b234567890c234567890d234567890e234567890f234567890
mkdir -p tree/sub/deeper tree/empty "tree/with space" "tree/$long/$long"
echo hello > tree/hello.txt
: > tree/zero
seq 1 5000 > tree/sub/numbers
printf '\001\002\003\377\000binary\n' > tree/sub/bin
printf '#!/bin/sh\necho script\n' > tree/sub/deeper/script
echo spaced > "tree/with space/file name"
echo deep > "tree/$long/$long/leaf"
chmod 755 tree/sub/deeper/script
chmod 600 tree/hello.txt
chmod 700 tree/empty
ln -s ../hello.txt tree/sub/link
ln tree/sub/numbers tree/sub/numbers.hard
# Fixed times (the clock may be anything); touch follows symlinks, so not on those.
find tree ! -type l -exec touch -d '2005-06-07 08:09:10' {} +
touch -d '2015-01-01 00:00:00' tree/hello.txt
describe tree > before

echo "== create and list"
tar -cf t.tar tree
echo "tar -c status $?"
tar -tf t.tar | sort
tar -tf t.tar | wc -l
tar -tf t.tar tree/hello.txt

echo "== extract"
mkdir x
tar -xf t.tar -C x
echo "tar -x status $?"
describe x/tree > after
cmp before after && echo "trees identical"
cat before
diff -r tree x/tree && echo "diff -r: no differences"
[ "$(stat -c %i x/tree/sub/numbers)" = "$(stat -c %i x/tree/sub/numbers.hard)" ] &&
	echo "hard link kept"
x/tree/sub/deeper/script

echo "== gzip"
tar -czf t.tgz tree
tar -tzf t.tgz | sort | md5sum
tar -tf t.tar | sort | md5sum
mkdir y
gzip -dc t.tgz | tar -xf - -C y
describe y/tree | cmp - before && echo "gzip round trip identical"
gzip -t t.tgz && echo "gzip -t ok"

echo "== pipes"
mkdir z
tar -cf - tree | tar -xf - -C z
describe z/tree | cmp - before && echo "pipe round trip identical"
(cd tree && tar -cf - sub) | (cd z && tar -xf - && find sub | sort)
cat t.tar | tar -tf - | wc -l

echo "== members"
tar -xOf t.tar tree/hello.txt
tar -xOf t.tar "tree/with space/file name"
tar -xOf t.tar tree/sub/deeper/script
tar -xOf t.tar tree/sub/bin | od -c | head -n 1
mkdir m
tar -xf t.tar -C m tree/sub/deeper
find m | sort
mkdir s
tar -xf t.tar -C s --strip-components 2 tree/sub
find s | sort
echo changed > m/tree/sub/deeper/script
tar -xkf t.tar -C m tree/sub/deeper/script 2>/dev/null
cat m/tree/sub/deeper/script
tar -xf t.tar -C m tree/sub/deeper/script
cat m/tree/sub/deeper/script
tar -xf t.tar nosuch
echo "missing member status $?"

echo "== add and update"
echo late > tree/late
tar -cf t2.tar tree/late tree/hello.txt
tar -tf t2.tar
mkdir w
tar -xf t2.tar -C w
find w | sort
cat w/tree/late

echo "== errors"
tar -cf bad.tar nothere
echo "status $?"
tar -tf nofile.tar
echo "status $?"
echo "not a tar archive, not at all" > junk.tar
tar -tf junk.tar 2>&1 | head -n 1
tar -tf junk.tar >/dev/null 2>&1
echo "status $?"

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end tar"
