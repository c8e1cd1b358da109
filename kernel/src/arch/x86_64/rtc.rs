//! The CMOS real-time clock, read once at boot for the wall-clock time.

use super::cpu::{inb, outb};

/// Reads CMOS register `reg`.
fn read_register(reg: u8) -> u8 {
    // SAFETY: ports 0x70/0x71 are the PC's CMOS index and data ports; selecting a clock
    // register (with NMI left enabled) and reading it has no other effect.
    unsafe {
        outb(0x70, reg);
        inb(0x71)
    }
}

/// Whether the RTC is updating its registers (Status Register A, update-in-progress bit).
fn updating() -> bool {
    read_register(0x0A) & 0x80 != 0
}

/// The date and time the RTC holds (UTC on QEMU): (year, month, day, hour, minute, second).
pub fn read() -> (u32, u32, u32, u32, u32, u32) {
    let sample = || {
        while updating() {
            core::hint::spin_loop();
        }
        [0x00, 0x02, 0x04, 0x07, 0x08, 0x09, 0x32].map(read_register)
    };
    let mut a = sample();
    loop {
        let b = sample();
        if a == b {
            break;
        }
        a = b;
    }
    let status_b = read_register(0x0B);
    let bcd = status_b & 0x04 == 0;
    let conv = |v: u8| if bcd { (v & 0x0f) + (v >> 4) * 10 } else { v } as u32;
    let [sec, min, hour, day, month, year, century] = a;
    let mut hour_v = conv(hour & 0x7f);
    if status_b & 0x02 == 0 && hour & 0x80 != 0 {
        hour_v = (hour_v % 12) + 12;
    }
    let century = match conv(century) {
        c @ 19..=21 => c,
        _ => 20,
    };
    (
        century * 100 + conv(year),
        conv(month),
        conv(day),
        hour_v,
        conv(min),
        conv(sec),
    )
}
