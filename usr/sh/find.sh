# find.sh: find over a tree of files, directories and symlinks: -type, -name, -iname, -path,
# -regex, -maxdepth, -mindepth, -depth, -empty, -size, -newer, -perm, -links, -samefile,
# operators, -prune, -exec ; and +, -print0, -L, -delete, errors. Listings are sorted, as the
# order of entries in a directory is unspecified.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-find.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

mkdir -p tree/src/lib tree/src/bin tree/doc tree/empty tree/.git/objects
echo 'int main;' > tree/src/main.c
echo 'int lib;' > tree/src/lib/lib.c
echo 'int lib_h;' > tree/src/lib/lib.h
seq 1 1000 > tree/src/lib/big.dat
printf '#!/bin/sh\necho tool\n' > tree/src/bin/tool
chmod 755 tree/src/bin/tool
echo 'Readme' > tree/README
echo 'notes' > tree/doc/Notes.TXT
: > tree/doc/empty.txt
echo obj > tree/.git/objects/abc
: > tree/stamp
ln -s ../README tree/doc/readme.link
ln -s nowhere tree/doc/dangling
ln tree/src/main.c tree/doc/main.hard
# Every file and directory gets a fixed time (the system's clock may be anything), except
# symlinks: touch follows them. So the time queries below look at files only.
find tree ! -type l -exec touch -d '2010-01-01 00:00:00' {} +
touch -d '2000-01-01 00:00:00' tree/README tree/src/main.c
touch -d '2020-01-01 00:00:00' tree/stamp
touch -d '2021-01-01 00:00:00' tree/src/lib/lib.h tree/doc/Notes.TXT tree/doc

echo "== all"
find tree | sort
find tree | wc -l
echo "== types"
find tree -type d | sort
find tree -type l | sort
find tree -type f | wc -l
echo "== names"
find tree -name '*.c' | sort
find tree -iname '*.txt' | sort
find tree -name 'lib*' -type f | sort
find tree -path '*/lib/*' | sort
find tree -regex '.*/[a-z]*\.[ch]' | sort
find tree ! -name '*.*' -type f | sort
find tree \( -name '*.h' -o -name '*.TXT' \) | sort
echo "== depth"
find tree -maxdepth 1 | sort
find tree -mindepth 3 | sort
find tree -mindepth 1 -maxdepth 1 -type d | sort
find tree/src/lib -maxdepth 0
mkdir -p chain/a/b
find chain -depth
find chain
echo "== properties"
find tree -empty | sort
find tree -type f -size +1k
find tree -type f -size -2c | sort
find tree -type f -newer tree/stamp | sort
find tree -type d -newer tree/stamp | sort
find tree -type f ! -newer tree/stamp | sort
find tree -perm -100 -type f
find tree -type f -links 2 | sort
find tree -samefile tree/src/main.c | sort
echo "== prune"
find tree -name .git -prune -o -type f -print | sort
find tree -path tree/src -prune -o -print | sort
echo "== exec"
find tree -name '*.c' -exec cat {} \; | sort
find tree -name '*.c' -exec echo found {} \; | sort
find tree/src -type f -exec sh -c 'echo $#' sh {} +
find tree -name '*.dat' -exec wc -l {} \;
find tree -type f -print0 | xargs -0 cat | wc -l
find tree -name 'lib.*' -print0 | tr '\0' '|' | tr '|' '\n' | sort
echo "== symlinks"
find -L tree/doc -type f | sort
find tree/doc -type l | sort
find -L tree/doc -type l
find tree/doc/readme.link
find tree/doc/readme.link/ 2>&1
echo "== delete"
cp -r tree copy
find copy -type f \( -name '*.[ch]' -o -name '*.dat' \) -exec rm {} +
find copy -name '*.[ch]' | wc -l
find copy -depth -type d -empty -exec rmdir {} \;
find copy -type d | sort
rm -r copy
echo "== errors"
find nothere
echo "status $?"
find tree/README/x
echo "status $?"
find tree -name 'zzz'
echo "status $?"

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end find"
