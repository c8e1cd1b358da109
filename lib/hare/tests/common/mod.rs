//! A deterministic message network for Hare's servers and clients: requests wait in one pool
//! and are delivered in an order the test picks, each client's requests to one server in the
//! order it sent them (Reef's rings are FIFO); invalidations reach a client's queue as the
//! server handles the request that causes them (atomic delivery, §3.7.2). Every request and
//! reply travels in its wire form (`hare::wire`: a message and a page), as on Reef.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use hare::{
    wire, Attrs, Block, BufferCache, Client, ClientId, Courier, Ino, Invalidation, Policy, Reply,
    Request, Server, ServerId, ShardTable, Techniques, Timespec, Transport, BLOCK_SIZE,
};
use msg::Message;

/// What a never-written block reads as: a client that forgets to zero a new block shows it.
pub const GARBAGE: u8 = 0xAA;

/// A small deterministic generator (xorshift64*), seeded by proptest.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

pub struct Net {
    pub servers: Vec<Server>,
    cache: Cache,
    /// Requests sent, oldest first: tag, sender, server, the message and its page.
    pending: Vec<(u64, ClientId, ServerId, Message, Vec<u8>)>,
    /// The tags of posted requests, whose replies nobody reads.
    posted: std::collections::BTreeSet<u64>,
    /// Replies: the message and the page, by tag.
    replies: BTreeMap<u64, (Message, Vec<u8>)>,
    /// Invalidation messages queued at each client.
    inboxes: BTreeMap<ClientId, Vec<Message>>,
    next_tag: u64,
    pub delivered: u64,
}

impl Net {
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Delivers the oldest pending request from pending request `i`'s client to its server:
    /// the server handles it, what it asks zeroed is zeroed and the data it moves copied, its
    /// invalidations are queued at their clients, then its reply (dropped for a posted one).
    ///
    /// Before a request its client waits for, the server handles the posted requests at the
    /// head of every client's queue to it, as `usr/hared.c` does (`wire::POSTED`): what a
    /// posted request changed is seen by every request sent after it.
    pub fn deliver(&mut self, i: usize) {
        let (_, client, server, ..) = self.pending[i];
        let first = self
            .pending
            .iter()
            .position(|p| (p.1, p.2) == (client, server))
            .expect("pending request i itself");
        if !self.posted.contains(&self.pending[first].0) {
            while let Some(k) = self.pending.iter().position(|p| {
                p.2 == server && self.posted.contains(&p.0) && !self.behind_awaited(p.1, p.0)
            }) {
                self.handle(k);
            }
        }
        let first = self
            .pending
            .iter()
            .position(|p| (p.1, p.2) == (client, server))
            .expect("pending request i itself");
        self.handle(first);
    }

    /// Whether a request of `client` awaited at the same server comes before request `tag`.
    fn behind_awaited(&self, client: ClientId, tag: u64) -> bool {
        let server = self.pending.iter().find(|p| p.0 == tag).expect("pending").2;
        self.pending
            .iter()
            .take_while(|p| p.0 != tag)
            .any(|p| (p.1, p.2) == (client, server) && !self.posted.contains(&p.0))
    }

    /// Hands `req` from client `from` to server `to` at once, as a client that is not a
    /// `Client` would (the runtime's zeroing, copies and invalidations done): its reply.
    pub fn direct(&mut self, from: ClientId, to: ServerId, req: Request) -> Reply {
        self.handled(from, to, req)
    }

    /// The buffer cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Server `to` handles `req` from `from`; what it asks zeroed is zeroed, the data it
    /// moves copied, its invalidations queued at their clients: its reply.
    fn handled(&mut self, from: ClientId, to: ServerId, req: Request) -> Reply {
        let mut h = self.servers[to as usize].handle(from, req);
        for &(b, from) in &h.zero {
            let from = from as usize;
            self.cache.write(b, from, &[0; BLOCK_SIZE][from..]);
        }
        h.copy_data(&self.cache);
        for (c, inv) in h.invalidations {
            self.inboxes
                .entry(c)
                .or_default()
                .push(wire::encode_invalidation(&inv));
        }
        h.reply
    }

