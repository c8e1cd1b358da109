//! Process credentials as Linux keeps them, without touching memory the kernel has not
//! handed in: a process's real, effective, saved and file-system user and group IDs and its
//! supplementary groups ([`Credentials`]), the rules by which the `set*id` calls change them,
//! the change `execve` makes for a set-user-ID or set-group-ID program, and the checks that use
//! them: file permission bits ([`Credentials::may`]), ownership ([`Credentials::owns`]) and
//! signalling ([`Credentials::may_signal`]).
//!
//! Reef has no capability sets: a process is privileged for the `set*id` calls (Linux's
//! `CAP_SETUID`, `CAP_SETGID`) while its effective user ID is 0, and for file access
//! (`CAP_DAC_OVERRIDE`, `CAP_FOWNER`, `CAP_CHOWN`) while its file-system user ID is 0. That is
//! Linux's behaviour for a process that never calls `capset` or `prctl(PR_SET_KEEPCAPS)`.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

use abi::Errno;
use alloc::vec::Vec;

/// A user or group ID.
pub type Id = u32;

/// "Leave unchanged", as the `set*id` calls take it (`(uid_t)-1`).
pub const UNCHANGED: Id = u32::MAX;

/// Linux's `NGROUPS_MAX`: the most supplementary groups a process may have.
pub const NGROUPS_MAX: usize = 65536;

/// Read permission (`R_OK`, the `r` bit of each class).
pub const MAY_READ: u32 = 4;
/// Write permission (`W_OK`).
pub const MAY_WRITE: u32 = 2;
/// Execute (search, for a directory) permission (`X_OK`).
pub const MAY_EXEC: u32 = 1;

/// The set-user-ID bit of a file's mode.
pub const S_ISUID: u32 = 0o4000;
/// The set-group-ID bit.
pub const S_ISGID: u32 = 0o2000;
/// The sticky bit (of a directory: only an entry's owner, the directory's owner or root may
/// remove or rename the entry).
pub const S_ISVTX: u32 = 0o1000;

/// What permission checks need of a file: its owner, group and mode bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The owning user.
    pub uid: Id,
    /// The owning group.
    pub gid: Id,
    /// The permission bits (`0o7777`).
    pub mode: u32,
    /// Whether it is a directory (root may search any directory, but execute only a file
    /// with some execute bit).
    pub dir: bool,
}

/// One side of the IDs: real, effective, saved and file-system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    /// The real ID.
    pub real: Id,
    /// The effective ID (permission for the `set*id` calls and signals).
    pub effective: Id,
    /// The saved ID (what an unprivileged process may switch back to).
    pub saved: Id,
    /// The file-system ID (permission for file access; follows `effective` except after
    /// `setfsuid`/`setfsgid`).
    pub fs: Id,
}

impl Ids {
    /// All four the same.
    pub const fn all(id: Id) -> Ids {
        Ids {
            real: id,
            effective: id,
            saved: id,
            fs: id,
        }
    }

    /// Whether `id` is one of the real, effective and saved IDs (what an unprivileged caller
    /// may set any of them to).
    fn holds(&self, id: Id) -> bool {
        id == self.real || id == self.effective || id == self.saved
    }

