//! Host tests of the channel: contents, full and closed rings, the layout the C header mirrors,
//! a model-based property test, and a stream of messages between two threads through a small
//! ring (both ends sleep and wake often).
#![cfg(not(loom))]

use msg::{
    wait_any, Channel, Connection, Doorbell, EventCount, Grant, Message, PageChannel, RecvError,
    SendError, TooLong, PAGE_SLOTS, PAYLOAD,
};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// A futex stand-in: a mutex and condition variable, and counts of waits and wake-ups.
#[derive(Default)]
struct Bell {
    lock: Mutex<()>,
    cv: Condvar,
    waits: AtomicUsize,
    wakes: AtomicUsize,
}

impl Doorbell for Bell {
    fn wait(&self, word: &AtomicU32, value: u32) {
        let g = self.lock.lock().unwrap();
        if word.load(Ordering::SeqCst) == value {
            self.waits.fetch_add(1, Ordering::Relaxed);
            drop(self.cv.wait(g).unwrap());
        }
    }
    fn wake(&self, _: &AtomicU32) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        let _g = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}

fn msg(tag: u16, i: u64) -> Message {
    Message::from_words(tag, &[i, !i]).unwrap()
}

#[test]
fn messages_arrive_whole_and_in_order() {
    let ch = Channel::<4>::new();
    let bell = Bell::default();
    let mut tx = ch.sender(&bell);
    let mut rx = ch.receiver(&bell);
    assert_eq!(rx.try_recv(), Ok(None));
    let long = Message::new(7, &[0xab; PAYLOAD]).unwrap();
    let empty = Message::new(8, &[]).unwrap();
    tx.try_send(&long).unwrap();
    tx.try_send(&empty).unwrap();
    assert!(ch.ready());
    assert_eq!(ch.queued(), 2);
    let got = rx.try_recv().unwrap().unwrap();
    assert_eq!((got.tag, got.bytes()), (7, &[0xab; PAYLOAD][..]));
    let got = rx.try_recv().unwrap().unwrap();
    assert_eq!((got.tag, got.bytes().len()), (8, 0));
    assert_eq!(rx.try_recv(), Ok(None));
    assert!(!ch.ready());
    assert_eq!((ch.queued(), ch.sent()), (0, 2));
    // Nobody slept, so nobody was woken.
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 0);
}

#[test]
fn a_full_ring_is_reported_and_frees_up_after_a_receive() {
    let ch = Channel::<3>::new();
    let bell = Bell::default();
    let mut tx = ch.sender(&bell);
    let mut rx = ch.receiver(&bell);
    for round in 0..5u64 {
        for i in 0..3 {
            tx.try_send(&msg(1, round * 3 + i)).unwrap();
        }
        assert_eq!(tx.try_send(&msg(1, 99)), Err(SendError::Full));
        for i in 0..3 {
            assert_eq!(rx.try_recv().unwrap().unwrap().word(0), round * 3 + i);
        }
        assert_eq!(rx.try_recv(), Ok(None));
    }
}

#[test]
fn a_watched_receiver_is_rung_and_room_is_reported() {
    let ch = Channel::<2>::new();
    let bell = Bell::default();
    let mut tx = ch.sender(&bell);
    let mut rx = ch.receiver(&bell);
    assert!(ch.has_room());
    // `watch` finds nothing, marks the receiver asleep: the next message rings once.
    assert!(!ch.watch());
    tx.try_send(&msg(1, 1)).unwrap();
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 1);
    assert!(ch.watch());
    tx.try_send(&msg(1, 2)).unwrap();
    assert!(!ch.has_room());
    // The second message found the mark already taken by the first: no second ring.
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 1);
    rx.try_recv().unwrap().unwrap();
    assert!(ch.has_room());
    // A closed sender is worth waking for too.
    rx.try_recv().unwrap().unwrap();
    assert!(!ch.watch());
    ch.close_sender(&bell);
    assert!(ch.watch());
}

#[test]
fn payloads_and_grants() {
    assert_eq!(
        Message::new(0, &[0; PAYLOAD + 1]),
        Err(TooLong(PAYLOAD + 1))
    );
    assert_eq!(Message::from_words(0, &[0; 8]), Err(TooLong(64)));
    let m = Message::from_words(3, &[1, 2]).unwrap();
    assert_eq!((m.word(0), m.word(1), m.word(2), m.word(99)), (1, 2, 0, 0));
    assert!(!m.is_grant());
    assert_eq!(Grant::from_message(&m), None);
    let g = Grant {
        id: 42,
        offset: 4096,
        len: 1 << 20,
    };
    let ch = Channel::<2>::new();
    let bell = Bell::default();
    ch.sender(&bell).try_send(&g.to_message(9)).unwrap();
    let got = ch.receiver(&bell).try_recv().unwrap().unwrap();
    assert!(got.is_grant());
    assert_eq!((got.tag, Grant::from_message(&got)), (9, Some(g)));
}

