//! The server runtime with a two-tier fleet: a front server whose every transaction needs two
//! answers from a back server, so each waits twice in a continuation.
#![cfg(not(loom))]

use msg::server::{Bells as ServerBells, Client, Server, Service, Step, Stop};
use msg::{Channel, Doorbell, EventCount, Message};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

/// A futex emulation: a waiter checks its word once, then sleeps until a wake-up for that
/// word's address (not any change of the word, not a wake-up of another word), so a doorbell
/// that wakes the wrong word leaves its waiter asleep and the test hangs.
#[derive(Default)]
struct Bell {
    woken: Mutex<HashSet<usize>>,
    cv: Condvar,
}

impl Doorbell for Bell {
    fn wait(&self, word: &AtomicU32, value: u32) {
        let addr = word as *const AtomicU32 as usize;
        let mut woken = self.woken.lock().unwrap();
        if word.load(Ordering::SeqCst) != value {
            return;
        }
        woken.remove(&addr);
        while !woken.remove(&addr) {
            woken = self.cv.wait(woken).unwrap();
        }
    }
    fn wake(&self, word: &AtomicU32) {
        self.woken
            .lock()
            .unwrap()
            .insert(word as *const AtomicU32 as usize);
        self.cv.notify_all();
    }
}

/// Wakes the sleeper of a channel directly, or, for a channel into a server, through the
/// server's eventcount.
struct Bells<'a> {
    bell: &'a Bell,
    events: Option<&'a EventCount>,
}

impl Doorbell for Bells<'_> {
    fn wait(&self, word: &AtomicU32, value: u32) {
        self.bell.wait(word, value)
    }
    fn wake(&self, word: &AtomicU32) {
        match self.events {
            Some(e) => e.notify(self.bell),
            None => self.bell.wake(word),
        }
    }
}

/// The back tier: squares.
struct Square;

impl Service for Square {
    type Continuation = ();
    fn request(&mut self, _: usize, r: &Message) -> Step<()> {
        let k = r.word(0);
        Step::Reply(Message::from_words(0, &[k * k]).unwrap())
    }
    fn resume(&mut self, _: (), _: &Message) -> Step<()> {
        unreachable!("Square calls nobody")
    }
}

/// The front tier: k -> k^2 + (k+1)^2, asking the back tier twice.
struct SumOfSquares;

enum Then {
    /// Waiting for k^2.
    First(u64),
    /// Has k^2, waiting for (k+1)^2.
    Second(u64),
}

impl Service for SumOfSquares {
    type Continuation = Then;
    fn request(&mut self, _: usize, r: &Message) -> Step<Then> {
        let k = r.word(0);
        Step::Call {
            peer: 0,
            request: Message::from_words(0, &[k]).unwrap(),
            then: Then::First(k),
        }
    }
    fn resume(&mut self, then: Then, answer: &Message) -> Step<Then> {
        match then {
            Then::First(k) => Step::Call {
                peer: 0,
                request: Message::from_words(0, &[k + 1]).unwrap(),
                then: Then::Second(answer.word(0)),
            },
            Then::Second(first) => {
                Step::Reply(Message::from_words(0, &[first + answer.word(0)]).unwrap())
            }
        }
    }
}

#[test]
fn two_tier_fleet_with_continuations() {
    const CLIENTS: usize = 3;
    const CALLS: u64 = 3000;
    // Client i: request channel 2i, reply channel 2i+1; front to back: calls, answers.
    let client_chans: Vec<Channel<2>> = (0..2 * CLIENTS).map(|_| Channel::new()).collect();
    // Rings of two: the front's calls and the back's answers fill up, so senders wait.
    let (calls, answers) = (Channel::<2>::new(), Channel::<2>::new());
    let bell = Bell::default();
    let (front_events, back_events) = (EventCount::new(), EventCount::new());
    let plain = Bells {
        bell: &bell,
        events: None,
    };
    let to_front = Bells {
        bell: &bell,
        events: Some(&front_events),
    };
    let to_back = Bells {
        bell: &bell,
        events: Some(&back_events),
    };
    let pairs: Vec<(&Channel<2>, &Channel<2>)> = (0..CLIENTS)
        .map(|i| (&client_chans[2 * i], &client_chans[2 * i + 1]))
        .collect();
    std::thread::scope(|s| {
        let back = s.spawn(|| {
            // The back server's replies go to the front server, which sleeps on its
            // eventcount: its senders notify that.
            let bells = ServerBells {
                own: &plain,
                to_clients: &to_front,
                to_peers: &plain,
            };
            let mut server = Server::new(Square, &[(&calls, &answers)], &[], &back_events, bells);
            let stop = server.run();
            answers.close_sender(&to_front);
            (stop, server.completed)
        });
        let front = s.spawn(|| {
            // Its replies go to clients that sleep on their own reply channel.
            let bells = ServerBells {
                own: &plain,
                to_clients: &plain,
                to_peers: &to_back,
            };
            let mut server = Server::new(
                SumOfSquares,
                &pairs,
                &[(&calls, &answers)],
                &front_events,
                bells,
            );
            let stop = server.run();
            calls.close_sender(&to_back);
            (stop, server.completed, server.resumed)
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let (to, from) = pairs[i];
                let (to_front, plain) = (&to_front, &plain);
                s.spawn(move || {
                    let mut c = Client::new(to, to_front, from, plain);
                    for n in 0..CALLS {
                        let k = n * CLIENTS as u64 + i as u64;
                        let r = c.call(Message::from_words(1, &[k]).unwrap()).unwrap();
                        assert_eq!(r.word(0), k * k + (k + 1) * (k + 1));
                    }
                    to.close_sender(to_front);
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        let (stop, completed, resumed) = front.join().unwrap();
        assert_eq!(stop, Stop::ClientsGone);
        assert_eq!(completed, CLIENTS as u64 * CALLS);
        assert_eq!(resumed, 2 * CLIENTS as u64 * CALLS);
        let (stop, completed) = back.join().unwrap();
        assert_eq!(stop, Stop::ClientsGone);
        assert_eq!(completed, 2 * CLIENTS as u64 * CALLS);
    });
}
