//! A reference to shared frames, sent through a channel instead of the data.

use crate::message::{Message, FLAG_GRANT};

/// Frames that the sender shared with the receiver: the kernel's grant id (which the receiver
/// presents to map them; the kernel refuses an id that was not granted to it), and the byte
/// range of the data in them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The kernel's id of the grant.
    pub id: u64,
    /// Where the data starts in the granted frames.
    pub offset: u64,
    /// Length of the data.
    pub len: u64,
}

impl Grant {
    /// The message that carries this grant, with `tag`.
    pub fn to_message(&self, tag: u16) -> Message {
        let mut m =
            Message::from_words(tag, &[self.id, self.offset, self.len]).expect("3 words fit");
        m.flags |= FLAG_GRANT;
        m
    }

    /// The grant that `m` carries, if it carries one. The receiver checks the range against
    /// what the kernel maps for `id`: the sender chose it.
    pub fn from_message(m: &Message) -> Option<Grant> {
        (m.is_grant() && m.len == 24).then(|| Grant {
            id: m.word(0),
            offset: m.word(1),
            len: m.word(2),
        })
    }
}