#[test]
fn closing_either_end() {
    let bell = Bell::default();
    let ch = Channel::<2>::new();
    ch.sender(&bell).try_send(&msg(1, 1)).unwrap();
    ch.close_sender(&bell);
    let mut rx = ch.receiver(&bell);
    // What was sent before the close is still delivered, then the end is reported.
    assert_eq!(rx.recv().unwrap().word(0), 1);
    assert_eq!(rx.recv(), Err(RecvError::Closed));
    assert_eq!(rx.try_recv(), Err(RecvError::Closed));

    let ch = Channel::<2>::new();
    ch.close_receiver(&bell);
    let mut tx = ch.sender(&bell);
    assert_eq!(tx.try_send(&msg(1, 1)), Err(SendError::Closed));
    assert_eq!(tx.send(&msg(1, 1)), Err(SendError::Closed));
}

#[test]
fn a_new_end_takes_up_where_the_last_stopped() {
    let bell = Bell::default();
    let ch = Channel::<4>::new();
    for i in 0..3 {
        ch.sender(&bell).try_send(&msg(1, i)).unwrap();
    }
    assert_eq!(ch.receiver(&bell).try_recv().unwrap().unwrap().word(0), 0);
    assert_eq!(ch.receiver(&bell).try_recv().unwrap().unwrap().word(0), 1);
    assert_eq!(ch.queued(), 1);
}

/// The words of a page channel, as the C header `usr/include/reef_msg.h` sees them.
fn words(ch: &PageChannel) -> &[AtomicU64; 512] {
    // SAFETY: a PageChannel is 4096 bytes of atomics (checked by the crate's layout
    // assertions), 64-byte aligned; viewing them as 512 AtomicU64 only reads and writes them
    // atomically, as the channel's own code does.
    unsafe { &*(ch as *const PageChannel).cast::<[AtomicU64; 512]>() }
}

#[test]
fn layout_matches_the_c_header() {
    let bell = Bell::default();
    let ch = PageChannel::new();
    assert_eq!(std::mem::size_of::<PageChannel>(), 4096);
    assert_eq!(std::mem::align_of::<PageChannel>(), 64);
    assert_eq!(std::mem::size_of::<Connection<PAGE_SLOTS>>(), 8192);
    let w = words(&ch);
    // A sender written against the layout: payload words 1-7 of the slot's line, then the
    // header (word 0: sequence 1, tag 0x1234, length 16, no flags), then the tail (word 8).
    let slot = 16; // slots start at byte 128
    w[slot + 1].store(0x1111, Ordering::Relaxed);
    w[slot + 2].store(0x2222, Ordering::Relaxed);
    w[slot].store(1 | 0x1234 << 32 | 16 << 48, Ordering::Release);
    w[8].store(1, Ordering::Relaxed);
    assert_eq!(ch.queued(), 1);
    let got = ch.receiver(&bell).try_recv().unwrap().unwrap();
    assert_eq!(
        (got.tag, got.word(0), got.word(1)),
        (0x1234, 0x1111, 0x2222)
    );
    // The receiver's head is word 0.
    assert_eq!(w[0].load(Ordering::Relaxed), 1);
    // A hostile sender's header: a length over 56, and an unknown flag.
    w[slot + 8].store(2 | 57 << 48, Ordering::Release);
    w[slot + 16].store(3 | 0x80 << 56, Ordering::Release);
    let mut rx = ch.receiver(&bell);
    assert_eq!(rx.try_recv(), Err(RecvError::Corrupt));
    assert_eq!(rx.try_recv(), Err(RecvError::Corrupt));
    assert_eq!(rx.try_recv(), Ok(None));
    // The closed bits are word 9's high half; the sleeping words the low halves of 1 and 9.
    ch.close_receiver(&bell);
    assert_eq!(w[9].load(Ordering::Relaxed) >> 32, 1);
    ch.close_sender(&bell);
    assert_eq!(w[9].load(Ordering::Relaxed) >> 32, 3);
}

