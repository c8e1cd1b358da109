//! The machine's NIC: QEMU's virtio-net on the PCI bus, driven with the `virtio-drivers` crate
//! (a well-kept `no_std` driver set that builds on stable; 0.12 is its newest release in the
//! 2021 edition, which the kernel's compiler floor needs) through its raw interface: Reef lends
//! the device its receive buffers and the frames it sends, so that a send does not wait for the
//! device to take the frame (the crate's own `send` spins until it has). Reef gives it the configuration
//! access (`arch::pci`'s port mechanism) and the DMA memory ([`KernelHal`]: frames from the
//! frame allocator, heap buffers by their direct-map addresses: the heap's arenas are
//! contiguous 2 MiB frames and x86 DMA is coherent, so sharing needs no bounce buffer).
//!
//! The first virtio-net device is the machine's shared NIC ([`NIC`]: the kernel's switch or the
//! network server drives it); every further one ([`LIBRARY`], `xtask run --nics N`) is free to
//! be given to one stack instance in library mode (LibrettOS §3.1: QEMU's extra NICs stand in
//! for SR-IOV virtual functions), `super::library`.
//!
//! Every NIC interrupts the boot core by MSI-X (the INTx line through the I/O APIC delivered
//! nothing under QEMU's `pc` machine with qboot, though the device asserted it): the handler
//! marks the network due (with MSI-X a driver does not read virtio's ISR status, virtio 1.1
//! §4.1.4.5.2), and the boot core runs
//! [`super::run_due`] as soon as it leaves the interrupt (to user mode or its idle loop). It is
//! also looked at by the boot core's tick, so a lost interrupt costs latency, not frames.
//!
//! The device is told of new buffers once per batch, not per buffer ([`Doorbell`]): whoever
//! sends frames or takes them calls [`ring_doorbells`] when it is done (`super::pump_all`, the
//! network server's kick, a gratuitous ARP).

use crate::arch::paging::{phys_to_virt, virt_to_phys};
use crate::arch::pci;
use crate::kprintln;
use crate::sync::IrqMutex;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use frames::{Frame, FrameSize};
use net::EthernetAddress;
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::pci::bus::{
    BarInfo, Command, ConfigurationAccess, DeviceFunction, PciRoot,
};
use virtio_drivers::transport::pci::{virtio_device_type, PciTransport};
use virtio_drivers::transport::{DeviceStatus, DeviceType, InterruptStatus, Transport};
use virtio_drivers::{BufferDirection, Hal, PhysAddr};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// Receive and send queue entries (`ifconfig`'s `txqueuelen` of `eth0`).
pub const QUEUE_SIZE: usize = 64;
/// Bytes of each receive buffer (a frame and virtio's header).
const BUFFER_LEN: usize = 2048;
/// The largest virtio-net header (`struct virtio_net_hdr` with `num_buffers`).
const HEADER_MAX: usize = 12;
/// Where memory BARs the firmware left unassigned go: from here up, below the I/O APIC,
/// inside the 4 GiB the direct map always covers.
const BAR_WINDOW: u64 = 0xe000_0000;

/// The PCI configuration space for `virtio-drivers`, through `arch::pci`.
struct PortAccess;

impl ConfigurationAccess for PortAccess {
    fn read_word(&self, df: DeviceFunction, offset: u8) -> u32 {
        pci::read32(df.bus, df.device, df.function, offset)
    }

    fn write_word(&mut self, df: DeviceFunction, offset: u8, data: u32) {
        pci::write32(df.bus, df.device, df.function, offset, data);
    }

    unsafe fn unsafe_clone(&self) -> Self {
        PortAccess
    }
}

/// DMA memory and address translation for `virtio-drivers`.
struct KernelHal;

