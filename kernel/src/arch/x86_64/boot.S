/*
 * Reef boot path, from the multiboot loader to Rust.
 *
 * QEMU's multiboot loader enters `_start32` in 32-bit protected mode, paging off, with
 * EAX = 0x2BADB002 and EBX = physical address of the multiboot information. We record the TSC
 * (the "first kernel instruction" the boot summary measures from), enable PAE, SSE, long mode and
 * paging with static boot page tables (identity map and higher-half map of the first 1 GiB),
 * then jump to the higher half and call `kmain_bsp(mbi_phys, magic, boot_tsc)`.
 *
 * Application processors enter through `ap_trampoline` (copied to AP_TRAMPOLINE_PHYS below 1 MiB
 * by the BootDriver), which goes real mode -> protected mode -> long mode with the same boot page
 * tables and jumps to the entry point, stack and argument the BootDriver wrote into its parameter
 * block.
 */

    .set MULTIBOOT_MAGIC, 0x1BADB002
    .set MULTIBOOT_FLAGS, 0x00010002      /* bit 1: memory map; bit 16: a.out kludge addresses */
    .set KERNEL_BASE, 0xffffffff80000000
    .set CR4_BITS, 0x6a0                  /* PAE | PGE | OSFXSR | OSXMMEXCPT */
    .set EFER_MSR, 0xC0000080
    .set EFER_BITS, 0x900                 /* LME | NXE */
    .set CR0_BITS, 0x80010023             /* PG | WP | NE | MP | PE */

/* In 64-bit mode: flat kernel data segment (selector 0x10) in DS/ES/SS, null FS/GS. */
.macro load_data_segments
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
.endm

/* From 32-bit protected mode with CR3 loaded: PAE and SSE on, long mode and NX enabled, paging
 * on. The next far jump to a 64-bit code segment enters long mode. */
.macro enter_long_mode
    mov %cr4, %eax
    or $CR4_BITS, %eax
    mov %eax, %cr4
    mov $EFER_MSR, %ecx
    rdmsr
    or $EFER_BITS, %eax
    wrmsr
    mov %cr0, %eax
    and $~0x4, %eax                       /* clear EM: SSE instructions must not trap */
    or $CR0_BITS, %eax
    mov %eax, %cr0
.endm

    .section .multiboot, "a"
    .balign 4
multiboot_header:
    .long MULTIBOOT_MAGIC
    .long MULTIBOOT_FLAGS
    .long -(MULTIBOOT_MAGIC + MULTIBOOT_FLAGS)
    .long multiboot_header                /* header_addr */
    .long __image_start_phys              /* load_addr */
    .long __load_end_phys                 /* load_end_addr */
    .long __image_end_phys                /* bss_end_addr */
    .long _start32                        /* entry_addr */

    .section .boot.text, "ax"
    .code32
    .global _start32
_start32:
    cli
    mov %eax, %esi                        /* multiboot magic */
    mov %ebx, %edi                        /* multiboot info (physical) */
    rdtsc
    mov %eax, boot_tsc
    mov %edx, boot_tsc + 4

    mov $boot_pml4, %eax
    mov %eax, %cr3
    enter_long_mode

    lgdt boot_gdtr
    ljmp $0x08, $start64_low

    .code64
start64_low:
    load_data_segments
    mov %edi, %edi                        /* upper halves are undefined after the mode switch */
    mov %esi, %esi
    mov boot_tsc, %rdx
    movabs $start64_high, %rax
    jmp *%rax

    .section .boot.data, "aw"
    .balign 4096
    .global boot_pml4
boot_pml4:
    .quad boot_pdpt + 0x3
    .fill 510, 8, 0
    .quad boot_pdpt + 0x3
boot_pdpt:
    .quad boot_pd + 0x3
    .fill 509, 8, 0
    .quad boot_pd + 0x3
    .quad 0
boot_pd:
    .set boot_pd_index, 0
    .rept 512
    .quad (boot_pd_index << 21) | 0x83    /* present | writable | 2 MiB page */
    .set boot_pd_index, boot_pd_index + 1
    .endr
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff              /* 0x08: 64-bit kernel code */
    .quad 0x00cf92000000ffff              /* 0x10: kernel data */
boot_gdtr:
    .word boot_gdtr - boot_gdt - 1
    .long boot_gdt
boot_tsc:
    .quad 0

    .section .text.boot64, "ax"
start64_high:
    movabs $boot_stack_top, %rsp
    xor %ebp, %ebp
    call kmain_bsp
1:  cli
    hlt
    jmp 1b

    .section .bss.boot_stack, "aw", @nobits
    .balign 16
boot_stack:
    .skip 65536
boot_stack_top:

/*
 * Values that higher-half Rust code needs from the low boot section. Code in the kernel code
 * model cannot take the address of low symbols directly, so they are stored here.
 */
    .section .rodata.boot_symbols, "a"
    .balign 8
    .global BOOT_PML4_PHYS
BOOT_PML4_PHYS:
    .quad boot_pml4

/*
 * The AP trampoline. It is position dependent: the BootDriver copies it to AP_TRAMPOLINE_PHYS
 * (0x8000, SIPI vector 0x08) and fills the parameter block at AP_PARAMS_OFFSET before each start.
 */
    .set AP_TRAMPOLINE_PHYS, 0x8000
    .set AP_PARAMS_OFFSET, 0xf00
    .set AP_PARAMS, AP_TRAMPOLINE_PHYS + AP_PARAMS_OFFSET
    /* parameter block layout (must match `ApParams` in smp.rs) */
    .set P_BOOT_CR3, AP_PARAMS + 0x00     /* boot page tables (below 4 GiB) */
    .set P_KERNEL_CR3, AP_PARAMS + 0x08   /* the kernel's page tables */
    .set P_ENTRY, AP_PARAMS + 0x10        /* extern "C" fn(arg: u64) -> ! */
    .set P_STACK, AP_PARAMS + 0x18        /* top of the core's boot stack */
    .set P_ARG, AP_PARAMS + 0x20          /* argument (the core's KCB) */

    .section .rodata.ap_trampoline, "a"
    .global ap_trampoline_start
    .global ap_trampoline_end
    .code16
ap_trampoline_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl (AP_TRAMPOLINE_PHYS + ap_gdtr - ap_trampoline_start)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, $(AP_TRAMPOLINE_PHYS + ap_pm32 - ap_trampoline_start)
    .code32
ap_pm32:
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    mov P_BOOT_CR3, %eax
    mov %eax, %cr3
    enter_long_mode
    ljmp $0x18, $(AP_TRAMPOLINE_PHYS + ap_lm64 - ap_trampoline_start)
    .code64
ap_lm64:
    load_data_segments
    mov P_STACK, %rsp
    mov P_ARG, %rdi
    mov P_KERNEL_CR3, %rbx
    mov P_ENTRY, %rcx
    movabs $ap_high, %rax
    jmp *%rax
    .balign 8
ap_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff              /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff              /* 0x10: data */
    .quad 0x00af9a000000ffff              /* 0x18: 64-bit code */
ap_gdtr:
    .word ap_gdtr - ap_gdt - 1
    .long AP_TRAMPOLINE_PHYS + ap_gdt - ap_trampoline_start
ap_trampoline_end:

    .section .text.ap_high, "ax"
    .code64
/* Runs on the boot page tables, which map the kernel image; switches to the kernel's own tables
 * (which map the AP's stack) and calls the entry point. */
ap_high:
    mov %rbx, %cr3
    xor %ebp, %ebp
    call *%rcx
2:  cli
    hlt
    jmp 2b