    /// Handles pending request `k`.
    fn handle(&mut self, k: usize) {
        let (tag, from, to, m, mut page) = self.pending.remove(k);
        let req = wire::decode_request(&m, &page).expect("a request the client encoded");
        let reply = self.handled(from, to, req);
        let (id, p) = wire::request_id(&m);
        let r = wire::encode_reply(id, p, &reply, &mut page).expect("a reply fits its page");
        if !self.posted.remove(&tag) {
            self.replies.insert(tag, (r, page));
        }
        self.delivered += 1;
    }

    /// Delivers every pending request (posted ones included), oldest first: what a test does
    /// before it looks into the servers, and Reef's kernel before a resize.
    pub fn settle(&mut self) {
        while !self.pending.is_empty() {
            self.deliver(0);
        }
    }

    /// Queues `req` from client `id` to `server` with a new tag.
    fn send(&mut self, id: ClientId, server: ServerId, req: &Request, posted: u64) -> u64 {
        let t = self.next_tag;
        self.next_tag += 1;
        let mut page = vec![0; wire::PAGE_SIZE];
        let m = wire::encode_request(t | posted, (t % 256) as u8, req, &mut page)
            .expect("a request fits its page");
        self.pending.push((t, id, server, m, page));
        t
    }
}

/// Resizes the fleet to servers `0..count` while no request is in flight (§6.1.1), as
/// Reef's kernel does, through `hare::resize` and its messages in their wire form: new
/// servers join with no blocks, every shard whose owner changes moves from the old owner to
/// the new one (the old owner's invalidations queued at their clients), free blocks are
/// spread evenly over the servers that stay or join (a leaving one keeps none), and every
/// server and client takes the new table. Servers that leave stay in `servers`, owning
/// nothing.
pub fn resize(net: &Rc<RefCell<Net>>, clients: &mut [HClient], count: usize) {
    let mut n = net.borrow_mut();
    // What clients posted reaches the servers first (Reef's kernel waits for it).
    n.settle();
    let old = n.servers[0].table().clone();
    while n.servers.len() < count {
        let id = n.servers.len() as ServerId;
        let s = Server::joining(id, Timespec::new(0, 0)).expect("an id below MAX");
        n.servers.push(s);
    }
    let ids: Vec<ServerId> = (0..count as ServerId).collect();
    let (new, done) = hare::resize::resize(&mut Manager(&mut n), &old, &ids);
    assert_eq!(done, Ok(()), "a resize");
    assert_eq!(new.servers(), ids);
    drop(n);
    for c in clients {
        c.set_table(new.clone());
    }
}

/// Makes directory `dir` distributed while no request is in flight (§6.1.2), as Reef's
/// kernel does: `hare::resize::distribute`, then every client (ids `0..clients`) told to
/// forget what it cached. Whether it was distributed now (`false`: it was already).
pub fn distribute(net: &Rc<RefCell<Net>>, clients: usize, dir: Ino) -> Result<bool, abi::Errno> {
    let mut n = net.borrow_mut();
    n.settle();
    let table = n.servers[0].table().clone();
    let done = hare::resize::distribute(&mut Manager(&mut n), &table, dir);
    for c in 0..clients as ClientId {
        n.inboxes
            .entry(c)
            .or_default()
            .push(wire::encode_invalidation(&Invalidation::everything()));
    }
    done
}

/// The client id the one who resizes uses.
pub const MANAGER: ClientId = 0xffff;

/// The one who resizes: each request encoded, handled at once, its reply decoded.
pub struct Manager<'a>(pub &'a mut Net);

