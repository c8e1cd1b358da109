//! Reef's own system calls, numbered above Linux's range, and their arguments (the C side is
//! in `usr/reef-test.h` and `usr/reef_msg.h`).

/// First number of Reef's own system calls.
pub const REEF_BASE: usize = 1024;
/// `reef_free_bytes()`: free physical memory in bytes.
pub const REEF_FREE_BYTES: usize = REEF_BASE;
/// `reef_name_register(name, len, mailbox_fd)`: registers the caller's mailbox under `name` in
/// the name directory (fos §3.2.1).
pub const REEF_NAME_REGISTER: usize = REEF_BASE + 1;
/// `reef_name_unregister(name, len, mailbox_fd)`: removes that registration.
pub const REEF_NAME_UNREGISTER: usize = REEF_BASE + 2;
/// `reef_name_lookup(name, len, how, out)`: one member of `name`, chosen as `how` says, into
/// `out` (a `struct reef_name_member`, [`NAME_MEMBER_SIZE`] bytes).
pub const REEF_NAME_LOOKUP: usize = REEF_BASE + 3;
/// `reef_mbox_create(flags, events_out)`: a new receive mailbox's descriptor; the address of
/// its eventcount page goes to the `u64` at `events_out`. `flags`: `O_CLOEXEC`, `O_NONBLOCK`
/// (`accept` does not wait).
pub const REEF_MBOX_CREATE: usize = REEF_BASE + 4;
/// Where in the page `reef_mbox_create` maps its owner counts the connections offered to the
/// mailbox (a `u64`, a cache line after the eventcount): the owner calls `accept` only when
/// it moved.
pub const MBOX_ARRIVALS_OFFSET: usize = 64;
/// `reef_mbox_connect(name, len, how, out, flags)`: a connection to the mailbox registered
/// under `name` (the member `how` picks), as a descriptor; `out` receives a `struct
/// reef_conn_info` ([`CONN_INFO_SIZE`] bytes). `flags`: `O_CLOEXEC`.
pub const REEF_MBOX_CONNECT: usize = REEF_BASE + 5;
/// `reef_mbox_accept(mailbox_fd, flags, out)`: the oldest waiting connection to the caller's
/// mailbox, as a descriptor, waiting for one unless the mailbox or `flags` say `O_NONBLOCK`;
/// `out` as for `reef_mbox_connect`. `flags`: `O_CLOEXEC`, `O_NONBLOCK`.
pub const REEF_MBOX_ACCEPT: usize = REEF_BASE + 6;
/// `reef_mbox_notify(conn_fd)`: a client's doorbell: wakes the mailbox's owner (bumps its
/// eventcount).
pub const REEF_MBOX_NOTIFY: usize = REEF_BASE + 7;
/// `reef_grant(conn_fd, addr, len, flags)`: shares the caller's pages `[addr, addr + len)` (in
/// one `MAP_SHARED` or message region) with the peer of the connection; returns the grant's
/// id, which the peer presents to [`REEF_GRANT_MAP`]. `flags`: [`REEF_GRANT_WRITE`].
pub const REEF_GRANT: usize = REEF_BASE + 8;
/// `reef_grant_map(conn_fd, id, len_out)`: maps the grant `id`, made to the caller by the
/// connection's other end, at a new address (returned); its length goes to the `u64` at
/// `len_out` unless that is 0.
pub const REEF_GRANT_MAP: usize = REEF_BASE + 9;
/// `reef_grant_revoke(conn_fd, id)`: the granter takes grant `id` back: it can no longer be
/// mapped (mappings made already stay until their process unmaps them).
pub const REEF_GRANT_REVOKE: usize = REEF_BASE + 10;
/// `reef_fleet_bind(pid, core, name, len, flags)`: the fleet manager makes process `pid` a
/// member of fleet `name` (under `fleet/`) on `core`: nothing else runs there, unless
/// [`REEF_FLEET_SHARED`].
pub const REEF_FLEET_BIND: usize = REEF_BASE + 11;
/// `reef_core_info(core, out)`: what the kernel knows of core `core` (Barrelfish/DC's cores as
/// devices), into `out` (a `struct reef_core_info`, [`CORE_INFO_SIZE`] bytes): `ENODEV` past
/// the last core.
pub const REEF_CORE_INFO: usize = REEF_BASE + 12;
/// `reef_core_ctl(op, core, arg)`: stops ([`REEF_CORE_STOP`]) or starts ([`REEF_CORE_START`])
/// core `core`, parks it on core `arg` ([`REEF_CORE_PARK`]) or unparks it
/// ([`REEF_CORE_UNPARK`]), or restarts it in the kernel image whose path `arg` points to
/// ([`REEF_CORE_UPDATE`]; [`REEF_CORE_RT`] also gives it to the caller alone), returning once
/// it is stopped, online or parked; root only.
pub const REEF_CORE_CTL: usize = REEF_BASE + 13;
/// `reef_netd(op, arg)`: the network server's calls (LibrettOS §3.2): [`REEF_NETD_ATTACH`]
/// (`arg`: where to write `struct { u64 region, region_pages, ports, port_pages; }`) and
/// [`REEF_NETD_KICK`] (`arg`: a mask of the rings whose kernel side to wake).
pub const REEF_NETD: usize = REEF_BASE + 14;
/// `reef_net_mode(pid, mode)`: moves process `pid`'s stack instances to the network server
/// ([`REEF_NET_SERVER`]), to the kernel's switch ([`REEF_NET_KERNEL`]) or to a NIC of their
/// own ([`REEF_NET_DIRECT`]), or gives them an address of their own where they are
/// ([`REEF_NET_ADDRESS`]); root only.
pub const REEF_NET_MODE: usize = REEF_BASE + 15;
/// `reef_fleet_resize(pid, name, len, op)`: the fleet manager tells the kernel that member
/// `pid` of fleet `name` joined ([`REEF_FLEET_JOIN`], once it registered its name) or is to
/// leave ([`REEF_FLEET_LEAVE`], before it is stopped); a kernel service built on the fleet
/// (Hare's mount: `fleet/hare`) moves its state onto the members that stay before it
/// returns. Nothing to do for other fleets.
pub const REEF_FLEET_RESIZE: usize = REEF_BASE + 16;
/// The last Reef call.
pub const REEF_LAST: usize = REEF_FLEET_RESIZE;