    /// `setuid`/`setgid`: all but the saved ID's change for the privileged, else only the
    /// effective (and file-system) ID, to the real or saved ID.
    fn set(&mut self, id: Id, privileged: bool) -> Result<(), Errno> {
        if id == UNCHANGED {
            return Err(Errno::EINVAL);
        }
        if privileged {
            *self = Ids::all(id);
        } else if id == self.real || id == self.saved {
            self.effective = id;
            self.fs = id;
        } else {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// `setreuid`/`setregid`: the real ID may become the effective one, the effective ID any of
    /// real, effective and saved; the saved ID follows the new effective ID when the real ID
    /// is set or the effective ID changes to something other than the old real ID.
    fn set_re(&mut self, real: Id, effective: Id, privileged: bool) -> Result<(), Errno> {
        if !privileged {
            let real_ok = real == UNCHANGED || real == self.real || real == self.effective;
            if !real_ok || (effective != UNCHANGED && !self.holds(effective)) {
                return Err(Errno::EPERM);
            }
        }
        let old_real = self.real;
        if real != UNCHANGED {
            self.real = real;
        }
        if effective != UNCHANGED {
            self.effective = effective;
        }
        if real != UNCHANGED || (effective != UNCHANGED && effective != old_real) {
            self.saved = self.effective;
        }
        self.fs = self.effective;
        Ok(())
    }

    /// `setresuid`/`setresgid`: each given ID to any of the current three (anything, when
    /// privileged).
    fn set_res(
        &mut self,
        real: Id,
        effective: Id,
        saved: Id,
        privileged: bool,
    ) -> Result<(), Errno> {
        let ok = |id: Id| id == UNCHANGED || privileged || self.holds(id);
        if !(ok(real) && ok(effective) && ok(saved)) {
            return Err(Errno::EPERM);
        }
        for (field, id) in [
            (&mut self.real, real),
            (&mut self.effective, effective),
            (&mut self.saved, saved),
        ] {
            if id != UNCHANGED {
                *field = id;
            }
        }
        self.fs = self.effective;
        Ok(())
    }

    /// `setfsuid`/`setfsgid`: returns the old file-system ID, whether or not it changed (the
    /// call cannot fail); it changes to an ID the caller holds (any, when privileged).
    fn set_fs(&mut self, id: Id, privileged: bool) -> Id {
        let old = self.fs;
        if id != UNCHANGED && (privileged || self.holds(id) || id == self.fs) {
            self.fs = id;
        }
        old
    }
}

/// A process's credentials. `fork` copies them, `execve` changes them only for a set-ID
/// program ([`Credentials::exec`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// User IDs.
    pub uid: Ids,
    /// Group IDs.
    pub gid: Ids,
    /// Supplementary groups, sorted, without repeats.
    groups: Vec<Id>,
}

impl Credentials {
    /// Root's: every ID 0, no supplementary groups (init's).
    pub const fn root() -> Credentials {
        Credentials {
            uid: Ids::all(0),
            gid: Ids::all(0),
            groups: Vec::new(),
        }
    }

    /// A copy (`fork`), or ENOMEM if its groups cannot be allocated.
    pub fn try_clone(&self) -> Result<Credentials, Errno> {
        Ok(Credentials {
            uid: self.uid,
            gid: self.gid,
            groups: copy(&self.groups)?,
        })
    }

    /// Privileged for the `set*id` calls and for signalling anyone: effective user ID 0.
    pub fn is_privileged(&self) -> bool {
        self.uid.effective == 0
    }

    /// Privileged for file access: file-system user ID 0.
    pub fn is_fs_privileged(&self) -> bool {
        self.uid.fs == 0
    }

    /// `setuid(id)`.
    pub fn setuid(&mut self, id: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.uid.set(id, p)
    }

    /// `setgid(id)`.
    pub fn setgid(&mut self, id: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.gid.set(id, p)
    }

    /// `setreuid(real, effective)` ([`UNCHANGED`] leaves one as it is).
    pub fn setreuid(&mut self, real: Id, effective: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.uid.set_re(real, effective, p)
    }

    /// `setregid(real, effective)`.
    pub fn setregid(&mut self, real: Id, effective: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.gid.set_re(real, effective, p)
    }

    /// `setresuid(real, effective, saved)`.
    pub fn setresuid(&mut self, real: Id, effective: Id, saved: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.uid.set_res(real, effective, saved, p)
    }

    /// `setresgid(real, effective, saved)`.
    pub fn setresgid(&mut self, real: Id, effective: Id, saved: Id) -> Result<(), Errno> {
        let p = self.is_privileged();
        self.gid.set_res(real, effective, saved, p)
    }

    /// `setfsuid(id)`: the old file-system user ID.
    pub fn setfsuid(&mut self, id: Id) -> Id {
        let p = self.is_privileged();
        self.uid.set_fs(id, p)
    }