impl Courier for Manager<'_> {
    fn call(&mut self, server: ServerId, req: &Request) -> Reply {
        let mut page = vec![0u8; wire::PAGE_SIZE];
        let m = wire::encode_request(1, 0, req, &mut page).expect("a request that encodes");
        let used = wire::page_len(&m);
        let req = wire::decode_request(&m, &page[..used]).expect("a request that decodes");
        let Some(s) = self.0.servers.get_mut(usize::from(server)) else {
            return Reply::Err(abi::Errno::EIO);
        };
        let h = s.handle(MANAGER, req);
        assert!(h.zero.is_empty(), "a resize zeroes nothing");
        for (c, inv) in h.invalidations {
            self.0
                .inboxes
                .entry(c)
                .or_default()
                .push(wire::encode_invalidation(&inv));
        }
        let r = wire::encode_reply(1, 0, &h.reply, &mut page).expect("a reply that encodes");
        wire::decode_reply(&r, &page[..wire::page_len(&r)]).expect("a reply that decodes")
    }
}

/// A client's end of the network.
pub struct Port {
    id: ClientId,
    net: Rc<RefCell<Net>>,
}

impl Transport for Port {
    fn call(&self, server: ServerId, req: Request) -> impl Future<Output = Reply> {
        let net = self.net.clone();
        let id = self.id;
        let mut req = Some(req);
        let mut tag = None;
        poll_fn(move |_| {
            let mut n = net.borrow_mut();
            match tag {
                None => {
                    tag = Some(n.send(id, server, &req.take().expect("sent once"), 0));
                    Poll::Pending
                }
                Some(t) => n.replies.remove(&t).map_or(Poll::Pending, |(m, page)| {
                    assert_eq!(
                        wire::request_id(&m),
                        (t, (t % 256) as u8),
                        "reply to another request"
                    );
                    Poll::Ready(wire::decode_reply(&m, &page).expect("a reply the server encoded"))
                }),
            }
        })
    }

    fn post(&self, server: ServerId, req: Request) {
        let mut n = self.net.borrow_mut();
        // As Reef's kernel does: with IN_FLIGHT unanswered, it waits for the oldest.
        let ours =
            |p: &(u64, ClientId, ServerId, Message, Vec<u8>)| (p.1, p.2) == (self.id, server);
        if n.pending.iter().filter(|p| ours(p)).count() >= wire::IN_FLIGHT {
            let oldest = n.pending.iter().position(ours).expect("one");
            n.deliver(oldest);
        }
        let t = n.send(self.id, server, &req, wire::POSTED);
        n.posted.insert(t);
    }

    fn invalidations(&self, out: &mut Vec<Invalidation>) {
        if let Some(q) = self.net.borrow_mut().inboxes.get_mut(&self.id) {
            out.extend(q.drain(..).map(|m| {
                assert!(wire::is_invalidation(&m));
                wire::decode_invalidation(&m).expect("an invalidation the server encoded")
            }));
        }
    }
}

/// The buffer cache: blocks never written read as [`GARBAGE`].
#[derive(Clone, Default)]
pub struct Cache(Rc<RefCell<BTreeMap<Block, Box<[u8; BLOCK_SIZE]>>>>);

impl BufferCache for Cache {
    fn read(&self, block: Block, offset: usize, buf: &mut [u8]) {
        match self.0.borrow().get(&block) {
            Some(b) => buf.copy_from_slice(&b[offset..offset + buf.len()]),
            None => buf.fill(GARBAGE),
        }
    }

    fn write(&self, block: Block, offset: usize, data: &[u8]) {
        let mut m = self.0.borrow_mut();
        let b = m
            .entry(block)
            .or_insert_with(|| Box::new([GARBAGE; BLOCK_SIZE]));
        b[offset..offset + data.len()].copy_from_slice(data);
    }
}

pub type HClient = Client<Port, Cache>;

thread_local! {
    /// The lookup cache's bound for clients made by [`world`] on this thread.
    pub static CACHE_ENTRIES: std::cell::Cell<usize> = const { std::cell::Cell::new(1024) };
    /// The techniques of clients made by [`world`] on this thread (§5.4's ablations).
    pub static TECHNIQUES: std::cell::Cell<Techniques> = std::cell::Cell::new(Techniques::default());
}

/// Blocks per server.
pub const BLOCKS_PER_SERVER: Block = 512;

pub const ROOT_ATTRS: Attrs = Attrs::new(0o755, 0, 0);

