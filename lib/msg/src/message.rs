//! One message: a tag, flags and up to [`PAYLOAD`] bytes.

/// Payload bytes in one slot (a 64-byte line less the 8-byte header word).
pub const PAYLOAD: usize = 56;

/// Flag: the payload is a [`crate::Grant`].
pub(crate) const FLAG_GRANT: u8 = 1;
/// Flags a sender may set.
pub(crate) const FLAGS_KNOWN: u8 = FLAG_GRANT;

/// A message: a tag for the protocol above (an operation, a reply code), flags, and up to
/// [`PAYLOAD`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The protocol's tag.
    pub tag: u16,
    pub(crate) flags: u8,
    pub(crate) len: u8,
    pub(crate) data: [u8; PAYLOAD],
}

/// A payload longer than [`PAYLOAD`] bytes: send it as a [`crate::Grant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong(pub usize);

impl Message {
    /// A message with `tag` and the bytes of `payload`.
    pub fn new(tag: u16, payload: &[u8]) -> Result<Self, TooLong> {
        if payload.len() > PAYLOAD {
            return Err(TooLong(payload.len()));
        }
        let mut data = [0; PAYLOAD];
        data[..payload.len()].copy_from_slice(payload);
        Ok(Message {
            tag,
            flags: 0,
            len: payload.len() as u8,
            data,
        })
    }

    /// A message with `tag` and the 64-bit `words` (at most 7), little-endian.
    pub fn from_words(tag: u16, words: &[u64]) -> Result<Self, TooLong> {
        let mut bytes = [0u8; PAYLOAD];
        let len = words.len() * 8;
        if len > PAYLOAD {
            return Err(TooLong(len));
        }
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Message::new(tag, &bytes[..len])
    }

    /// The payload.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    /// The `i`th 64-bit little-endian word of the payload (zero past its end).
    pub fn word(&self, i: usize) -> u64 {
        match self.data.get(i * 8..i * 8 + 8) {
            Some(b) if i * 8 < self.len as usize => {
                u64::from_le_bytes(b.try_into().expect("8 bytes"))
            }
            _ => 0,
        }
    }

    /// Whether the payload is a [`crate::Grant`] (see [`crate::Grant::from_message`]).
    pub fn is_grant(&self) -> bool {
        self.flags & FLAG_GRANT != 0
    }

    /// The header word for sequence number `seq`: `seq` in bits 0-31, the tag in 32-47, the
    /// length in 48-55, the flags in 56-63.
    pub(crate) fn header(&self, seq: u32) -> u64 {
        u64::from(seq)
            | u64::from(self.tag) << 32
            | u64::from(self.len) << 48
            | u64::from(self.flags) << 56
    }
}

/// The fields of a header word: sequence number, tag, length, flags.
pub(crate) fn split_header(h: u64) -> (u32, u16, u8, u8) {
    (h as u32, (h >> 32) as u16, (h >> 48) as u8, (h >> 56) as u8)
}
