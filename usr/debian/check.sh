# check.sh: what the scripts here share, sourced after they set `test` to their name without
# `debian-`: fail MESSAGE prints `FAIL debian-$test: MESSAGE` and exits 1; same WHAT EXPECTED
# ACTUAL fails unless the two are equal, else prints `$test: WHAT ok`.
fail() {
	echo "FAIL debian-$test: $*"
	exit 1
}
same() {
	[ "$2" = "$3" ] || fail "$1: expected [$2], got [$3]"
	echo "$test: $1 ok"
}
