# python.sh: Debian's Python 3.11 runs python.py (files, subprocess, threads, multiprocessing): on Reef as
# `init=/bin/sh /test/debian/python.sh` (the Debian image), natively with the host's python3.
dir=${0%/*}
/usr/bin/python3 -c 'print(1 + 1)' || { echo "FAIL debian-python: python3 -c"; exit 1; }
exec /usr/bin/python3 "$dir/python.py"
