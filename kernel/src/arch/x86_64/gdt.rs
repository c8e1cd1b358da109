//! Per-core descriptor tables: GDT and TSS. Each core's copy lives in its KCB.

use core::arch::asm;

/// Kernel code segment selector.
pub const KERNEL_CS: u16 = 0x08;
/// Kernel data segment selector.
pub const KERNEL_DS: u16 = 0x10;
/// Selector of the TSS descriptor (GDT entries 6 and 7).
const TSS_SELECTOR: u16 = 0x30;

/// IST slot (1-based, as the IDT encodes it) used for double faults.
pub const IST_DOUBLE_FAULT: u8 = 1;
/// IST slot used for NMIs and machine checks.
pub const IST_NMI: u8 = 2;

/// The 64-bit task-state segment: stack pointers for privilege changes and the IST.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct Tss {
    /// Reserved (offset 0).
    _reserved0: u32,
    /// Stack loaded on a transition to ring 0 (RSP0), ring 1 and ring 2.
    pub rsp: [u64; 3],
    /// Reserved (offset 0x1C).
    _reserved1: u64,
    /// Interrupt stack table.
    pub ist: [u64; 7],
    /// Reserved (offset 0x5C).
    _reserved2: u64,
    /// Reserved (offset 0x64).
    _reserved3: u16,
    /// I/O map base address: offset of the I/O permission bitmap from the TSS base. It points past
    /// the end of the TSS, so there is no bitmap.
    iomap_base: u16,
}

/// A core's GDT and TSS. They must not move once loaded: they live in the core's KCB.
#[repr(C, align(16))]
pub struct CpuTables {
    /// The GDT: null, kernel code, kernel data, 32-bit user code, user data, 64-bit user code and
    /// the 16-byte TSS descriptor.
    gdt: [u64; 8],
    /// This core's TSS.
    tss: Tss,
}

impl CpuTables {
    /// Tables with flat kernel and user segments and an empty TSS.
    pub const fn new() -> CpuTables {
        CpuTables {
            gdt: [
                0,
                0x00af_9a00_0000_ffff, // 0x08 kernel code, 64-bit
                0x00cf_9200_0000_ffff, // 0x10 kernel data
                0x00cf_fa00_0000_ffff, // 0x18 user code, 32-bit (unused; sysret layout)
                0x00cf_f200_0000_ffff, // 0x20 user data
                0x00af_fa00_0000_ffff, // 0x28 user code, 64-bit
                0,                     // 0x30 TSS (low), filled by `load`
                0,                     // 0x38 TSS (high)
            ],
            tss: Tss {
                _reserved0: 0,
                rsp: [0; 3],
                _reserved1: 0,
                ist: [0; 7],
                _reserved2: 0,
                _reserved3: 0,
                iomap_base: core::mem::size_of::<Tss>() as u16,
            },
        }
    }

    /// Fills in the TSS stacks and loads GDT, segment registers and task register on this core.
    ///
    /// # Safety
    /// `self` must stay at this address for as long as the core runs (it lives in the KCB), and
    /// the stack tops must be the ends of valid, mapped, otherwise unused stacks.
    pub unsafe fn load(&mut self, kernel_stack_top: u64, double_fault_top: u64, nmi_top: u64) {
        self.tss.rsp[0] = kernel_stack_top;
        self.tss.ist[(IST_DOUBLE_FAULT - 1) as usize] = double_fault_top;
        self.tss.ist[(IST_NMI - 1) as usize] = nmi_top;
        let base = &self.tss as *const Tss as u64;
        let limit = (core::mem::size_of::<Tss>() - 1) as u64;
        self.gdt[6] = (limit & 0xffff)
            | ((base & 0xff_ffff) << 16)
            | (0x89 << 40) // present, 64-bit available TSS
            | (((limit >> 16) & 0xf) << 48)
            | (((base >> 24) & 0xff) << 56);
        self.gdt[7] = base >> 32;
        let gdtr = DescriptorPointer {
            limit: (core::mem::size_of_val(&self.gdt) - 1) as u16,
            base: self.gdt.as_ptr() as u64,
        };
        // SAFETY: the GDT is valid and, per the caller, stays in place; the far return reloads CS
        // with the kernel code selector of this same GDT, and the data selectors are valid.
        unsafe {
            asm!(
                "lgdt [{gdtr}]",
                "push {cs}",
                "lea {tmp}, [rip + 2f]",
                "push {tmp}",
                "retfq",
                "2:",
                "mov ds, {ds:e}",
                "mov es, {ds:e}",
                "mov ss, {ds:e}",
                "ltr {tss:x}",
                gdtr = in(reg) &gdtr,
                cs = in(reg) KERNEL_CS as u64,
                ds = in(reg) KERNEL_DS as u32,
                tss = in(reg) TSS_SELECTOR,
                tmp = out(reg) _,
            );
        }
    }
}

impl CpuTables {
    /// Sets the stack the CPU loads on an interrupt from user mode.
    pub fn set_rsp0(&mut self, top: u64) {
        self.tss.rsp[0] = top;
    }
}

/// Operand of `lgdt`/`lidt`.
#[repr(C, packed)]
pub struct DescriptorPointer {
    /// Size of the table in bytes, minus one.
    pub limit: u16,
    /// Linear address of the table.
    pub base: u64,
}
