# text.sh: text tools on files: sort (-n -r -u -k -t -c), uniq (-c -d -u), grep (-r -c -v -E -i
# -n -l -w -o -x -F -q), sed (substitutions, addresses, ranges, -n p, d, a/i/c, y, -i in place),
# cut, tr, wc, head, tail, paste, awk.
umask 022
export TZ=UTC LC_ALL=C
T=/tmp/sh-text.$$
rm -rf "$T"; mkdir "$T" && cd "$T" || exit 1

cat > fruit <<'END'
banana 3 yellow
apple 10 red
cherry 7 red
apple 2 green
date 10 brown
Elder 1 black
banana 3 yellow
END
printf '10\n9\n100\n-5\n0\n9\n3.5\n' > nums

echo "== sort"
sort fruit
sort -r fruit | head -n 3
sort -u fruit | wc -l
sort -n nums | tr '\n' ' '; echo
sort -rn nums | tr '\n' ' '; echo
sort nums | tr '\n' ' '; echo
sort -un nums | tr '\n' ' '; echo
sort -k2,2n -k1,1 fruit
sort -k3 -k1,1r fruit | head -n 3
printf 'b:2\na:10\nc:1\n' | sort -t: -k2n
sort -f fruit | head -n 3
sort -c fruit 2>/dev/null
echo "sort -c status $?"
sort fruit | sort -c && echo "sorted"
sort -o fruit.sorted fruit && head -n 1 fruit.sorted
seq 1 3000 | sort -r | head -n 2
seq 1 3000 | sort -rn | head -n 2

echo "== uniq"
sort fruit | uniq
sort fruit | uniq -c
sort fruit | uniq -d
cut -d' ' -f1 fruit | sort | uniq -u
cut -d' ' -f3 fruit | sort | uniq -c | sort -k1,1nr -k2

echo "== grep"
grep red fruit
grep -c red fruit
grep -v red fruit | wc -l
grep -n apple fruit
grep -i elder fruit
grep -E 'ap+le|cherry' fruit
grep -E '^[a-c][a-z]+ [0-9]{2} ' fruit
grep -w 10 fruit
grep -o '[0-9][0-9]*' fruit | tr '\n' ' '; echo
grep -x 'date 10 brown' fruit
grep -F '3.5' nums
grep '3.5' fruit nums
grep -q banana fruit && echo "quiet match"
grep -q kiwi fruit
echo "no match status $?"
grep kiwi nofile
echo "missing file status $?"
grep -s kiwi nofile
echo "grep -s status $?"
mkdir -p src/a src/b
echo 'TODO: one' > src/a/x.c
echo 'done' > src/a/y.c
printf 'TODO: two\nTODO: three\n' > src/b/z.h
grep -r TODO src | sort
grep -rl TODO src | sort
grep -rc TODO src | sort
grep -L TODO src/a/x.c src/a/y.c
grep -h TODO src/a/x.c src/b/z.h
grep -e one -e two -r src | sort
seq 1 2000 | grep -c 7
seq 1 100 | grep -A1 -B1 '^50$'

echo "== sed"
sed 's/a/A/' fruit | head -n 2
sed 's/a/A/g' fruit | head -n 2
sed 's/a/A/2' fruit | head -n 1
sed -n '2,4p' fruit
sed -n '$p' fruit
sed '3q' fruit
sed '/red/d' fruit
sed -n '/cherry/,/date/p' fruit
sed -n '/apple/{s/apple/APPLE/;p}' fruit
sed 's/\([a-z]*\) \([0-9]*\).*/\2 \1/' fruit | head -n 3
sed -E 's/([a-z]+) ([0-9]+)/<\2:\1>/' fruit | head -n 2
sed 's/[0-9][0-9]*/[&]/' fruit | head -n 2
sed 's|/|:|g' <<'END'
/usr/local/bin
END
sed -e 's/red/RED/' -e 's/yellow/YELLOW/' fruit | sort -u | head -n 3
sed '2i\
inserted' fruit | head -n 3
sed '1a\
appended' fruit | head -n 3
sed '1c\
changed' fruit | head -n 2
sed 'y/abc/xyz/' fruit | head -n 2
sed -n 'n;p' fruit
sed '/apple/!d' fruit
sed = fruit | head -n 4
cp fruit inplace
sed -i 's/banana/BANANA/g; /Elder/d' inplace
cat inplace
sed -i -e '1d' inplace
wc -l < inplace
ls | grep -c inplace
seq 1 5000 > long
sed -i 's/0$/zero/' long
grep -c zero long
tail -n 1 long

echo "== cut, tr, paste"
cut -d' ' -f1,3 fruit | head -n 2
cut -c1-3 fruit | head -n 2
cut -d' ' -f2- fruit | head -n 1
echo 'a:b:c:d' | cut -d: -f2,4
echo 'Hello World' | tr a-z A-Z
echo 'Hello World' | tr -d lo
echo 'aaabbbccc' | tr -s ab
echo 'one two  three' | tr ' ' '\n' | grep -c .
printf 'a\nb\nc\n' > p1
printf '1\n2\n3\n' > p2
paste p1 p2
paste -d, p1 p2
paste -s p1

echo "== wc, head, tail"
wc -l fruit
wc -w < fruit
wc -c < fruit
wc fruit nums
head -n 2 fruit
head -c 10 fruit; echo
tail -n 2 fruit
tail -n +6 fruit
tail -c 6 fruit
seq 1 10000 | tail -n 3
seq 1 10000 | head -n 3

echo "== awk"
awk '{ s += $2 } END { print "total", s }' fruit
awk '$3 == "red" { print $1 }' fruit
awk -F: '{ print $2 }' <<'END'
x:y:z
END
awk '{ n[$1]++ } END { for (k in n) print k, n[k] }' fruit | sort
awk 'NR % 2 == 0' fruit

cd / && rm -rf "$T"
[ -e "$T" ] && echo "$T left behind"
echo "== end text"
