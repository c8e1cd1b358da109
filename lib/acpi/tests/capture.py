#!/usr/bin/env python3
"""Capture the ACPI tables QEMU builds, for the `acpi` crate's tests.

For each configuration in CONFIGS this boots QEMU with the qboot firmware and
no kernel or disk, the same way Reef's build tool runs QEMU (TCG, `-machine pc`,
`-cpu max`). qboot builds the ACPI tables from QEMU's fw_cfg data, finds
nothing to boot and halts. The script then reads guest memory through the HMP
monitor (`pmemsave`), finds the RSDP the way `acpi::find_rsdp` does, walks the
RSDT/XSDT and the FADT's DSDT/FACS pointers, and writes into
`tests/data/<config>/`:

  rsdp@<addr>.bin    the RSDP (20 bytes for revision 0, else its length)
  <SIG>@<addr>.bin   every table, exactly `length` bytes (the FACS included)
  bios@e0000.bin     0xE0000..0x100000, the area the RSDP search scans
  bda@40e.bin        the BIOS data area word holding the EBDA segment
  ebda@<addr>.bin    the first KiB of the EBDA, if that word is not zero
  qemu-args.txt      the QEMU version and command line used

Memory dumps go to a temporary directory and are deleted; only the extracted
bytes are kept. Usage (from anywhere; needs qemu-system-x86_64 and qboot.rom):

  python3 lib/acpi/tests/capture.py [config ...]

With no argument every configuration is captured again.
"""

import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time

QEMU = "qemu-system-x86_64"
QBOOT = "/usr/share/qemu/qboot.rom"
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# name: (cores, MiB of memory, nodes, distance(i, j) for i != j or None)
CONFIGS = {
    "c1-n1": (1, 128, 1, None),
    "c2-n2": (2, 256, 2, None),
    "c4-n2": (4, 256, 2, None),
    # Neighbouring nodes 20 apart, the others 30.
    "c8-n4": (8, 512, 4, lambda i, j: 20 if abs(i - j) == 1 else 30),
    # 8 GiB over two nodes: node 0 straddles the PCI hole below 4 GiB.
    "c2-n2-big": (2, 8192, 2, None),
}