/// `reef_fleet_resize`'s `op`: the member joined.
pub const REEF_FLEET_JOIN: u64 = 1;
/// `reef_fleet_resize`'s `op`: the member is to leave.
pub const REEF_FLEET_LEAVE: u64 = 2;

/// `reef_netd`'s `op`: the caller, a member of `fleet/net`, becomes the network server and
/// gets the shared region and the port table mapped.
pub const REEF_NETD_ATTACH: u64 = 0;
/// `reef_netd`'s `op`: the server put frames in the rings of `arg`'s bits.
pub const REEF_NETD_KICK: u64 = 1;
/// `reef_net_mode`'s `mode`: the kernel's switch.
pub const REEF_NET_KERNEL: u64 = 0;
/// `reef_net_mode`'s `mode`: the network server.
pub const REEF_NET_SERVER: u64 = 1;
/// `reef_net_mode`'s `mode`: a NIC of its own (library mode).
pub const REEF_NET_DIRECT: u64 = 2;
/// `reef_net_mode`'s `mode`: no move, an address of the instance's own now (LibrettOS gives
/// one at launch to an application that may switch), which its new connections outside use.
pub const REEF_NET_ADDRESS: u64 = 3;

/// `reef_core_ctl`'s `op`: stop the core (its threads that may run elsewhere move; those that
/// may run only there wait for it).
pub const REEF_CORE_STOP: u64 = 0;
/// `reef_core_ctl`'s `op`: start a stopped core again with its KCB.
pub const REEF_CORE_START: u64 = 1;
/// `reef_core_ctl`'s `op`: park the core on core `host` (Barrelfish/DC §4.6): it stops, and
/// `host` runs its KCB (the threads that may run only on it) by turns with its own.
pub const REEF_CORE_PARK: u64 = 2;
/// `reef_core_ctl`'s `op`: unpark the core: its host gives its KCB back and it starts again.
pub const REEF_CORE_UNPARK: u64 = 3;
/// `reef_core_ctl`'s `op`: restart the core in another kernel image (Barrelfish/DC §4.5):
/// `arg` points to its path (a NUL-terminated string; `reef` names the boot image).
pub const REEF_CORE_UPDATE: u64 = 4;
/// `reef_core_ctl`'s `op`: restart the online core in the kernel image whose path `arg`
/// points to and make the calling process its owner, alone there until it exits
/// (Barrelfish/DC §5.3's real-time kernel, `/boot/reef-rt`).
pub const REEF_CORE_RT: u64 = 5;
/// `struct reef_core_info`'s `parked_on` and `guest` when they name no core.
pub const CORE_NONE: u32 = u32::MAX;

/// Size of what `reef_core_info` writes: `struct reef_core_info { u32 core, node, apic_id,
/// state; u64 kcb, starts, shutdown_ns; u32 threads, fleet_owner; char image[16]; u32
/// parked_on, guest; }`: `state` is 0 created, 1 starting, 2 online, 3 stopping, 4 stopped, 5
/// parked; `kcb` the KCB's physical address; `starts` the times the core was started;
/// `shutdown_ns` its clock when it last stopped or was given back by its host (0: never);
/// `threads` the threads whose run queue is the core's (ready or running); `fleet_owner` the
/// fleet member owning it (0: none); `image` the name of the kernel image running it,
/// NUL-padded; `parked_on` the core running its KCB while it is parked, `guest` the core whose
/// KCB it runs parked ([`CORE_NONE`]: none).
pub const CORE_INFO_SIZE: usize = 72;

/// `reef_fleet_bind`'s flag: the member time-shares its core with other programs (Hare's
/// timeshare placement) instead of owning it (split placement).
pub const REEF_FLEET_SHARED: u64 = 1;

/// `reef_grant`'s flag: the peer may write the pages (the caller's mapping must allow writing).
pub const REEF_GRANT_WRITE: u64 = 1;

/// `reef_name_lookup`'s `how`: the member nearest the caller (its core, then its node, then
/// any; equally near ones in turn).
pub const REEF_NAME_NEAREST: u64 = 0;
/// `reef_name_lookup`'s `how`: every member in turn.
pub const REEF_NAME_ROUND_ROBIN: u64 = 1;

/// Size of what `reef_name_lookup` writes: `struct reef_name_member { u64 mailbox; u32 pid,
/// core, node, pad; }` (`mailbox` is the kernel's id of the mailbox).
pub const NAME_MEMBER_SIZE: usize = 24;

/// A `mkdir` mode bit: on Hare, spread the new directory's entries over all file servers (a
/// distributed directory, Hare §3.4's flag at creation). NR-FS ignores it, as Linux ignores
/// every `mkdir` mode bit outside `07777`, so one program runs unchanged on both.
pub const S_DISTRIBUTED: u32 = 0o200000;

/// Size of what `reef_mbox_connect` and `reef_mbox_accept` write: `struct reef_conn_info { u64
/// addr; u64 mailbox; u32 slots, client; }`: the address of the mapped `msg::Connection`
/// (request channel, then reply channel, one page each), the mailbox's id, the slots per
/// channel, and the pid of the process that made the connection (0: the kernel).
pub const CONN_INFO_SIZE: usize = 24;
