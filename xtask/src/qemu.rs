//! The QEMU machine Reef boots on, from `--cores/--nodes/--memory`.

use std::path::Path;
use std::process::Command;

/// A virtual machine configuration.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Number of cores.
    pub cores: u32,
    /// Number of NUMA nodes (cores and memory are spread evenly).
    pub nodes: u32,
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Accelerator.
    pub accel: Accel,
    /// TCP ports of the host's 127.0.0.1 forwarded to the guest.
    pub forwards: Vec<Forward>,
    /// virtio-net devices: the shared NIC and `nics - 1` more for library mode, all on one
    /// QEMU user network (a hub).
    pub nics: u32,
    /// Where QEMU writes every frame of the NIC (pcap), for debugging (`run --pcap`).
    pub pcap: Option<std::path::PathBuf>,
}

/// A TCP port of the host's 127.0.0.1 forwarded to the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    /// The host's port.
    pub host: u16,
    /// The guest's address (`None`: 10.0.2.15, the shared NIC's).
    pub addr: Option<std::net::Ipv4Addr>,
    /// The guest's port.
    pub guest: u16,
}

/// How QEMU runs the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Software emulation (multi-threaded TCG): the default.
    Tcg,
    /// Hardware virtualization.
    Kvm,
}

impl Accel {
    /// KVM only where it is real hardware virtualization (see DESIGN.md): `/dev/kvm` exists and
    /// the CPU flags show vmx or svm. Otherwise TCG.
    pub fn detect() -> Accel {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let hw = cpuinfo
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
        if Path::new("/dev/kvm").exists() && hw {
            Accel::Kvm
        } else {
            Accel::Tcg
        }
    }
}

impl Machine {
    /// Checks that the configuration can be built.
    pub fn validate(&self) -> Result<(), String> {
        if self.cores == 0 || self.cores > 255 {
            return Err(format!("--cores must be 1..=255, not {}", self.cores));
        }
        if self.nodes == 0 || self.nodes > 16 {
            return Err(format!("--nodes must be 1..=16, not {}", self.nodes));
        }
        if self.nodes > self.cores {
            return Err(format!(
                "--nodes {} exceeds --cores {}: every node needs a core",
                self.nodes, self.cores
            ));
        }
        if !self.memory_mib.is_multiple_of(self.nodes) {
            return Err(format!(
                "--memory {} MiB does not split evenly over {} nodes",
                self.memory_mib, self.nodes
            ));
        }
        if self.nics == 0 || self.nics > 8 {
            return Err(format!("--nics must be 1..=8, not {}", self.nics));
        }
        if self.memory_mib / self.nodes < 64 {
            return Err(format!(
                "each node needs at least 64 MiB (got {} MiB)",
                self.memory_mib / self.nodes
            ));
        }
        Ok(())
    }

    /// Cores of `node`: a contiguous block, `[node*N/M, (node+1)*N/M)`.
    pub fn node_cores(&self, node: u32) -> std::ops::Range<u32> {
        node * self.cores / self.nodes..(node + 1) * self.cores / self.nodes
    }

    /// The QEMU command line, without the kernel and serial options.
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec!["-machine".into(), "pc".into()];
        match self.accel {
            Accel::Tcg => a.extend([
                "-accel".into(),
                "tcg,thread=multi".into(),
                "-cpu".into(),
                "max".into(),
            ]),
            Accel::Kvm => a.extend([
                "-accel".into(),
                "kvm".into(),
                "-cpu".into(),
                "host,-arch-capabilities".into(),
            ]),
        }
        a.extend(["-bios".into(), "/usr/share/qemu/qboot.rom".into()]);
        a.extend([
            "-m".into(),
            format!("{}M", self.memory_mib),
            "-smp".into(),
            self.cores.to_string(),
        ]);
        if self.nodes > 1 {
            let per_node = self.memory_mib / self.nodes;
            for n in 0..self.nodes {
                let cpus = self.node_cores(n);
                a.push("-object".into());
                a.push(format!("memory-backend-ram,id=m{n},size={per_node}M"));
                a.push("-numa".into());
                a.push(format!(
                    "node,nodeid={n},cpus={}-{},memdev=m{n}",
                    cpus.start,
                    cpus.end - 1
                ));
            }
            for i in 0..self.nodes {
                for j in i + 1..self.nodes {
                    a.push("-numa".into());
                    a.push(format!("dist,src={i},dst={j},val=20"));
                }
            }
        }
        // The NIC: virtio-net on QEMU user networking (the guest is 10.0.2.15, the host side
        // 10.0.2.2); it takes the place of the machine's default NIC. More NICs (library mode)
        // share the user network through a hub, so that an address can move between them.
        let mut netdev = String::from("user,id=n0");
        for f in &self.forwards {
            let addr = f.addr.map_or(String::new(), |a| a.to_string());
            netdev.push_str(&format!(
                ",hostfwd=tcp:127.0.0.1:{}-{addr}:{}",
                f.host, f.guest
            ));
        }
        a.extend(["-netdev".into(), netdev]);
        if self.nics <= 1 {
            a.extend(["-device".into(), "virtio-net-pci,netdev=n0".into()]);
        } else {
            a.extend(["-netdev".into(), "hubport,id=up,hubid=0,netdev=n0".into()]);
            for k in 0..self.nics {
                a.extend([
                    "-netdev".into(),
                    format!("hubport,id=h{k},hubid=0"),
                    "-device".into(),
                    format!(
                        "virtio-net-pci,netdev=h{k},mac=52:54:00:12:34:{:02x}",
                        0x56 + k
                    ),
                ]);
            }
        }
        if let Some(file) = &self.pcap {
            a.extend([
                "-object".into(),
                format!("filter-dump,id=dump0,netdev=n0,file={}", file.display()),
            ]);
        }
        a.extend([
            "-display".into(),
            "none".into(),
            "-no-reboot".into(),
            "-device".into(),
            "isa-debug-exit,iobase=0xf4,iosize=0x04".into(),
        ]);
        a
    }

    /// A QEMU command booting `kernel` with the initramfs `initrd` (a multiboot module) and
    /// `cmdline`, serial on stdio.
    pub fn command(
        &self,
        kernel: &Path,
        initrd: &Path,
        cmdline: &str,
        console: Console,
    ) -> Command {
        let mut c = Command::new("qemu-system-x86_64");
        c.args(self.args());
        c.arg("-kernel").arg(kernel);
        c.arg("-initrd").arg(initrd);
        c.arg("-append").arg(cmdline);
        match console {
            Console::Terminal => {
                c.args(["-serial", "mon:stdio"]);
            }
            Console::Piped => {
                c.args(["-serial", "stdio", "-monitor", "none"]);
            }
            Console::Watched(sock) => {
                c.args(["-serial", "stdio", "-monitor"]);
                c.arg(crate::monitor::argument(sock));
            }
        }
        c
    }
}

/// Where a guest's serial console and QEMU's monitor go.
#[derive(Clone, Copy, Debug)]
pub enum Console<'a> {
    /// The terminal, with the monitor on the same line (Ctrl-A C): `cargo xtask run`.
    Terminal,
    /// Standard input and output; no monitor.
    Piped,
    /// Standard input and output, and the monitor on this Unix socket (to ask a guest that
    /// hangs where it is, `monitor::ask_hung`).
    Watched(&'a Path),
}
