//! Payloads outside the log, released once every replica has applied the operation (§4.5).

use alloc::sync::Arc;
use core::fmt;
use core::ops::Deref;

use crate::sync::{AtomicBool, AtomicUsize, Backoff, Ordering, UnsafeCell};

/// Bit of `Inner::users` set once the data has been dropped.
const RELEASED: usize = 1 << (usize::BITS - 1);

struct Inner<T> {
    /// Replicas that have not yet applied the operation.
    remaining: AtomicUsize,
    /// Number of live [`PayloadRef`]s, plus [`RELEASED`] once the data is gone.
    users: AtomicUsize,
    /// Set once a replica claimed the operation ([`PayloadRef::claim`]).
    claimed: AtomicBool,
    data: UnsafeCell<Option<T>>,
}

/// A large operation argument (e.g. a write buffer) kept outside the log and dropped as soon as
/// the last replica has applied the operation, rather than when the log entry is reused.
///
/// Put a `Payload` in an update operation; cloning it (when the log hands the operation to a
/// replica) does not copy the data. In `dispatch_mut`, every replica calls [`Payload::apply`]
/// exactly once and uses the returned reference; when the reference of the last of the
/// `replicas` replicas is dropped, the data is dropped.
pub struct Payload<T> {
    inner: Arc<Inner<T>>,
}

// SAFETY: the data is shared by reference between replicas (`T: Sync`) and dropped by
// whichever thread releases it last (`T: Send`).
unsafe impl<T: Send + Sync> Send for Payload<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Payload<T> {}

impl<T> Clone for Payload<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for Payload<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payload")
            .field("remaining", &self.inner.remaining.load(Ordering::Relaxed))
            .finish()
    }
}

impl<T> Payload<T> {
    /// Wraps `data` for an operation that `replicas` replicas will apply.
    pub fn new(data: T, replicas: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                remaining: AtomicUsize::new(replicas),
                users: AtomicUsize::new(0),
                claimed: AtomicBool::new(false),
                data: UnsafeCell::new(Some(data)),
            }),
        }
    }

    /// Borrows the data for one replica's application of the operation; dropping the returned
    /// reference counts that replica as done. Returns `None` if the data was already released
    /// (every replica counted, i.e. `apply` was called more often than there are replicas).
    pub fn apply(&self) -> Option<PayloadRef<'_, T>> {
        let inner = &*self.inner;
        if inner.users.fetch_add(1, Ordering::Acquire) & RELEASED != 0 {
            inner.users.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: we registered as a user before checking RELEASED, so the releasing thread
        // waits for us before dropping the data; only shared references are ever handed out.
        let data = inner.data.with(|p| unsafe { (*p).as_ref() });
        data.map(|data| PayloadRef {
            payload: self,
            data: data as *const T,
        })
    }

    /// Whether the data has been dropped.
    pub fn is_released(&self) -> bool {
        self.inner.users.load(Ordering::Acquire) & RELEASED != 0
    }

    /// Whether no replica will apply the operation any more: every replica has (the data was
    /// released), or this is the last handle on the payload, so the operation is in no log
    /// (it never entered one: the log holds a clone until every replica has applied it).
    pub fn is_settled(&self) -> bool {
        self.is_released() || Arc::strong_count(&self.inner) == 1
    }
}

/// One replica's borrow of a [`Payload`]; see [`Payload::apply`].
pub struct PayloadRef<'a, T> {
    payload: &'a Payload<T>,
    data: *const T,
}

impl<T> PayloadRef<'_, T> {
    /// True for exactly one replica's application, the first to ask: for an effect that must
    /// happen once although every replica applies the operation (a write into memory that all
    /// replicas share). Which replica that is depends on timing, so whatever follows from the
    /// answer must leave every replica's own state the same.
    pub fn claim(&self) -> bool {
        !self.payload.inner.claimed.swap(true, Ordering::AcqRel)
    }
}

impl<T> Deref for PayloadRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `data` points into the payload, which is not released while this reference
        // is counted in `users`.
        unsafe { &*self.data }
    }
}

impl<T> Drop for PayloadRef<'_, T> {
    fn drop(&mut self) {
        let inner = &*self.payload.inner;
        let last = inner
            .remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            == Ok(1);
        inner.users.fetch_sub(1, Ordering::Release);
        if last {
            let mut backoff = Backoff::new();
            while inner
                .users
                .compare_exchange(0, RELEASED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                backoff.spin();
            }
            // SAFETY: RELEASED is set and no user is registered, and no later `apply` gets
            // past the RELEASED check, so nobody else can observe the data.
            let data = inner.data.with_mut(|p| unsafe { (*p).take() });
            drop(data);
        }
    }
}
