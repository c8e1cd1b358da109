"""Debian's Python 3.11 on files, subprocesses, threads and multiprocessing (a pool of
processes, a queue, a shared value under a lock: POSIX semaphores in /dev/shm); prints PASS
debian-python or raises. Run by python.sh, natively with the host's python3 too."""
import multiprocessing
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



def square(x):
    return x * x


def add(total, lock, n):
    for _ in range(n):
        with lock:
            total.value += 1


def produce(q, k):
    q.put((k, os.getpid()))


if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        assert pool.map(square, range(20)) == [x * x for x in range(20)]
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=produce, args=(q, k)) for k in range(3)]
    for p in procs:
        p.start()
    got = sorted(q.get(timeout=60) for _ in procs)
    for p in procs:
        p.join()
        assert p.exitcode == 0, p.exitcode
    assert [k for k, _ in got] == [0, 1, 2] and all(pid != os.getpid() for _, pid in got), got
    total = multiprocessing.Value("i", 0)
    lock = multiprocessing.Lock()
    adders = [multiprocessing.Process(target=add, args=(total, lock, 500)) for _ in range(2)]
    for p in adders:
        p.start()
    for p in adders:
        p.join()
    assert total.value == 1000, total.value
    print("python: multiprocessing ok")

    os.remove(path + ".old")
    os.rmdir(d)
    print("PASS debian-python")
