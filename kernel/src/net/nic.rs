//! The machine's NIC: QEMU's virtio-net on the PCI bus, driven with the `virtio-drivers` crate
//! (a well-kept `no_std` driver set that builds on stable; 0.12 is its newest release in the
//! 2021 edition, which the kernel's compiler floor needs). Reef gives it the configuration
//! access (`arch::pci`'s port mechanism) and the DMA memory ([`KernelHal`]: frames from the
//! frame allocator, heap buffers by their direct-map addresses: the heap's arenas are
//! contiguous 2 MiB frames and x86 DMA is coherent, so sharing needs no bounce buffer).
//!
//! The NIC interrupts the boot core (its PCI INTx line through the I/O APIC, found in the
//! MADT): the handler quiets the device and marks the network due, and the boot core runs
//! [`super::run_due`] as soon as it leaves the interrupt (to user mode or its idle loop). It is
//! also polled by [`super::pump`] whenever an instance runs and by the boot core's tick, so a
//! lost or unrouted interrupt costs latency, not frames.

use crate::arch::paging::{phys_to_virt, virt_to_phys};
use crate::arch::pci;
use crate::kprintln;
use crate::sync::IrqMutex;
use core::ptr::NonNull;
use frames::{Frame, FrameSize};
use net::EthernetAddress;
use virtio_drivers::device::net::VirtIONet;
use virtio_drivers::transport::pci::bus::{
    BarInfo, Command, ConfigurationAccess, DeviceFunction, PciRoot,
};
use virtio_drivers::transport::pci::{virtio_device_type, PciTransport};
use virtio_drivers::transport::DeviceType;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

/// Receive and send queue entries.
const QUEUE_SIZE: usize = 64;
/// Bytes of each receive buffer (a frame and virtio's header).
const BUFFER_LEN: usize = 2048;
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

/// The NIC's device.
type Device = VirtIONet<KernelHal, PciTransport, QUEUE_SIZE>;

/// The NIC, once found.
pub struct Nic {
    /// The device.
    dev: Device,
    /// Its MAC address.
    pub mac: EthernetAddress,
}

/// The NIC (`None` until [`init`] found one, or if the machine has none).
pub static NIC: IrqMutex<Option<Nic>> = IrqMutex::new(None);

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

/// Quiets the NIC's interrupt (reading its status deasserts the line) and marks the network
/// due (the `irq::bind_device` hook).
fn interrupt() {
    if let Some(n) = NIC.lock().as_mut() {
        n.dev.ack_interrupt();
    }
    super::interrupted();
}

/// Routes the INTx line of `df` (its interrupt-line register, with the MADT's override for
/// that IRQ if any) through the I/O APIC that serves it to a vector of the calling (boot)
/// core; says where, or why not.
fn route_interrupt(df: DeviceFunction, madt: Option<&acpi::Madt>) {
    let line = (pci::read32(df.bus, df.device, df.function, 0x3c) & 0xff) as u8;
    let Some(madt) = madt else {
        kprintln!("reef: net: no MADT: the NIC is polled");
        return;
    };
    if line == 0 || line == 0xff {
        kprintln!("reef: net: the NIC has no interrupt line: it is polled");
        return;
    }
    // PCI interrupts are level-triggered and active low unless the MADT says otherwise.
    let mut gsi = u32::from(line);
    let mut signal = crate::arch::ioapic::Signal {
        level: true,
        active_low: true,
    };
    if let Some(o) = madt
        .overrides
        .iter()
        .find(|o| o.bus == 0 && o.source == line)
    {
        gsi = o.gsi;
        match o.polarity {
            acpi::Polarity::ActiveHigh => signal.active_low = false,
            acpi::Polarity::ActiveLow => signal.active_low = true,
            _ => {}
        }
        match o.trigger {
            acpi::Trigger::Edge => signal.level = false,
            acpi::Trigger::Level => signal.level = true,
            _ => {}
        }
    }
    let Some(ioapic) = madt
        .io_apics
        .iter()
        .find(|a| gsi >= a.gsi_base && gsi < a.gsi_base + 24)
    else {
        kprintln!("reef: net: no I/O APIC serves GSI {gsi}: the NIC is polled");
        return;
    };
    let Some(vector) = crate::irq::bind_device(gsi, interrupt) else {
        kprintln!("reef: net: no free interrupt vector: the NIC is polled");
        return;
    };
    crate::arch::ioapic::route(
        ioapic.address,
        gsi - ioapic.gsi_base,
        vector,
        crate::arch::apic::id(),
        signal,
    );
    kprintln!("reef: net: NIC interrupt: IRQ {line}, GSI {gsi} -> vector {vector:#x} on core 0");
}

/// Looks for a virtio-net device on PCI bus 0 and sets it up (its interrupt through the
/// MADT's I/O APIC); says what it found.
pub fn init(madt: Option<&acpi::Madt>) {
    let mut root = PciRoot::new(PortAccess);
    let mut next = BAR_WINDOW;
    let found = root
        .enumerate_bus(0)
        .find(|(_, info)| virtio_device_type(info) == Some(DeviceType::Network));
    let Some((df, _)) = found else {
        kprintln!("reef: net: no virtio-net device: only the machine's own addresses work");
        return;
    };
    assign_bars(&mut root, df, &mut next);
    let transport = match PciTransport::new::<KernelHal, _>(&mut root, df) {
        Ok(t) => t,
        Err(e) => {
            kprintln!("reef: net: virtio-net at {df}: {e}");
            return;
        }
    };
    match Device::new(transport, BUFFER_LEN) {
        Ok(dev) => {
            let mac = EthernetAddress(dev.mac_address());
            kprintln!("reef: net: virtio-net at {df}, MAC {mac}");
            let mut nic = Nic { dev, mac };
            // Learn the gateway's MAC before the first frame needs it.
            nic.send(&net::switch::ask_gateway(
                mac,
                super::ADDRESS.address(),
                super::GATEWAY,
            ));
            *NIC.lock() = Some(nic);
            route_interrupt(df, madt);
        }
        Err(e) => kprintln!("reef: net: virtio-net at {df}: {e:?}"),
    }
}

impl Nic {
    /// Sends one frame; false if the device's queue is full (the frame is dropped: TCP sends
    /// it again).
    pub fn send(&mut self, frame: &[u8]) -> bool {
        if !self.dev.can_send() {
            return false;
        }
        let mut tx = self.dev.new_tx_buffer(frame.len());
        tx.packet_mut().copy_from_slice(frame);
        self.dev.send(tx).is_ok()
    }

    /// The next frame received, if any.
    pub fn receive(&mut self) -> Option<alloc::vec::Vec<u8>> {
        let rx = self.dev.receive().ok()?;
        let frame = rx.packet().to_vec();
        // Gives the buffer back to the device; failing leaves one buffer fewer.
        let _ = self.dev.recycle_rx_buffer(rx);
        Some(frame)
    }

    /// Whether a frame waits.
    pub fn can_receive(&self) -> bool {
        self.dev.can_recv()
    }
}
