# make.sh: Debian's GNU make and gawk build a small project of shell rules with `make -j4`:
# sixteen parts, each made from its source by gawk (a word count and a checksum of the
# words), two levels of summaries over them, and a final report. Checks the report against
# the sums computed here, that a second run has nothing to do, and that touching one source
# remakes exactly that part and the summaries above it. Runs on Reef as
# `init=/bin/sh /test/debian/make.sh` (the Debian image) and natively on Linux with busybox's
# sh; prints PASS debian-make or a FAIL line. `make.sh bench DIR` only makes the project in
# DIR from scratch (the benchmark's run).
bin=/usr/bin
d=${2:-/tmp/make.$$}
test=make
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/check.sh"
for p in make gawk; do
	[ -x $bin/$p ] || fail "no $bin/$p"
done
rm -rf $d
mkdir -p $d/src || fail "mkdir"
i=0
while [ $i -lt 16 ]; do
	j=0
	: > $d/src/p$i.txt
	while [ $j -lt 40 ]; do
		echo "w$i x$j $((i * j)) $((i + j))" >> $d/src/p$i.txt
		j=$((j + 1))
	done
	i=$((i + 1))
done
cat > $d/Makefile <<'MAKE'
PARTS := $(patsubst src/%.txt,out/%.sum,$(wildcard src/*.txt))
GROUPS := out/g0.sum out/g1.sum
all: out/report
out:
	mkdir -p out
out/%.sum: src/%.txt | out
	gawk '{ w += NF; for (i = 1; i <= NF; i++) if ($$i ~ /^[0-9]+$$/) s += $$i } END { print FILENAME, w, s }' $< > $@.tmp
	mv $@.tmp $@
out/g0.sum: $(filter out/p1%.sum,$(PARTS))
	cat $^ | gawk '{ w += $$2; s += $$3 } END { print "g0", w, s, NR }' > $@
out/g1.sum: $(filter-out out/p1%.sum,$(PARTS))
	cat $^ | gawk '{ w += $$2; s += $$3 } END { print "g1", w, s, NR }' > $@
out/report: $(GROUPS)
	cat $^ | gawk '{ w += $$2; s += $$3; n += $$4 } END { print "parts", n, "words", w, "sum", s }' > $@
MAKE
[ "$1" = bench ] && { cd $d && $bin/make -s -j4 || fail "make"; exit 0; }
cd $d || fail "cd"
$bin/make -j4 > $d/log1 2>&1 || { cat $d/log1; fail "make -j4"; }

# The expected sums, computed here: each line has four words, two of them numbers i*j, i+j.
s=0
i=0
while [ $i -lt 16 ]; do
	j=0
	while [ $j -lt 40 ]; do
		s=$((s + i * j + i + j))
		j=$((j + 1))
	done
	i=$((i + 1))
done
same "report" "parts 16 words 2560 sum $s" "$(cat out/report)"
same "parts made" 16 "$(ls out/p*.sum | wc -l | tr -d ' ')"
same "second run" "make: Nothing to be done for 'all'." "$($bin/make -j4 2>&1)"

# Touch one source: its part, its group and the report are remade, nothing else.
sleep 1
echo "w3 extra 1000 1" >> src/p3.txt
got=$($bin/make -j4 2>&1 | gawk '/^gawk|^cat/ { print $NF }' | sort | tr '\n' ' ')
same "remade after a change" "out/g1.sum out/p3.sum.tmp out/report " "$got"
same "report after a change" "parts 16 words 2564 sum $((s + 1001))" "$(cat out/report)"
cd / && rm -rf $d
echo "PASS debian-make"
