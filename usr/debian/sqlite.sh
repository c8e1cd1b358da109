# sqlite.sh: Debian's sqlite3 makes a database in /tmp, inserts 100 000 rows in ten
# transactions (one sqlite3 process each), indexes it, queries it back, and checks that a
# rolled-back change left nothing and a committed one stayed. Runs on Reef as
# `init=/bin/sh /test/debian/sqlite.sh` (the Debian image) and natively on Linux; prints
# PASS debian-sqlite or a FAIL line.
db=/tmp/sqlite.$$.db
sql=/usr/bin/sqlite3
test=sqlite
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/check.sh"
[ -x $sql ] || fail "no $sql"
rm -f $db
$sql $db "CREATE TABLE t(x INTEGER PRIMARY KEY, y INTEGER, s TEXT);" || fail "create"
i=0
while [ $i -lt 10 ]; do
	$sql $db "BEGIN; WITH RECURSIVE c(x) AS (VALUES($i * 10000 + 1) UNION ALL
		SELECT x + 1 FROM c WHERE x < ($i + 1) * 10000)
		INSERT INTO t SELECT x, x % 97, 'row' || x FROM c; COMMIT;" || fail "insert $i"
	i=$((i + 1))
done
$sql $db "CREATE INDEX ty ON t(y);" || fail "index"
same "count and sums" "100000|5000050000|4799775|row99999" \
	"$($sql $db 'SELECT count(*), sum(x), sum(y), max(s) FROM t;')"
same "grouped through the index" "0|1030
1|1031
2|1031" "$($sql $db 'SELECT y, count(*) FROM t WHERE y < 3 GROUP BY y;')"
$sql $db "BEGIN; DELETE FROM t WHERE y = 5; ROLLBACK;" || fail "rollback"
$sql $db "BEGIN; UPDATE t SET s = 'changed' WHERE x <= 10; COMMIT;" || fail "update"
same "rollback and commit" "100000|10" \
	"$($sql $db "SELECT count(*), sum(s = 'changed') FROM t;")"
same "integrity" "ok" "$($sql $db 'PRAGMA integrity_check;')"
rm -f $db
echo "PASS debian-sqlite"
