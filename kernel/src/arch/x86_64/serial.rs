//! 16550 UART on COM1 (I/O port 0x3F8): the kernel's console and log.

use super::cpu::{inb, outb};

/// I/O port base of COM1.
const COM1: u16 = 0x3F8;

/// The COM1 serial port. Output is polled; input is read without blocking.
pub struct Serial {
    /// Keeps the port from being made other than by [`Serial::init`].
    _private: (),
}

impl Serial {
    /// Programs COM1 for 115200 baud, 8N1, FIFOs on, and returns the port.
    pub fn init() -> Serial {
        // SAFETY: COM1 is the standard PC UART at a fixed port; these writes only configure it.
        unsafe {
            outb(COM1 + 1, 0x00); // no interrupts
            outb(COM1 + 3, 0x80); // DLAB on
            outb(COM1, 0x01); // divisor 1: 115200 baud
            outb(COM1 + 1, 0x00);
            outb(COM1 + 3, 0x03); // 8 bits, no parity, one stop bit, DLAB off
            outb(COM1 + 2, 0xC7); // FIFOs on, cleared, 14-byte threshold
            outb(COM1 + 4, 0x0B); // DTR, RTS, OUT2
        }
        Serial { _private: () }
    }

    /// Writes one byte, waiting until the transmitter has room.
    pub fn write_byte(&mut self, byte: u8) {
        // SAFETY: reading the line status register and writing the data register of COM1 has no
        // effect beyond transmitting the byte.
        unsafe {
            while inb(COM1 + 5) & 0x20 == 0 {
                core::hint::spin_loop();
            }
            outb(COM1, byte);
        }
    }
}

impl Serial {
    /// Takes one received byte, if one is waiting.
    pub fn read_byte(&mut self) -> Option<u8> {
        // SAFETY: reading COM1's line status and data registers only consumes received input.
        unsafe { (inb(COM1 + 5) & 1 != 0).then(|| inb(COM1)) }
    }
}

impl core::fmt::Write for Serial {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.write_byte(b'\r');
            }
            self.write_byte(b);
        }
        Ok(())
    }
}
