# run.sh [NAME...]: the shell suite. Runs each script NAME.sh of this directory (all of them but
# this one without arguments) with `sh`, from this directory, stdin from /dev/null, and compares
# its stdout and stderr with NAME.expected. Prints `ok NAME`, or `FAIL NAME` and a diff -u of
# expected against actual output; at the end `PASS shell-suite` (exit 0) or
# `FAIL shell-suite: N scripts failed` (exit 1). Needs only busybox: it is Reef's
# /test/sh/run.sh, booted as `init=/bin/sh /test/sh/run.sh`, and runs natively on Linux too.
case $0 in
*/*) dir=${0%/*} ;;
*) dir=. ;;
esac
cd "$dir" || { echo "FAIL shell-suite: cannot cd to $dir"; exit 1; }
out=/tmp/shell-suite.$$
rm -rf "$out"
mkdir "$out" || { echo "FAIL shell-suite: cannot create $out"; exit 1; }

if [ $# -eq 0 ]; then
	for f in *.sh; do
		[ "$f" = run.sh ] || set -- "$@" "${f%.sh}"
	done
fi

total=0
failed=0
for name in "$@"; do
	total=$((total + 1))
	if [ ! -f "$name.sh" ] || [ ! -f "$name.expected" ]; then
		echo "FAIL $name: no $name.sh or $name.expected in $PWD"
		failed=$((failed + 1))
		continue
	fi
	sh "$name.sh" > "$out/$name.out" 2>&1 < /dev/null
	status=$?
	if [ $status -ne 0 ]; then
		echo "FAIL $name: exit status $status"
		diff -u "$name.expected" "$out/$name.out"
		failed=$((failed + 1))
	elif cmp -s "$name.expected" "$out/$name.out"; then
		echo "ok $name"
	else
		echo "FAIL $name: output differs (--- expected, +++ actual)"
		diff -u "$name.expected" "$out/$name.out"
		failed=$((failed + 1))
	fi
done
rm -rf "$out"

if [ $total -eq 0 ]; then
	echo "FAIL shell-suite: no scripts"
	exit 1
fi
if [ $failed -ne 0 ]; then
	echo "FAIL shell-suite: $failed scripts failed"
	exit 1
fi
echo "PASS shell-suite"