def qemu_args(cores, mib, nodes, dist):
    """The command line, in the form Reef's build tool uses."""
    args = [
        QEMU, "-machine", "pc", "-accel", "tcg", "-cpu", "max",
        "-bios", QBOOT, "-display", "none", "-serial", "none",
        "-monitor", "stdio", "-m", str(mib), "-smp", str(cores),
    ]
    if nodes > 1:
        for i in range(nodes):
            first, last = i * cores // nodes, (i + 1) * cores // nodes - 1
            cpus = str(first) if first == last else "%d-%d" % (first, last)
            args += [
                "-object", "memory-backend-ram,id=m%d,size=%dM" % (i, mib // nodes),
                "-numa", "node,nodeid=%d,cpus=%s,memdev=m%d" % (i, cpus, i),
            ]
        for i in range(nodes):
            for j in range(i + 1, nodes):
                val = dist(i, j) if dist else 20
                args += ["-numa", "dist,src=%d,dst=%d,val=%d" % (i, j, val)]
    return args


class Monitor:
    """A QEMU process driven through its HMP monitor on stdio."""

    def __init__(self, args, workdir):
        self.workdir = workdir
        self.proc = subprocess.Popen(
            args, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        self.out = b""
        self._prompt()

    def _prompt(self, timeout=30):
        """Read output up to the next "(qemu)" prompt; return what came before."""
        deadline = time.monotonic() + timeout
        while b"(qemu)" not in self.out:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise RuntimeError("QEMU monitor did not answer: %r" % self.out[-500:])
            if select.select([self.proc.stdout], [], [], left)[0]:
                self.out += os.read(self.proc.stdout.fileno(), 65536)
        before, _, self.out = self.out.partition(b"(qemu)")
        return before

    def command(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self._prompt()

    def read(self, addr, length):
        """Guest physical memory, via pmemsave into a scratch file."""
        path = os.path.join(self.workdir, "dump.bin")
        if os.path.exists(path):
            os.remove(path)
        # The file name must be quoted, or the monitor parses "/" as a division.
        self.command('pmemsave 0x%x 0x%x "dump.bin"' % (addr, length))
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != length:
            raise RuntimeError("pmemsave 0x%x+0x%x gave %d bytes" % (addr, length, len(data)))
        return data

    def close(self):
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def checksum_ok(data):
    return sum(data) & 0xFF == 0


def find_rsdp(area, base):
    """Physical address of the first valid RSDP in `area` (at `base`), on 16-byte boundaries."""
    for off in range(0, len(area) - 19, 16):
        if area[off:off + 8] != b"RSD PTR " or not checksum_ok(area[off:off + 20]):
            continue
        if area[off + 15] >= 2:
            length = struct.unpack_from("<I", area, off + 20)[0]
            if length < 36 or not checksum_ok(area[off:off + length]):
                continue
        return base + off
    return None


def read_table(mon, addr):
    length = struct.unpack_from("<I", mon.read(addr, 8), 4)[0]
    return mon.read(addr, length)


def capture(name):
    cores, mib, nodes, dist = CONFIGS[name]
    args = qemu_args(cores, mib, nodes, dist)
    out = os.path.join(DATA, name)
    work = tempfile.mkdtemp(prefix="acpi-capture-")
    mon = Monitor(args, work)
    try:
        # Wait until the firmware has published a valid RSDP.
        deadline = time.monotonic() + 60
        while True:
            bda = mon.read(0x40E, 2)
            bios = mon.read(0xE0000, 0x20000)
            ebda_seg = struct.unpack("<H", bda)[0]
            ebda = mon.read(ebda_seg << 4, 1024) if ebda_seg else None
            rsdp = (find_rsdp(ebda, ebda_seg << 4) if ebda else None) or find_rsdp(bios, 0xE0000)
            if rsdp is not None:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("%s: no RSDP after 60 s" % name)
            time.sleep(0.5)

        blobs = {"bios@e0000.bin": bios, "bda@40e.bin": bda}
        if ebda:
            blobs["ebda@%x.bin" % (ebda_seg << 4)] = ebda
        head = mon.read(rsdp, 20)
        revision = head[15]
        rsdp_len = struct.unpack_from("<I", mon.read(rsdp, 24), 20)[0] if revision >= 2 else 20
        rsdp_bytes = mon.read(rsdp, rsdp_len)
        blobs["rsdp@%x.bin" % rsdp] = rsdp_bytes

        tables = []  # (signature, address, bytes)

        def add(addr):
            if addr == 0 or any(a == addr for _, a, _ in tables):
                return None
            data = read_table(mon, addr)
            sig = data[:4].decode("ascii")
            tables.append((sig, addr, data))
            return data

        xsdt = struct.unpack_from("<Q", rsdp_bytes, 24)[0] if revision >= 2 else 0
        root = add(xsdt if xsdt else struct.unpack_from("<I", rsdp_bytes, 16)[0])
        width = 8 if xsdt else 4
        for off in range(36, len(root) - width + 1, width):
            entry = int.from_bytes(root[off:off + width], "little")
            table = add(entry)
            if table is not None and table[:4] == b"FACP":
                facs, dsdt = struct.unpack_from("<II", table, 36)
                if len(table) >= 148:
                    facs = struct.unpack_from("<Q", table, 132)[0] or facs
                    dsdt = struct.unpack_from("<Q", table, 140)[0] or dsdt
                add(dsdt)
                add(facs)
        for sig, addr, data in tables:
            if sig != "FACS" and not checksum_ok(data):
                raise RuntimeError("%s: %s at 0x%x has a bad checksum" % (name, sig, addr))
            blobs["%s@%x.bin" % (sig, addr)] = data
        version = subprocess.run([QEMU, "--version"], capture_output=True, text=True).stdout
    finally:
        mon.close()
        shutil.rmtree(work)

    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for file, data in blobs.items():
        with open(os.path.join(out, file), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "qemu-args.txt"), "w") as f:
        f.write("Captured by lib/acpi/tests/capture.py: qboot built the tables, no kernel was\n")
        f.write("booted, and the bytes were read back with the HMP command pmemsave.\n")
        f.write(version.splitlines()[0] + "\n")
        f.write(" ".join(args) + "\n")
    print("%s: RSDP at 0x%x, %s" % (name, rsdp, ", ".join(
        "%s@0x%x(%d)" % (s, a, len(d)) for s, a, d in tables)))


def main():
    names = sys.argv[1:] or list(CONFIGS)
    for name in names:
        if name not in CONFIGS:
            sys.exit("unknown configuration %r; known: %s" % (name, ", ".join(CONFIGS)))
    for name in names:
        capture(name)


if __name__ == "__main__":
    main()
