# dirs.sh: directories: mkdir/rmdir (-p), listings (ls -a -A -F -R -d, globs), a directory of
# many entries, cd/pwd (also through symlinks), renaming directories, errors.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-dirs.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

echo "== mkdir, rmdir"
mkdir a
mkdir a/b
mkdir -p a/b/c/d/e
mkdir -p a/b/c
echo "mkdir -p existing: $?"
mkdir a
echo "mkdir existing: $?"
mkdir x/y
mkdir -m 700 m
stat -c '%a %F' a m
rmdir a/b/c/d/e
[ -d a/b/c/d ] && [ ! -e a/b/c/d/e ] && echo "e removed"
rmdir a
echo "rmdir non-empty: $?"
rmdir -p a/b/c/d
[ -e a ] || echo "rmdir -p removed a"
rmdir m nothere
rmdir .
: > file
rmdir file
mkdir -p file/sub
mkdir slash/
[ -d slash ] && echo "slash made"
rmdir slash/

echo "== listings"
mkdir -p t/d1/d2 t/.hidden
: > t/f1
: > t/.dot
echo x > t/d1/g
ln -s f1 t/link
printf '#!/bin/sh\n' > t/run
chmod 755 t/run
ls t
ls -a t
ls -A t
ls -F t
ls -1 -d t/*/
ls -R t
echo t/*
echo t/.*
echo t/d*/*
echo t/nomatch*
cd t
echo *[0-9]
cd ..

echo "== many entries"
mkdir many
i=0
while [ $i -lt 300 ]; do : > many/file$i; i=$((i + 1)); done
ls many | wc -l
ls many | sort | uniq -d | wc -l
ls many | sort -u | wc -l
set -- many/*
echo "glob: $#"
i=0
while [ $i -lt 300 ]; do rm many/file$i; i=$((i + 3)); done
ls many | wc -l
ls many | sort | head -n 3
ls many | grep -c 'file[0-9]*[0369]$'
rm -r many
[ -e many ] || echo "many removed"

echo "== cd and pwd"
mkdir -p p/q/r
cd p/q/r
pwd | sed "s|^$T|T|"
cd ../..
pwd | sed "s|^$T|T|"
cd -  > /dev/null
pwd | sed "s|^$T|T|"
cd "$T"
ln -s p/q plink
cd plink/r
pwd | sed "s|^$T|T|"
pwd -P | sed "s|^$T|T|"
cd ..
pwd | sed "s|^$T|T|"
cd -P ..
pwd | sed "s|^$T|T|"
cd "$T"
( cd p/q && pwd | sed "s|^$T|T|" )
pwd | sed "s|^$T|T|"
deep=d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/d20
mkdir -p $deep
cd $deep
pwd -P | sed "s|^$T/||"
cd "$T"
rm -r d1
cd nothere 2>/dev/null || echo "cd nothere failed"
cd file 2>/dev/null || echo "cd file failed"

echo "== rename directories"
mkdir -p r1/sub
echo content > r1/sub/f
mv r1 r2
ls -R r2
mkdir r3
mv r2 r3
ls r3
mv r3/r2 .
rmdir r3
mkdir empty
mv r2 empty
ls empty
mv empty/r2 r2
rmdir empty
mkdir -p full/r2
: > full/r2/x
mv r2 full
mv r2 r2/sub
mv file r2
ls r2
mv r2/file .
mkdir newdir
mv newdir r2
mv file r2/sub/f
cat r2/sub/f
mv r2/sub/f r2/sub/ 2>&1
basename r2/sub/
dirname r2/sub/f
realpath r2/../r2/./sub | sed "s|^$T|T|"
rm -r r2 full t p plink

ls -A
cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end dirs"