/// `servers` servers and `clients` clients. With `near_all`, every server is near every client
/// (new inodes go with their entries); else client `c`'s local server is `c % servers` and no
/// other is near.
pub fn world(
    servers: usize,
    clients: usize,
    distribute: bool,
    near_all: bool,
) -> (Rc<RefCell<Net>>, Vec<HClient>) {
    let techniques = vec![TECHNIQUES.with(|t| t.get()); clients];
    world_with(servers, &techniques, distribute, near_all)
}

/// [`world`] with one client per element of `techniques`, each using those.
pub fn world_with(
    servers: usize,
    techniques: &[Techniques],
    distribute: bool,
    near_all: bool,
) -> (Rc<RefCell<Net>>, Vec<HClient>) {
    let table = ShardTable::spread(servers).expect("1 to 256 servers");
    let t0 = Timespec::new(0, 0);
    let srv = (0..servers)
        .map(|i| {
            let lo = i as Block * BLOCKS_PER_SERVER;
            Server::new(
                i as ServerId,
                table.clone(),
                lo..lo + BLOCKS_PER_SERVER,
                ROOT_ATTRS,
                distribute,
                t0,
            )
        })
        .collect();
    let cache = Cache::default();
    let net = Rc::new(RefCell::new(Net {
        servers: srv,
        cache: cache.clone(),
        pending: Vec::new(),
        posted: Default::default(),
        replies: BTreeMap::new(),
        inboxes: BTreeMap::new(),
        next_tag: 0,
        delivered: 0,
    }));
    let clients = (0..techniques.len())
        .map(|c| {
            let policy = Policy {
                local: (c % servers) as ServerId,
                near: if near_all {
                    (0..servers as ServerId).collect()
                } else {
                    Default::default()
                },
                distribute_dirs: distribute,
                cache_entries: CACHE_ENTRIES.with(|c| c.get()),
                techniques: techniques[c],
            };
            let port = Port {
                id: c as ClientId,
                net: net.clone(),
            };
            Client::new(table.clone(), port, cache.clone(), policy, distribute)
        })
        .collect();
    (net, clients)
}

/// Requests every server of `net` has handled.
pub fn requests(net: &Rc<RefCell<Net>>) -> u64 {
    net.borrow()
        .servers
        .iter()
        .map(|s| s.stats().requests)
        .sum()
}

/// The executor polls every future in turn, so nothing needs waking.
struct NoWake;

impl Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

/// Runs futures to completion, each step either polling one of them or delivering one
/// pending message, as `rng` picks. Panics if nothing can move (a lost reply).
pub fn run_all<T>(
    net: &Rc<RefCell<Net>>,
    futs: Vec<Pin<Box<dyn Future<Output = T> + '_>>>,
    rng: &mut Rng,
) -> Vec<T> {
    let mut futs: Vec<Option<Pin<Box<dyn Future<Output = T> + '_>>>> =
        futs.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = futs.iter().map(|_| None).collect();
    let waker = Waker::from(Arc::new(NoWake));
    let mut cx = Context::from_waker(&waker);
    let mut idle = 0;
    loop {
        let live: Vec<usize> = (0..futs.len()).filter(|&i| futs[i].is_some()).collect();
        if live.is_empty() {
            break;
        }
        let pending = net.borrow().pending();
        let choice = rng.below(live.len() + pending);
        if choice < live.len() {
            let i = live[choice];
            if let Poll::Ready(v) = futs[i].as_mut().expect("live").as_mut().poll(&mut cx) {
                out[i] = Some(v);
                futs[i] = None;
                idle = 0;
            } else {
                idle += 1;
            }
        } else {
            net.borrow_mut().deliver(choice - live.len());
            idle = 0;
        }
        assert!(idle < 10_000, "no progress: a reply was lost");
    }
    out.into_iter().map(|v| v.expect("finished")).collect()
}

/// Runs one future to completion (messages delivered in an order `rng` picks).
pub fn run<T>(net: &Rc<RefCell<Net>>, fut: impl Future<Output = T>, rng: &mut Rng) -> T {
    run_all(net, vec![Box::pin(fut)], rng)
        .pop()
        .expect("one result")
}
