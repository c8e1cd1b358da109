"""Debian's Python 3.11 (python3.11-minimal) on files, subprocesses and threads; prints
PASS debian-python or raises. Run by python.sh, natively with the host's python3 too."""
import os
import subprocess
import sys
import tempfile
import threading

d = tempfile.mkdtemp(dir="/tmp")
path = os.path.join(d, "numbers")
with open(path, "w") as f:
    f.write("".join(f"{i}\n" for i in range(10000)))
with open(path) as f:
    assert sum(int(line) for line in f) == 49995000
os.rename(path, path + ".old")
assert os.listdir(d) == ["numbers.old"], os.listdir(d)
assert os.stat(path + ".old").st_size == 48890
print("python: files ok")

out = subprocess.run(["/bin/sh", "-c", "echo $((6 * 7)); exit 3"], capture_output=True, text=True)
assert (out.stdout, out.returncode) == ("42\n", 3), out
child = subprocess.run([sys.executable, "-c", "import os; print(os.getppid())"],
                       capture_output=True, text=True, check=True)
assert int(child.stdout) == os.getpid(), (child.stdout, os.getpid())
print("python: subprocess ok")

lock = threading.Lock()
sums = []


def work(k):
    s = sum(range(k * 100000, (k + 1) * 100000))
    with lock:
        sums.append(s)


threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert sum(sums) == sum(range(800000)) and len(sums) == 8
print("python: threads ok")

os.remove(path + ".old")
os.rmdir(d)
print("PASS debian-python")
