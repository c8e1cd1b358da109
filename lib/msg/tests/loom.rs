//! Loom model checks of the channel: wrap-around, a full ring, the sleep and wake-up race in
//! both directions (no lost wake-up: loom reports a deadlock if one is lost), and closing.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p msg --release --test loom`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use msg::{wait_any, Channel, Doorbell, EventCount, Message, RecvError, SendError};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A futex stand-in: checking the word and sleeping are one step against a wake-up.
#[derive(Default)]
struct Bell {
    lock: Mutex<()>,
    cv: Condvar,
}

impl Doorbell for Bell {
    fn wait(&self, word: &AtomicU32, value: u32) {
        let g = self.lock.lock().unwrap();
        if word.load(Ordering::SeqCst) == value {
            drop(self.cv.wait(g).unwrap());
        }
    }
    fn wake(&self, _: &AtomicU32) {
        let _g = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}

struct Shared {
    ch: Channel<2>,
    bell: Bell,
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        ch: Channel::new(),
        bell: Bell::default(),
    })
}

fn msg(i: u64) -> Message {
    Message::from_words(1, &[i]).unwrap()
}

/// Three messages through a ring of two with blocking ends on both sides: the sender waits
/// for space at least once in some interleavings and the receiver sleeps in others; every
/// message arrives once, in order, and nobody sleeps forever.
#[test]
fn blocking_stream_wraps_around_without_lost_wakeups() {
    model(|| {
        let s = shared();
        let s2 = s.clone();
        let sender = thread::spawn(move || {
            let mut tx = s2.ch.sender(&s2.bell);
            for i in 0..3 {
                tx.send(&msg(i)).unwrap();
            }
        });
        let mut rx = s.ch.receiver(&s.bell);
        for i in 0..3 {
            assert_eq!(rx.recv().unwrap().word(0), i);
        }
        sender.join().unwrap();
        assert_eq!(rx.try_recv(), Ok(None));
    });
}

/// A non-blocking sender against a ring of two: it sees Full only when two messages are
/// really unread, and the receiver gets exactly the messages that were accepted.
#[test]
fn full_is_reported_only_when_full() {
    model(|| {
        let s = shared();
        let s2 = s.clone();
        let sender = thread::spawn(move || {
            let mut tx = s2.ch.sender(&s2.bell);
            let mut sent = 0;
            for i in 0..3 {
                match tx.try_send(&msg(i)) {
                    Ok(()) => sent += 1,
                    Err(SendError::Full) => break,
                    Err(e) => panic!("{e:?}"),
                }
            }
            s2.ch.close_sender(&s2.bell);
            sent
        });
        let mut rx = s.ch.receiver(&s.bell);
        let mut got = 0;
        while let Ok(m) = rx.recv() {
            assert_eq!(m.word(0), got);
            got += 1;
        }
        let sent = sender.join().unwrap();
        assert!(sent >= 2, "a ring of two refused its second message");
        assert_eq!(got, sent);
    });
}

/// A receiver that goes away while the sender waits for space wakes it with Closed.
#[test]
fn closing_the_receiver_wakes_a_waiting_sender() {
    model(|| {
        let s = shared();
        let s2 = s.clone();
        let sender = thread::spawn(move || {
            let mut tx = s2.ch.sender(&s2.bell);
            for i in 0.. {
                if let Err(e) = tx.send(&msg(i)) {
                    return e;
                }
            }
            unreachable!()
        });
        s.ch.close_receiver(&s.bell);
        assert_eq!(sender.join().unwrap(), SendError::Closed);
    });
}

/// A sender that closes right after its last message: the receiver gets the message, then
/// Closed, never a hang.
#[test]
fn closing_the_sender_after_a_message_loses_nothing() {
    model(|| {
        let s = shared();
        let s2 = s.clone();
        let sender = thread::spawn(move || {
            s2.ch.sender(&s2.bell).try_send(&msg(7)).unwrap();
            s2.ch.close_sender(&s2.bell);
        });
        let mut rx = s.ch.receiver(&s.bell);
        assert_eq!(rx.recv().unwrap().word(0), 7);
        assert_eq!(rx.recv(), Err(RecvError::Closed));
        sender.join().unwrap();
    });
}

/// The doorbell of a channel into a server with many channels: it notifies the server's
/// eventcount, whatever the channel.
struct ServerBell {
    events: Arc<EventCount>,
    bell: Arc<Bell>,
}

impl Doorbell for ServerBell {
    fn wait(&self, word: &AtomicU32, value: u32) {
        self.bell.wait(word, value)
    }
    fn wake(&self, _: &AtomicU32) {
        self.events.notify(&*self.bell)
    }
}

/// Two clients, each on its own channel, send one message each to a server that sleeps on
/// one eventcount: the server gets both, and never sleeps through one (a lost wake-up is a
/// deadlock loom reports).
#[test]
fn a_server_sleeping_on_many_channels_misses_no_message() {
    model(|| {
        let chans = Arc::new([Channel::<2>::new(), Channel::<2>::new()]);
        let events = Arc::new(EventCount::new());
        let bell = Arc::new(Bell::default());
        let clients: Vec<_> = (0..2)
            .map(|i| {
                let (chans, events, bell) = (chans.clone(), events.clone(), bell.clone());
                thread::spawn(move || {
                    let sb = ServerBell { events, bell };
                    chans[i].sender(&sb).try_send(&msg(i as u64)).unwrap();
                })
            })
            .collect();
        let sb = ServerBell {
            events: events.clone(),
            bell: bell.clone(),
        };
        let mut rx: Vec<_> = chans.iter().map(|c| c.receiver(&sb)).collect();
        let mut got = [false; 2];
        while !(got[0] && got[1]) {
            for (i, r) in rx.iter_mut().enumerate() {
                if let Some(m) = r.try_recv().unwrap() {
                    assert_eq!(m.word(0), i as u64);
                    got[i] = true;
                }
            }
            if !(got[0] && got[1]) {
                wait_any(&[&chans[0], &chans[1]], &events, &*bell);
            }
        }
        for c in clients {
            c.join().unwrap();
        }
    });
}