// SAFETY: `dma_alloc` returns zeroed, physically contiguous memory owned by the driver until
// `dma_dealloc`, mapped at the returned direct-map address; `share` gives the physical address
// of a buffer that is contiguous (a heap chunk lies within one 2 MiB arena frame, or within the
// kernel image's boot arena) and stays valid while shared; the CPU's caches are coherent with
// DMA on x86, so nothing needs flushing on `unshare`.
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        // The queues of a 64-entry device take a few pages; one frame holds them.
        let size = if pages <= 1 {
            FrameSize::Base
        } else {
            FrameSize::Large
        };
        assert!(
            pages * 4096 <= size.bytes() as usize,
            "virtio: {pages} DMA pages asked, more than one frame"
        );
        let frame = crate::mm::allocate(size).expect("virtio: no memory for the NIC's queues");
        let virt = phys_to_virt(frame.base());
        // SAFETY: the frame was just allocated to us and the direct map covers it.
        unsafe { core::ptr::write_bytes(virt as *mut u8, 0, size.bytes() as usize) };
        // The driver owns the frame until `dma_dealloc` rebuilds and releases it.
        (
            frame.base(),
            NonNull::new(virt as *mut u8).expect("direct map is not null"),
        )
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _: NonNull<u8>, pages: usize) -> i32 {
        let size = if pages <= 1 {
            FrameSize::Base
        } else {
            FrameSize::Large
        };
        let node = crate::mm::node_of(paddr).unwrap_or(0);
        match Frame::new(paddr, size, node).map(crate::mm::release) {
            Some(Ok(())) => 0,
            _ => -1,
        }
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _: usize) -> NonNull<u8> {
        NonNull::new(phys_to_virt(paddr) as *mut u8).expect("direct map is not null")
    }

    unsafe fn share(buffer: NonNull<[u8]>, _: BufferDirection) -> PhysAddr {
        virt_to_phys(buffer.as_ptr() as *mut u8 as u64)
    }

    unsafe fn unshare(_: PhysAddr, _: NonNull<[u8]>, _: BufferDirection) {}
}

/// The NIC's device (the crate's raw interface: Reef keeps the buffers, so that a send does
/// not wait for the device to take the frame, as the crate's own `send` does), its
/// notifications held for [`ring_doorbells`].
type Device = VirtIONetRaw<KernelHal, Deferred, QUEUE_SIZE>;

/// A NIC's doorbells: virtio's notification register of each of its two queues, which tells
/// the device that a queue has new buffers. Under QEMU a write to one is a device access that
/// waits for QEMU's I/O thread (its global lock) and wakes it; the crate writes one after every
/// buffer the device has not caught up with (its `avail_event` test notifies whenever the
/// device is behind, not only when it asked, and each of its notifications is three register
/// accesses: the queue's selection, its notify offset and the write). So Reef's transport
/// ([`Deferred`]) only marks the queue, and [`ring_doorbells`] writes each marked register
/// once at the end of a batch (a pump of the stack instances, a kick of the network server):
/// what Linux's drivers do when the stack says more frames follow (`xmit_more`).
struct Doorbell {
    /// Each queue's register's physical address (0: not found, the crate notifies itself).
    at: [AtomicU64; 2],
    /// Queues given buffers since their register was last written, a bit each.
    pending: AtomicU8,
    /// Register writes so far (`/proc/reef/net`).
    written: AtomicU64,
}

impl Doorbell {
    /// A doorbell whose registers are not known yet.
    const fn new() -> Doorbell {
        Doorbell {
            at: [AtomicU64::new(0), AtomicU64::new(0)],
            pending: AtomicU8::new(0),
            written: AtomicU64::new(0),
        }
    }
}

/// virtio's feature bit `VIRTIO_F_EVENT_IDX` (see [`Deferred`]).
const EVENT_IDX: u32 = 29;

/// The NICs' doorbells, in the order [`init`] found the NICs.
static DOORBELLS: [Doorbell; NICS_MAX] = [const { Doorbell::new() }; NICS_MAX];
/// Some doorbell has a queue marked.
static PENDING: AtomicBool = AtomicBool::new(false);