    /// `setfsgid(id)`: the old file-system group ID.
    pub fn setfsgid(&mut self, id: Id) -> Id {
        let p = self.is_privileged();
        self.gid.set_fs(id, p)
    }

    /// The supplementary groups (`getgroups`), sorted.
    pub fn groups(&self) -> &[Id] {
        &self.groups
    }

    /// `setgroups(groups)`: privileged only (EPERM), at most [`NGROUPS_MAX`] (EINVAL),
    /// ENOMEM if they cannot be stored.
    pub fn setgroups(&mut self, groups: &[Id]) -> Result<(), Errno> {
        if groups.len() > NGROUPS_MAX {
            return Err(Errno::EINVAL);
        }
        if !self.is_privileged() {
            return Err(Errno::EPERM);
        }
        let mut g = copy(groups)?;
        g.sort_unstable();
        g.dedup();
        self.groups = g;
        Ok(())
    }

    /// What `execve` of a program whose file is `file` does: a set-user-ID program runs with
    /// its owner as effective user, a set-group-ID one (with group execute permission) with its
    /// group; the saved IDs become the effective ones either way.
    pub fn exec(&mut self, file: Owner) {
        if file.mode & S_ISUID != 0 {
            self.uid.effective = file.uid;
        }
        if file.mode & S_ISGID != 0 && file.mode & 0o010 != 0 {
            self.gid.effective = file.gid;
        }
        self.uid.saved = self.uid.effective;
        self.uid.fs = self.uid.effective;
        self.gid.saved = self.gid.effective;
        self.gid.fs = self.gid.effective;
    }

    /// Whether `gid` is the file-system group or a supplementary group.
    pub fn in_group(&self, gid: Id) -> bool {
        gid == self.gid.fs || self.groups.binary_search(&gid).is_ok()
    }

    /// The file permission check (Linux's `generic_permission`): `want` is a mask of
    /// [`MAY_READ`], [`MAY_WRITE`] and [`MAY_EXEC`], checked against the owner's bits if the
    /// file-system user owns the file, else the group's if it is in the file's group, else the
    /// others'. The file-system root may read and write anything, search any directory and
    /// execute a file with any execute bit. EACCES when refused.
    pub fn may(&self, file: Owner, want: u32) -> Result<(), Errno> {
        self.may_as(self.uid.fs, self.gid.fs, file, want)
    }

    /// [`Credentials::may`] with the real user and group IDs in place of the file-system ones
    /// (`access`).
    pub fn may_real(&self, file: Owner, want: u32) -> Result<(), Errno> {
        self.may_as(self.uid.real, self.gid.real, file, want)
    }

