//! The message as C lays it out (`usr/reef_msg.h`). The C allocator and the panic handler are
//! `usr/cabi`'s.

use msg::{Message, PAYLOAD};

/// `struct reef_msg` of `usr/reef_msg.h`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CMsg {
    /// The protocol's tag.
    pub tag: u16,
    /// Payload bytes used.
    pub len: u8,
    /// `REEF_MSG_FLAG_GRANT`.
    pub flags: u8,
    /// The payload.
    pub data: [u8; PAYLOAD],
}

impl CMsg {
    /// The message, or `None` if its length is past the payload or it is a grant (no Hare
    /// message is).
    pub fn to_message(self) -> Option<Message> {
        if self.flags != 0 {
            return None;
        }
        Message::new(self.tag, self.data.get(..usize::from(self.len))?).ok()
    }

    /// The C form of `m`.
    pub fn from_message(m: &Message) -> Self {
        let b = m.bytes();
        let mut data = [0; PAYLOAD];
        data[..b.len()].copy_from_slice(b);
        CMsg {
            tag: m.tag,
            len: b.len() as u8,
            flags: 0,
            data,
        }
    }
}