/// Writes the notification register of every queue given buffers since its last ring: the
/// end of a batch. Lock-free: a notification only tells the device to look at a queue, whose
/// buffers were published before their mark, so any write after the mark will do.
pub fn ring_doorbells() {
    if !PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    fence(Ordering::SeqCst);
    for bell in &DOORBELLS {
        let marked = bell.pending.swap(0, Ordering::AcqRel);
        for (q, at) in bell.at.iter().enumerate() {
            if marked & 1 << q != 0 {
                // SAFETY: a queue is marked only once `find_doorbells` found its register in a
                // memory BAR of a NIC this driver owns (inside the direct map); writing the
                // queue's index there is virtio's notification.
                unsafe { pci::mmio_write16(at.load(Ordering::Acquire), q as u16) };
                bell.written.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The PCI transport with its notifications deferred to [`ring_doorbells`] (see
/// [`Doorbell`]); everything else is the crate's.
struct Deferred {
    /// The crate's transport.
    inner: PciTransport,
    /// This NIC's doorbell.
    bell: &'static Doorbell,
}

impl Transport for Deferred {
    fn device_type(&self) -> DeviceType {
        self.inner.device_type()
    }

    fn read_device_features(&mut self) -> u64 {
        // Not VIRTIO_F_EVENT_IDX: the crate's test of the device's `avail_event` asks for a
        // notification whenever the device has not taken every buffer yet, where the device's
        // `NO_NOTIFY` flag (which QEMU raises while it is busy with a queue) is read as meant.
        self.inner.read_device_features() & !(1 << EVENT_IDX)
    }

    fn write_driver_features(&mut self, driver_features: u64) {
        self.inner.write_driver_features(driver_features);
    }

    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.inner.max_queue_size(queue)
    }

    fn notify(&mut self, queue: u16) {
        let known = self
            .bell
            .at
            .get(usize::from(queue))
            .is_some_and(|at| at.load(Ordering::Acquire) != 0);
        if known {
            self.bell.pending.fetch_or(1 << queue, Ordering::AcqRel);
            PENDING.store(true, Ordering::Release);
        } else {
            self.inner.notify(queue);
        }
    }

    fn get_status(&self) -> DeviceStatus {
        self.inner.get_status()
    }

    fn set_status(&mut self, status: DeviceStatus) {
        self.inner.set_status(status);
    }

    fn set_guest_page_size(&mut self, guest_page_size: u32) {
        self.inner.set_guest_page_size(guest_page_size);
    }

    fn requires_legacy_layout(&self) -> bool {
        self.inner.requires_legacy_layout()
    }

    fn queue_set(
        &mut self,
        queue: u16,
        size: u32,
        descriptors: PhysAddr,
        driver_area: PhysAddr,
        device_area: PhysAddr,
    ) {
        self.inner
            .queue_set(queue, size, descriptors, driver_area, device_area);
    }

    fn queue_unset(&mut self, queue: u16) {
        self.inner.queue_unset(queue);
    }

    fn queue_used(&mut self, queue: u16) -> bool {
        self.inner.queue_used(queue)
    }

    fn ack_interrupt(&mut self) -> InterruptStatus {
        self.inner.ack_interrupt()
    }

    fn read_config_generation(&self) -> u32 {
        self.inner.read_config_generation()
    }

    fn read_config_space<T: FromBytes + IntoBytes>(
        &self,
        offset: usize,
    ) -> virtio_drivers::Result<T> {
        self.inner.read_config_space(offset)
    }

    fn write_config_space<T: IntoBytes + Immutable>(
        &mut self,
        offset: usize,
        value: T,
    ) -> virtio_drivers::Result<()> {
        self.inner.write_config_space(offset, value)
    }
}

/// A buffer lent to the device, by the token its queue gave it.
type Lent = Vec<Option<Box<[u8]>>>;

/// A NIC, once found.
pub struct Nic {
    /// The device.
    dev: Device,
    /// Its MAC address.
    pub mac: EthernetAddress,
    /// The stack instance it is given to (library mode; the shared NIC has none).
    pub owner: Option<net::StackId>,
    /// Frames it received that were for another MAC (QEMU's virtio-net hears everything on
    /// its segment) and were dropped.
    pub foreign: u64,
    /// Receive buffers the device holds, by token.
    rx: Lent,
    /// Frames the device has not sent yet, by token.
    tx: Lent,
    /// What it sent and received (`/proc/net/dev`'s `eth0`).
    pub counts: Counts,
    /// Its doorbell.
    bell: &'static Doorbell,
}

/// A NIC's frame and byte counts (whole Ethernet frames, as Linux counts them).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Frames received.
    pub rx_packets: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Frames not sent: the device's queue was full.
    pub tx_dropped: u64,
}

/// Keeps `buf` in `lent` under `token` (a token is below the queue's size).
fn lend(lent: &mut Lent, token: u16, buf: Box<[u8]>) {
    let i = usize::from(token);
    if lent.len() <= i {
        lent.resize_with(i + 1, || None);
    }
    lent[i] = Some(buf);
}

/// The shared NIC (`None` until [`init`] found one, or if the machine has none).
pub static NIC: IrqMutex<Option<Nic>> = IrqMutex::new(None);
/// The NICs for library mode: the virtio-net devices after the first.
pub static LIBRARY: IrqMutex<Vec<Nic>> = IrqMutex::new(Vec::new());

/// Gives every unassigned memory BAR of `df` an address in [`BAR_WINDOW`] and turns memory
/// decoding and bus mastering on.
fn assign_bars(root: &mut PciRoot<PortAccess>, df: DeviceFunction, next: &mut u64) {
    let Ok(bars) = root.bars(df) else {
        return;
    };
    for (i, bar) in bars.iter().enumerate() {
        if let Some(BarInfo::Memory {
            address: 0, size, ..
        }) = bar
        {
            let size = (*size).max(4096);
            let at = next.div_ceil(size) * size;
            *next = at + size;
            if bar.as_ref().is_some_and(BarInfo::takes_two_entries) {
                root.set_bar_64(df, i as u8, at);
            } else {
                root.set_bar_32(df, i as u8, at as u32);
            }
        }
    }
    let (_, command) = root.get_status_command(df);
    root.set_command(
        df,
        command | Command::MEMORY_SPACE | Command::IO_SPACE | Command::BUS_MASTER,
    );
}

/// PCI capability id of MSI-X.
const CAP_MSIX: u8 = 0x11;
/// PCI capability id of vendor-specific capabilities (virtio's structures).
const CAP_VENDOR: u8 = 0x09;
/// virtio's common configuration structure (`cfg_type` of its capability).
const VIRTIO_COMMON_CFG: u8 = 1;
/// Offsets in virtio's common configuration: `msix_config`, `queue_select`,
/// `queue_msix_vector`.
const MSIX_CONFIG: u64 = 0x10;
/// See [`MSIX_CONFIG`].
const QUEUE_SELECT: u64 = 0x16;
/// See [`MSIX_CONFIG`].
const QUEUE_MSIX_VECTOR: u64 = 0x1a;
/// See [`MSIX_CONFIG`]: `queue_notify_off`.
const QUEUE_NOTIFY_OFF: u64 = 0x1e;
/// virtio's notification structure (`cfg_type`; `notify_off_multiplier` follows its
/// capability's 16 bytes).
const VIRTIO_NOTIFY_CFG: u8 = 2;
/// virtio-net's receive queue.
const RECEIVE_QUEUE: u16 = 0;
/// virtio-net's transmit queue: no interrupt (sent buffers are taken back at the next send).
const TRANSMIT_QUEUE: u16 = 1;
/// virtio's "no MSI-X vector".
const NO_VECTOR: u16 = 0xffff;
/// The physical address an MSI writes to reach local APIC `id` (fixed delivery, physical
/// destination).
const MSI_ADDRESS: u64 = 0xfee0_0000;

/// The capabilities of `df`: (offset, its first dword).
fn capabilities(df: DeviceFunction) -> impl Iterator<Item = (u8, u32)> {
    let read = move |off: u8| pci::read32(df.bus, df.device, df.function, off);
    let mut at = (read(0x34) & 0xfc) as u8;
    let mut seen = 0;
    core::iter::from_fn(move || {
        // At most 48 capabilities fit in the 192 bytes after the header: a loop ends.
        if at == 0 || seen == 48 {
            return None;
        }
        seen += 1;
        let here = at;
        let word = read(here);
        at = ((word >> 8) & 0xfc) as u8;
        Some((here, word))
    })
}

/// The physical address BAR `bar` of `df` decodes (a memory BAR, 32 or 64 bits).
fn bar_address(df: DeviceFunction, bar: u8) -> Option<u64> {
    let off = 0x10 + 4 * bar;
    let low = pci::read32(df.bus, df.device, df.function, off);
    if low & 1 != 0 {
        return None;
    }
    let high = if low & 0b110 == 0b100 {
        pci::read32(df.bus, df.device, df.function, off + 4)
    } else {
        0
    };
    Some(u64::from(high) << 32 | u64::from(low & !0xf))
}

/// Where virtio structure `cfg_type` of `df` is (its physical address) and the offset of its
/// capability, if it is in a memory BAR.
fn virtio_structure(df: DeviceFunction, cfg_type: u8) -> Option<(u64, u8)> {
    let read = |off: u8| pci::read32(df.bus, df.device, df.function, off);
    let (cap, _) = capabilities(df)
        .find(|&(at, w)| w as u8 == CAP_VENDOR && (read(at) >> 24) as u8 == cfg_type)?;
    let bar = bar_address(df, (read(cap + 4) & 0xff) as u8)?;
    Some((bar + u64::from(read(cap + 8)), cap))
}

/// Finds the notification registers of `df`'s two queues for its [`Doorbell`] `bell` (once
/// its queues are set up; a register not found leaves that queue to the crate's notify).
fn find_doorbells(df: DeviceFunction, bell: &Doorbell) {
    let (Some((common, _)), Some((notify, cap))) = (
        virtio_structure(df, VIRTIO_COMMON_CFG),
        virtio_structure(df, VIRTIO_NOTIFY_CFG),
    ) else {
        kprintln!("reef: net: virtio-net at {df}: no notification structure in memory");
        return;
    };
    let length = u64::from(pci::read32(df.bus, df.device, df.function, cap + 12));
    let multiplier = u64::from(pci::read32(df.bus, df.device, df.function, cap + 16));
    for (q, at) in [RECEIVE_QUEUE, TRANSMIT_QUEUE].into_iter().zip(&bell.at) {
        // SAFETY: `common` is the virtio common configuration of a NIC this driver owns, in a
        // memory BAR inside the direct map; selecting a queue and reading its notify offset
        // have no other effect, and nothing else uses the device during `init`.
        let offset = unsafe {
            pci::mmio_write16(common + QUEUE_SELECT, q);
            pci::mmio_read16(common + QUEUE_NOTIFY_OFF)
        };
        let within = u64::from(offset) * multiplier;
        if within + 2 <= length {
            at.store(notify + within, Ordering::Release);
        } else {
            kprintln!(
                "reef: net: virtio-net at {df}: queue {q}'s notification register lies \
                       outside its structure: the crate notifies it"
            );
        }
    }
}

/// Routes the NIC's queue interrupts to a vector of the calling (boot) core by MSI-X: entry 0
/// of its MSI-X table gets the core's address and the vector, virtio's common configuration
/// points configuration changes and the receive queue at entry 0 (the transmit queue raises
/// nothing), and MSI-X is switched on (which turns
/// the INTx line off). Says where, or why the NIC stays polled.
fn route_interrupt(df: DeviceFunction) {
    let Some((msix, control)) = capabilities(df).find(|&(_, w)| w as u8 == CAP_MSIX) else {
        kprintln!("reef: net: the NIC has no MSI-X: it is polled");
        return;
    };
    let table = pci::read32(df.bus, df.device, df.function, msix + 4);
    let common = virtio_structure(df, VIRTIO_COMMON_CFG);
    let (Some(table_bar), Some((common, _))) = (bar_address(df, (table & 7) as u8), common) else {
        kprintln!("reef: net: the NIC's MSI-X table or common configuration is not in memory");
        return;
    };
    let entry = table_bar + u64::from(table & !7);
    let Some(slot) = MSIX_ENTRIES.lock().iter().position(|e| e.0 == 0) else {
        kprintln!("reef: net: no room to record the NIC's MSI-X entry: it is polled");
        return;
    };
    let Some(vector) = crate::irq::bind_msi(super::interrupted, retarget) else {
        kprintln!("reef: net: no free interrupt vector: the NIC is polled");
        return;
    };
    MSIX_ENTRIES.lock()[slot] = (vector, entry);
    let apic_id = crate::arch::apic::id();
    // SAFETY: `entry` is entry 0 of the NIC's MSI-X table and `common` its virtio common
    // configuration, both inside memory BARs of the device this driver owns (assigned below
    // 4 GiB, inside the direct map); the writes are the registers' documented uses.
    unsafe {
        pci::mmio_write32(entry, (MSI_ADDRESS | u64::from(apic_id) << 12) as u32);
        pci::mmio_write32(entry + 4, 0);
        pci::mmio_write32(entry + 8, u32::from(vector));
        pci::mmio_write32(entry + 12, 0);
        pci::mmio_write16(common + MSIX_CONFIG, 0);
        pci::mmio_write16(common + QUEUE_SELECT, RECEIVE_QUEUE);
        pci::mmio_write16(common + QUEUE_MSIX_VECTOR, 0);
        pci::mmio_write16(common + QUEUE_SELECT, TRANSMIT_QUEUE);
        pci::mmio_write16(common + QUEUE_MSIX_VECTOR, NO_VECTOR);
    }
    // Message control is the upper half of the capability's first dword: enable (bit 15).
    pci::write32(
        df.bus,
        df.device,
        df.function,
        msix,
        (control & 0xffff) | ((control >> 16) | 1 << 15) << 16,
    );
    kprintln!("reef: net: NIC interrupt: MSI-X -> vector {vector:#x} on core 0");
    if let Some(core) = crate::cmdline::get().nic_irq {
        if crate::irq::rehome(vector, core) {
            kprintln!(
                "reef: net: NIC interrupt (vector {vector:#x}) bound to core {core} (nic_irq)"
            );
        } else {
            kprintln!("reef: net: nic_irq={core}: no such online core; the NIC interrupts core 0");
        }
    }
}

/// Each NIC's MSI-X vector and the address of its table entry 0 (vector 0: a free slot), for
/// [`retarget`].
static MSIX_ENTRIES: IrqMutex<[(u8, u64); NICS_MAX]> = IrqMutex::new([(0, 0); NICS_MAX]);

/// Points the NIC interrupting on `vector` at the core whose APIC id is `apic_id` (the
/// `irq::bind_msi` hook: its binding moves when a core stops or is parked, Barrelfish/DC §4.8):
/// rewrites the destination in the message address of its MSI-X table entry.
fn retarget(vector: u8, apic_id: u32) {
    let entry = MSIX_ENTRIES
        .lock()
        .iter()
        .find(|e| e.0 == vector)
        .map(|e| e.1);
    if let Some(entry) = entry {
        // SAFETY: `entry` is entry 0 of the MSI-X table of a NIC this driver owns, in a memory
        // BAR inside the direct map (see `route_interrupt`); the message address's destination
        // field is the documented way to point the interrupt at another local APIC.
        unsafe { pci::mmio_write32(entry, (MSI_ADDRESS | u64::from(apic_id) << 12) as u32) };
    }
}

/// Most NICs set up (the shared one and the library-mode ones).
const NICS_MAX: usize = 8;

/// Looks for the virtio-net devices on PCI bus 0 and sets each up (its interrupt by MSI-X);
/// says what it found. The first is the shared NIC, the others go to [`LIBRARY`].
pub fn init() {
    let mut root = PciRoot::new(PortAccess);
    let mut next = BAR_WINDOW;
    let found: Vec<DeviceFunction> = root
        .enumerate_bus(0)
        .filter(|(_, info)| virtio_device_type(info) == Some(DeviceType::Network))
        .map(|(df, _)| df)
        .take(NICS_MAX)
        .collect();
    if found.is_empty() {
        kprintln!("reef: net: no virtio-net device: only the machine's own addresses work");
        return;
    }
    for (df, bell) in found.into_iter().zip(&DOORBELLS) {
        assign_bars(&mut root, df, &mut next);
        let inner = match PciTransport::new::<KernelHal, _>(&mut root, df) {
            Ok(t) => t,
            Err(e) => {
                kprintln!("reef: net: virtio-net at {df}: {e}");
                continue;
            }
        };
        let dev = match Device::new(Deferred { inner, bell }) {
            Ok(dev) => dev,
            Err(e) => {
                kprintln!("reef: net: virtio-net at {df}: {e:?}");
                continue;
            }
        };
        find_doorbells(df, bell);
        let mut nic = Nic::new(dev, bell);
        let mac = nic.mac;
        let mut shared = NIC.lock();
        if shared.is_none() {
            kprintln!("reef: net: virtio-net at {df}, MAC {mac}");
            // Learn the gateway's MAC before the first frame needs it.
            nic.send(&net::switch::ask_gateway(
                mac,
                super::ADDRESS.address(),
                super::GATEWAY,
            ));
            *shared = Some(nic);
        } else {
            let mut library = LIBRARY.lock();
            kprintln!(
                "reef: net: virtio-net at {df}, MAC {mac}: library-mode NIC {}",
                library.len() + 1
            );
            library.push(nic);
        }
        drop(shared);
        route_interrupt(df);
    }
    ring_doorbells();
}

impl Nic {
    /// A NIC over `dev` with every receive buffer lent to it.
    fn new(dev: Device, bell: &'static Doorbell) -> Nic {
        let mac = EthernetAddress(dev.mac_address());
        let mut nic = Nic {
            dev,
            mac,
            owner: None,
            foreign: 0,
            rx: Vec::new(),
            tx: Vec::new(),
            counts: Counts::default(),
            bell,
        };
        for _ in 0..QUEUE_SIZE {
            let mut buf: Box<[u8]> = alloc::vec![0; BUFFER_LEN].into_boxed_slice();
            // SAFETY: the buffer is kept in `rx` under its token and not touched until the
            // device gives it back (`receive`), which completes it before reading.
            match unsafe { nic.dev.receive_begin(&mut buf) } {
                Ok(token) => lend(&mut nic.rx, token, buf),
                Err(_) => break,
            }
        }
        nic
    }

    /// Takes back the frames the device has sent.
    fn reclaim(&mut self) {
        while let Some(token) = self.dev.poll_transmit() {
            let Some(buf) = self.tx.get_mut(usize::from(token)).and_then(Option::take) else {
                break;
            };
            // SAFETY: `buf` is the buffer lent under `token` by `send`.
            let _ = unsafe { self.dev.transmit_complete(token, &buf) };
        }
    }

    /// Queues one frame without waiting for the device, which is told at the next
    /// [`ring_doorbells`]; false if its queue is full (the frame is dropped: TCP sends it
    /// again).
    pub fn send(&mut self, frame: &[u8]) -> bool {
        self.reclaim();
        if !self.dev.can_send() {
            self.counts.tx_dropped += 1;
            return false;
        }
        // virtio's header comes first (its size depends on the features agreed on).
        let mut header = [0u8; HEADER_MAX];
        let Ok(h) = self.dev.fill_buffer_header(&mut header) else {
            return false;
        };
        let mut buf: Box<[u8]> = alloc::vec![0; h + frame.len()].into_boxed_slice();
        buf[..h].copy_from_slice(&header[..h]);
        buf[h..].copy_from_slice(frame);
        // SAFETY: the buffer is kept in `tx` under its token until `reclaim` completes it, and
        // nothing touches it meanwhile.
        match unsafe { self.dev.transmit_begin(&buf) } {
            Ok(token) => {
                lend(&mut self.tx, token, buf);
                self.counts.tx_packets += 1;
                self.counts.tx_bytes += frame.len() as u64;
                true
            }
            Err(_) => {
                self.counts.tx_dropped += 1;
                false
            }
        }
    }

    /// The next frame received for this NIC's MAC or for everyone (broadcast, multicast),
    /// if any: a frame for another MAC (QEMU's hub gives every NIC every frame) is dropped
    /// and counted ([`Nic::foreign`]) before it is copied out of the device's buffer.
    pub fn receive(&mut self) -> Option<Vec<u8>> {
        loop {
            let token = self.dev.poll_receive()?;
            let mut buf = self.rx.get_mut(usize::from(token)).and_then(Option::take)?;
            // SAFETY: `buf` is the buffer lent under `token` by `new` or an earlier `receive`.
            let done = unsafe { self.dev.receive_complete(token, &mut buf) };
            let got = done
                .ok()
                .and_then(|(header, len)| buf.get(header..header + len));
            let ours = got.is_some_and(|f| {
                f.get(..6)
                    .is_some_and(|dst| dst == self.mac.as_bytes() || dst[0] & 1 != 0)
            });
            if let Some(f) = got {
                self.counts.rx_packets += 1;
                self.counts.rx_bytes += f.len() as u64;
            }
            let frame = got.filter(|_| ours).and_then(|f| {
                let mut frame = Vec::new();
                frame.try_reserve_exact(f.len()).ok()?;
                frame.extend_from_slice(f);
                Some(frame)
            });
            if got.is_some() && !ours {
                self.foreign += 1;
            }
            // SAFETY: as in `new`.
            if let Ok(token) = unsafe { self.dev.receive_begin(&mut buf) } {
                lend(&mut self.rx, token, buf);
            }
            if frame.is_some() {
                return frame;
            }
        }
    }

    /// Notifications it was given (its doorbell's writes).
    pub fn notifications(&self) -> u64 {
        self.bell.written.load(Ordering::Relaxed)
    }

    /// Whether a frame waits.
    pub fn can_receive(&self) -> bool {
        self.dev.poll_receive().is_some()
    }
}