    /// The permission check for user `uid` in group `gid` (and the supplementary groups).
    fn may_as(&self, uid: Id, gid: Id, file: Owner, want: u32) -> Result<(), Errno> {
        let want = want & 7;
        if uid == 0 {
            let exec_ok = want & MAY_EXEC == 0 || file.dir || file.mode & 0o111 != 0;
            return if exec_ok { Ok(()) } else { Err(Errno::EACCES) };
        }
        let in_group = file.gid == gid || self.groups.binary_search(&file.gid).is_ok();
        let bits = if file.uid == uid {
            file.mode >> 6
        } else if in_group {
            file.mode >> 3
        } else {
            file.mode
        } & 7;
        if bits & want == want {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// Whether the file-system user may change `file`'s mode, times or (its group) ownership:
    /// it owns it, or is root. EPERM when not.
    pub fn owns(&self, file: Owner) -> Result<(), Errno> {
        if self.is_fs_privileged() || file.uid == self.uid.fs {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// `chown(file, uid, gid)`: root may change both; the owner may only change the group, to
    /// one it is in. EPERM otherwise.
    pub fn may_chown(&self, file: Owner, uid: Id, gid: Id) -> Result<(), Errno> {
        if self.is_fs_privileged() {
            return Ok(());
        }
        self.owns(file)?;
        let uid_ok = uid == UNCHANGED || uid == file.uid;
        let gid_ok = gid == UNCHANGED || gid == file.gid || self.in_group(gid);
        if uid_ok && gid_ok {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// The mode `chmod` stores: an unprivileged owner outside the file's group loses the
    /// set-group-ID bit (as on Linux).
    pub fn chmod_mode(&self, file: Owner, mode: u32) -> u32 {
        if !self.is_fs_privileged() && !self.in_group(file.gid) {
            mode & !S_ISGID
        } else {
            mode
        }
    }

    /// Removing or renaming entry `victim` of directory `dir`, which the caller may already
    /// write and search: in a sticky directory only the entry's owner, the directory's owner
    /// or root may. EPERM otherwise.
    pub fn may_delete(&self, dir: Owner, victim: Owner) -> Result<(), Errno> {
        let sticky = dir.mode & S_ISVTX != 0;
        let uid = self.uid.fs;
        if !sticky || self.is_fs_privileged() || victim.uid == uid || dir.uid == uid {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// Whether a process with these credentials may send a signal to one whose user IDs are
    /// `target`: root may signal anyone, others a process whose real or saved user ID is the
    /// sender's real or effective user ID. EPERM otherwise.
    pub fn may_signal(&self, target: Ids) -> Result<(), Errno> {
        let me = [self.uid.real, self.uid.effective];
        let them = [target.real, target.saved];
        if self.is_privileged() || me.iter().any(|id| them.contains(id)) {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// Whether a process with these credentials may change the priority or scheduling policy
    /// of one whose user IDs are `target` (`setpriority`, `sched_setscheduler`): root may,
    /// others when the target's real or effective user ID is the caller's effective one
    /// (Linux's `set_one_prio` and `check_same_owner`). EPERM otherwise.
    pub fn may_reschedule(&self, target: Ids) -> Result<(), Errno> {
        let me = self.uid.effective;
        if self.is_privileged() || target.real == me || target.effective == me {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// Whether a process with these credentials may read what another process keeps private
    /// (its environment in `/proc/<pid>/environ`), the other's user and group IDs being `uid`
    /// and `gid`: Linux's rule for `/proc` (ptrace's access check with the file-system IDs):
    /// root may, others when the target's real, effective and saved user IDs are all the
    /// caller's file-system user ID, and its group IDs all the caller's file-system group ID
    /// (a set-user-ID program's process is closed to its user). EACCES otherwise.
    pub fn may_inspect(&self, uid: Ids, gid: Ids) -> Result<(), Errno> {
        let same = |me: Id, them: Ids| [them.real, them.effective, them.saved] == [me; 3];
        if self.is_fs_privileged() || same(self.uid.fs, uid) && same(self.gid.fs, gid) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }
}

/// Every capability Linux 6.1 has (`CAP_CHOWN` = 0 to `CAP_CHECKPOINT_RESTORE` = 40).
pub const ALL_CAPS: u64 = (1 << 41) - 1;

/// A process's capability sets as `capget` shows them (bit `n` = capability `n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// What it may do now.
    pub effective: u64,
    /// What it may make effective.
    pub permitted: u64,
    /// What an `execve` passes on.
    pub inheritable: u64,
}

impl Credentials {
    /// The capability sets Linux gives a process with these IDs that never used `capset`
    /// or `PR_SET_KEEPCAPS` (Reef keeps no sets of its own: "privileged" is effective user
    /// ID 0): all effective with effective user 0, all permitted while any of the real,
    /// effective and saved user IDs is 0 (a root process that set only its effective ID to
    /// another may take root back), none inheritable.
    pub fn capabilities(&self) -> Caps {
        let ids = [self.uid.real, self.uid.effective, self.uid.saved];
        let all_if = |on: bool| if on { ALL_CAPS } else { 0 };
        Caps {
            effective: all_if(self.uid.effective == 0),
            permitted: all_if(ids.contains(&0)),
            inheritable: 0,
        }
    }
}

/// A copy of `ids`, or ENOMEM.
fn copy(ids: &[Id]) -> Result<Vec<Id>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(ids.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend_from_slice(ids);
    Ok(v)
}

#[cfg(test)]
mod tests;
