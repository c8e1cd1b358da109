//! The server structure of fos §3.2.3: one run loop over a server's inbound channels, answers
//! from other servers taken before new requests, transactions that run to completion without
//! locks, and a continuation stored when a transaction waits for another server, resumed when
//! the answer arrives.
//!
//! A [`Service`] is the server's sequential logic. [`Server`] owns the channels: from each
//! client a request channel in and a reply channel out, to each other server ("peer") a call
//! channel out and an answer channel in. Every message carries a transaction id in its last
//! payload word ([`TXN_WORD`]), so a service has [`SERVICE_PAYLOAD`] bytes: the runtime copies
//! a request's id into its reply, and gives each call to a peer an id of its own under which
//! it keeps the continuation. A peer is itself a `Server`, which answers with the call's id.

use crate::channel::{wait_any, Channel, Doorbell, EventCount, Receiver, RecvError, Sender};
use crate::message::{Message, PAYLOAD};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// The payload word that carries the transaction id.
pub const TXN_WORD: usize = PAYLOAD / 8 - 1;
/// Payload bytes left to a service.
pub const SERVICE_PAYLOAD: usize = TXN_WORD * 8;

/// Where a transaction goes next.
pub enum Step<K> {
    /// It is done: this is the reply to the client.
    Reply(Message),
    /// It waits for peer `peer`'s answer to `request`, and goes on with `then`.
    Call {
        /// Index of the peer.
        peer: usize,
        /// What to ask.
        request: Message,
        /// The continuation, resumed with the answer.
        then: K,
    },
}

/// A server's logic: transactions that run to completion, or stop at a call to a peer.
pub trait Service {
    /// What a transaction keeps while it waits for a peer.
    type Continuation;
    /// A new request from client `client`.
    fn request(&mut self, client: usize, request: &Message) -> Step<Self::Continuation>;
    /// The answer to a call, for the transaction that made it.
    fn resume(&mut self, then: Self::Continuation, answer: &Message) -> Step<Self::Continuation>;
}

/// Sets the transaction id of `m`.
fn with_txn(mut m: Message, txn: u64) -> Message {
    m.data[TXN_WORD * 8..].copy_from_slice(&txn.to_le_bytes());
    m.len = PAYLOAD as u8;
    m
}

/// The transaction id of `m`.
fn txn_of(m: &Message) -> u64 {
    m.word(TXN_WORD)
}

/// A waiting transaction: whose it is, and how it goes on.
struct Waiting<K> {
    client: usize,
    txn: u64,
    then: K,
}

/// What [`Server::run`] ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every client closed its request channel and no transaction waits.
    ClientsGone,
    /// A peer closed its answer channel while a transaction waited for it.
    PeerGone(usize),
    /// A client's reply channel or a peer's call channel was closed by its receiver.
    Closed,
    /// A channel held a corrupt slot.
    Corrupt,
}

/// How a server sleeps and wakes others: a sender's doorbell wakes the receiver of its
/// channel, which for a channel into a server means notifying that server's eventcount.
pub struct Bells<'a, D: Doorbell> {
    /// For the server's own sleeps, and for waking a sender that waits for space in one of
    /// its inbound channels.
    pub own: &'a D,
    /// For its replies: wakes a client sleeping on its reply channel.
    pub to_clients: &'a D,
    /// For its calls: notifies the peer's eventcount.
    pub to_peers: &'a D,
}

/// A server: a service and its channels (see the module documentation).
pub struct Server<'a, S: Service, const N: usize, D: Doorbell> {
    service: S,
    requests: Vec<Option<Receiver<'a, N, D>>>,
    replies: Vec<Sender<'a, N, D>>,
    calls: Vec<Sender<'a, N, D>>,
    answers: Vec<Option<Receiver<'a, N, D>>>,
    inbound: Vec<&'a Channel<N>>,
    events: &'a EventCount,
    bells: Bells<'a, D>,
    waiting: BTreeMap<u64, Waiting<S::Continuation>>,
    next_txn: u64,
    /// Transactions completed.
    pub completed: u64,
    /// Continuations resumed.
    pub resumed: u64,
}

impl<'a, S: Service, const N: usize, D: Doorbell> Server<'a, S, N, D> {
    /// A server for `service` with `clients` (request channel in, reply channel out) and
    /// `peers` (call channel out, answer channel in). `events` is the eventcount it sleeps on:
    /// every sender into it must notify it ([`EventCount::notify`]).
    pub fn new(
        service: S,
        clients: &[(&'a Channel<N>, &'a Channel<N>)],
        peers: &[(&'a Channel<N>, &'a Channel<N>)],
        events: &'a EventCount,
        bells: Bells<'a, D>,
    ) -> Self {
        Server {
            service,
            requests: clients
                .iter()
                .map(|c| Some(c.0.receiver(bells.own)))
                .collect(),
            replies: clients
                .iter()
                .map(|c| c.1.sender(bells.to_clients))
                .collect(),
            calls: peers.iter().map(|p| p.0.sender(bells.to_peers)).collect(),
            answers: peers
                .iter()
                .map(|p| Some(p.1.receiver(bells.own)))
                .collect(),
            inbound: clients
                .iter()
                .map(|c| c.0)
                .chain(peers.iter().map(|p| p.1))
                .collect(),
            events,
            bells,
            waiting: BTreeMap::new(),
            next_txn: 1,
            completed: 0,
            resumed: 0,
        }
    }