#[test]
fn many_messages_between_two_threads() {
    const COUNT: u64 = 300_000;
    let ch = Channel::<8>::new();
    let bell = Bell::default();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut tx = ch.sender(&bell);
            for i in 0..COUNT {
                tx.send(&msg((i % 65536) as u16, i)).unwrap();
            }
            ch.close_sender(&bell);
        });
        let mut rx = ch.receiver(&bell);
        let mut next = 0;
        loop {
            match rx.recv() {
                Ok(m) => {
                    assert_eq!(
                        (m.tag, m.word(0), m.word(1)),
                        ((next % 65536) as u16, next, !next)
                    );
                    next += 1;
                }
                Err(RecvError::Closed) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(next, COUNT);
    });
}

/// The doorbell of a channel into a server with many channels: notifies its eventcount.
struct ServerBell<'a> {
    events: &'a EventCount,
    bell: &'a Bell,
}

impl Doorbell for ServerBell<'_> {
    fn wait(&self, word: &AtomicU32, value: u32) {
        self.bell.wait(word, value)
    }
    fn wake(&self, _: &AtomicU32) {
        self.events.notify(self.bell)
    }
}

#[test]
fn a_server_takes_streams_from_many_clients() {
    const CLIENTS: usize = 3;
    const EACH: u64 = 50_000;
    let chans: Vec<Channel<4>> = (0..CLIENTS).map(|_| Channel::new()).collect();
    let events = EventCount::new();
    let bell = Bell::default();
    let sb = ServerBell {
        events: &events,
        bell: &bell,
    };
    std::thread::scope(|s| {
        for (i, ch) in chans.iter().enumerate() {
            let sb = &sb;
            s.spawn(move || {
                let mut tx = ch.sender(sb);
                for n in 0..EACH {
                    tx.send(&msg(i as u16, n)).unwrap();
                }
                ch.close_sender(sb);
            });
        }
        let mut rx: Vec<_> = chans.iter().map(|c| c.receiver(&sb)).collect();
        let mut next = [0u64; CLIENTS];
        let mut open = CLIENTS;
        let refs: Vec<&Channel<4>> = chans.iter().collect();
        while open > 0 {
            for (i, r) in rx.iter_mut().enumerate() {
                loop {
                    match r.try_recv() {
                        Ok(Some(m)) => {
                            assert_eq!((m.tag, m.word(0)), (i as u16, next[i]));
                            next[i] += 1;
                        }
                        Ok(None) => break,
                        Err(RecvError::Closed) => {
                            if next[i] != u64::MAX {
                                assert_eq!(next[i], EACH);
                                next[i] = u64::MAX;
                                open -= 1;
                            }
                            break;
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
            let live: Vec<&Channel<4>> = refs
                .iter()
                .zip(&next)
                .filter(|(_, n)| **n != u64::MAX)
                .map(|(c, _)| *c)
                .collect();
            if !live.is_empty() {
                wait_any(&live, &events, &bell);
            }
        }
    });
}

#[derive(Clone, Debug)]
enum Op {
    Send(u16, Vec<u8>),
    Recv,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            any::<u16>(),
            proptest::collection::vec(any::<u8>(), 0..=PAYLOAD)
        )
            .prop_map(|(t, b)| Op::Send(t, b)),
        Just(Op::Recv),
    ]
}

proptest! {
    /// Any interleaving of sends and receives on one thread behaves as a bounded FIFO queue.
    #[test]
    fn behaves_as_a_bounded_queue(ops in proptest::collection::vec(op(), 0..300)) {
        let ch = Channel::<5>::new();
        let bell = Bell::default();
        let mut tx = ch.sender(&bell);
        let mut rx = ch.receiver(&bell);
        let mut model: VecDeque<(u16, Vec<u8>)> = VecDeque::new();
        for op in ops {
            match op {
                Op::Send(tag, bytes) => {
                    let r = tx.try_send(&Message::new(tag, &bytes).unwrap());
                    if model.len() == 5 {
                        prop_assert_eq!(r, Err(SendError::Full));
                    } else {
                        prop_assert_eq!(r, Ok(()));
                        model.push_back((tag, bytes));
                    }
                }
                Op::Recv => {
                    let got = rx.try_recv().unwrap().map(|m| (m.tag, m.bytes().to_vec()));
                    prop_assert_eq!(got, model.pop_front());
                }
            }
            prop_assert_eq!(ch.queued(), model.len() as u64);
            prop_assert_eq!(ch.ready(), !model.is_empty());
        }
    }
}