    /// The service.
    pub fn service(&self) -> &S {
        &self.service
    }

    /// Carries a transaction's step out: a reply to its client, or a call with its
    /// continuation kept.
    fn step(&mut self, client: usize, txn: u64, step: Step<S::Continuation>) -> Result<(), Stop> {
        match step {
            Step::Reply(m) => {
                self.completed += 1;
                self.replies[client]
                    .send(&with_txn(m, txn))
                    .map_err(|_| Stop::Closed)
            }
            Step::Call {
                peer,
                request,
                then,
            } => {
                let id = self.next_txn;
                self.next_txn += 1;
                self.waiting.insert(id, Waiting { client, txn, then });
                self.calls[peer]
                    .send(&with_txn(request, id))
                    .map_err(|_| Stop::Closed)
            }
        }
    }

    /// Takes every answer, then every request, that is waiting; returns how many it took.
    pub fn poll(&mut self) -> Result<usize, Stop> {
        let mut taken = 0;
        // Answers first (fos: responses before requests), so waiting transactions finish
        // before new ones start.
        for peer in 0..self.answers.len() {
            while let Some(rx) = self.answers[peer].as_mut() {
                match rx.try_recv() {
                    Ok(Some(a)) => {
                        taken += 1;
                        // An answer to no waiting transaction (a peer that misbehaves) is
                        // dropped.
                        if let Some(w) = self.waiting.remove(&txn_of(&a)) {
                            self.resumed += 1;
                            let step = self.service.resume(w.then, &a);
                            self.step(w.client, w.txn, step)?;
                        }
                    }
                    Ok(None) => break,
                    Err(RecvError::Closed) => {
                        self.answers[peer] = None;
                        if !self.waiting.is_empty() {
                            return Err(Stop::PeerGone(peer));
                        }
                    }
                    Err(RecvError::Corrupt) => return Err(Stop::Corrupt),
                }
            }
        }
        for client in 0..self.requests.len() {
            let Some(rx) = self.requests[client].as_mut() else {
                continue;
            };
            match rx.try_recv() {
                Ok(Some(r)) => {
                    taken += 1;
                    let step = self.service.request(client, &r);
                    self.step(client, txn_of(&r), step)?;
                }
                Ok(None) => {}
                Err(RecvError::Closed) => self.requests[client] = None,
                Err(RecvError::Corrupt) => return Err(Stop::Corrupt),
            }
        }
        Ok(taken)
    }

    /// Serves until every client is gone and no transaction waits (or a failure); sleeps on
    /// the eventcount when there is nothing to do.
    pub fn run(&mut self) -> Stop {
        loop {
            match self.poll() {
                Err(stop) => return stop,
                Ok(0) => {
                    if self.requests.iter().all(Option::is_none) && self.waiting.is_empty() {
                        return Stop::ClientsGone;
                    }
                    let live: Vec<&Channel<N>> = self
                        .inbound
                        .iter()
                        .zip(
                            self.requests
                                .iter()
                                .map(Option::is_some)
                                .chain(self.answers.iter().map(Option::is_some)),
                        )
                        .filter(|(_, open)| *open)
                        .map(|(c, _)| *c)
                        .collect();
                    wait_any(&live, self.events, self.bells.own);
                }
                Ok(_) => {}
            }
        }
    }
}

/// A client of a [`Server`]: sends a request with a transaction id and waits for the reply
/// with the same id.
pub struct Client<'a, const N: usize, D: Doorbell> {
    tx: Sender<'a, N, D>,
    rx: Receiver<'a, N, D>,
    next_txn: u64,
}

impl<'a, const N: usize, D: Doorbell> Client<'a, N, D> {
    /// A client on a request channel (`to`, whose sender side must notify the server's
    /// eventcount through `to_bell`) and a reply channel (`from`).
    pub fn new(to: &'a Channel<N>, to_bell: &'a D, from: &'a Channel<N>, bell: &'a D) -> Self {
        Client {
            tx: to.sender(to_bell),
            rx: from.receiver(bell),
            next_txn: 1,
        }
    }

    /// Sends `request` and waits for its reply.
    pub fn call(&mut self, request: Message) -> Result<Message, Stop> {
        let txn = self.next_txn;
        self.next_txn += 1;
        self.tx
            .send(&with_txn(request, txn))
            .map_err(|_| Stop::Closed)?;
        loop {
            match self.rx.recv() {
                Ok(m) if txn_of(&m) == txn => return Ok(m),
                Ok(_) => {}
                Err(RecvError::Closed) => return Err(Stop::Closed),
                Err(RecvError::Corrupt) => return Err(Stop::Corrupt),
            }
        }
    }
}
