//! The rules against Linux's (setresuid(2), setfsuid(2), credentials(7), path_resolution(7));
//! usr/creds.c checks the same calls on Linux and on Reef.

use super::*;

fn user(uid: Id, gid: Id) -> Credentials {
    let mut c = Credentials::root();
    c.setgid(gid).unwrap();
    c.setuid(uid).unwrap();
    c
}

fn file(uid: Id, gid: Id, mode: u32) -> Owner {
    Owner {
        uid,
        gid,
        mode,
        dir: false,
    }
}

#[test]
fn root_setuid_drops_everything_for_good() {
    let mut c = Credentials::root();
    c.setuid(1000).unwrap();
    assert_eq!(c.uid, Ids::all(1000));
    assert_eq!(c.setuid(0), Err(Errno::EPERM));
    assert_eq!(c.setresuid(0, UNCHANGED, UNCHANGED), Err(Errno::EPERM));
    assert_eq!(c.setgroups(&[1]), Err(Errno::EPERM));
    assert_eq!(c.setuid(UNCHANGED), Err(Errno::EINVAL));
}

#[test]
fn saved_id_lets_a_process_switch_back() {
    let mut c = Credentials::root();
    c.setresuid(1000, 1000, 0).unwrap();
    assert!(!c.is_privileged());
    assert_eq!(c.uid.fs, 1000);
    c.setresuid(UNCHANGED, 0, UNCHANGED).unwrap();
    assert!(c.is_privileged() && c.is_fs_privileged());
    // setreuid(-1, 1000) from ruid 1000: effective is the old real ID, so saved stays 0.
    c.setreuid(UNCHANGED, 1000).unwrap();
    assert_eq!((c.uid.real, c.uid.effective, c.uid.saved), (1000, 1000, 0));
    c.setuid(0).unwrap();
    assert_eq!((c.uid.real, c.uid.effective, c.uid.saved), (1000, 0, 0));
    // Privileged again: setuid changes all three.
    c.setuid(1000).unwrap();
    assert_eq!(c.uid, Ids::all(1000));
}

#[test]
fn setreuid_updates_the_saved_id_as_linux_does() {
    let mut c = Credentials::root();
    c.setreuid(1000, 2000).unwrap();
    assert_eq!(
        (c.uid.real, c.uid.effective, c.uid.saved, c.uid.fs),
        (1000, 2000, 2000, 2000)
    );
    // Unprivileged: the real ID may become the effective one (swap), not a third ID.
    assert_eq!(c.setreuid(3000, UNCHANGED), Err(Errno::EPERM));
    c.setreuid(2000, 1000).unwrap();
    assert_eq!(
        (c.uid.real, c.uid.effective, c.uid.saved),
        (2000, 1000, 1000)
    );
}

#[test]
fn unprivileged_setresuid_permutes_held_ids_only() {
    let mut c = Credentials::root();
    c.setresuid(1, 2, 3).unwrap();
    c.setresuid(3, 1, 2).unwrap();
    assert_eq!((c.uid.real, c.uid.effective, c.uid.saved), (3, 1, 2));
    assert_eq!(c.setresuid(4, UNCHANGED, UNCHANGED), Err(Errno::EPERM));
    assert_eq!((c.uid.real, c.uid.effective, c.uid.saved), (3, 1, 2));
}

#[test]
fn setfsuid_returns_the_old_id_and_changes_only_to_held_ids() {
    let mut c = Credentials::root();
    c.setresuid(1, 2, 3).unwrap();
    assert_eq!(c.setfsuid(9), 2);
    assert_eq!(c.uid.fs, 2);
    assert_eq!(c.setfsuid(3), 2);
    assert_eq!(c.setfsuid(UNCHANGED), 3);
    let mut r = Credentials::root();
    assert_eq!(r.setfsuid(9), 0);
    assert!(!r.is_fs_privileged() && r.is_privileged());
}

#[test]
fn groups_are_privileged_bounded_and_sorted() {
    let mut c = Credentials::root();
    c.setgroups(&[30, 10, 30, 20]).unwrap();
    assert_eq!(c.groups(), &[10, 20, 30]);
    assert!(c.in_group(20) && !c.in_group(40));
    let many = alloc::vec![7; NGROUPS_MAX + 1];
    assert_eq!(c.setgroups(&many), Err(Errno::EINVAL));
    c.setgroups(&[]).unwrap();
    assert!(c.groups().is_empty());
}

#[test]
fn permission_bits_by_owner_group_and_others() {
    let c = user(1000, 100);
    // access(): the real IDs, whatever the file-system ones.
    let mut r = Credentials::root();
    r.setresuid(1000, 0, 0).unwrap();
    assert_eq!(r.may(file(1, 1, 0o600), MAY_READ), Ok(()));
    assert_eq!(r.may_real(file(1, 1, 0o600), MAY_READ), Err(Errno::EACCES));
    assert_eq!(r.may_real(file(1000, 1, 0o600), MAY_READ), Ok(()));
    // The owner's bits apply to the owner even when the group's would allow more.
    assert_eq!(c.may(file(1000, 100, 0o070), MAY_READ), Err(Errno::EACCES));
    assert_eq!(c.may(file(1000, 5, 0o600), MAY_READ | MAY_WRITE), Ok(()));
    assert_eq!(c.may(file(1, 100, 0o640), MAY_READ), Ok(()));
    assert_eq!(c.may(file(1, 100, 0o640), MAY_WRITE), Err(Errno::EACCES));
    assert_eq!(c.may(file(1, 5, 0o604), MAY_READ), Ok(()));
    assert_eq!(c.may(file(1, 5, 0o640), MAY_READ), Err(Errno::EACCES));
    let mut g = Credentials::root();
    g.setgroups(&[5]).unwrap();
    g.setgid(100).unwrap();
    g.setuid(1000).unwrap();
    assert_eq!(g.may(file(1, 5, 0o640), MAY_READ), Ok(()));
}

#[test]
fn root_reads_and_writes_anything_but_executes_only_executables() {
    let r = Credentials::root();
    assert_eq!(r.may(file(1, 1, 0), MAY_READ | MAY_WRITE), Ok(()));
    assert_eq!(r.may(file(1, 1, 0o600), MAY_EXEC), Err(Errno::EACCES));
    assert_eq!(r.may(file(1, 1, 0o001), MAY_EXEC), Ok(()));
    let dir = Owner {
        dir: true,
        ..file(1, 1, 0)
    };
    assert_eq!(r.may(dir, MAY_EXEC | MAY_WRITE), Ok(()));
}

#[test]
fn ownership_chown_chmod_and_sticky_directories() {
    let c = user(1000, 100);
    assert_eq!(c.owns(file(1000, 1, 0)), Ok(()));
    assert_eq!(c.owns(file(1, 1, 0o777)), Err(Errno::EPERM));
    assert_eq!(c.may_chown(file(1000, 1, 0), UNCHANGED, 100), Ok(()));
    assert_eq!(
        c.may_chown(file(1000, 1, 0), UNCHANGED, 7),
        Err(Errno::EPERM)
    );
    assert_eq!(
        c.may_chown(file(1000, 1, 0), 1001, UNCHANGED),
        Err(Errno::EPERM)
    );
    assert_eq!(c.may_chown(file(1000, 1, 0), 1000, UNCHANGED), Ok(()));
    assert_eq!(c.chmod_mode(file(1000, 7, 0), 0o2755), 0o755);
    assert_eq!(c.chmod_mode(file(1000, 100, 0), 0o2755), 0o2755);
    let tmp = Owner {
        dir: true,
        ..file(0, 0, 0o1777)
    };
    assert_eq!(c.may_delete(tmp, file(1000, 1, 0)), Ok(()));
    assert_eq!(c.may_delete(tmp, file(1, 1, 0o666)), Err(Errno::EPERM));
    let open = Owner { mode: 0o777, ..tmp };
    assert_eq!(c.may_delete(open, file(1, 1, 0o666)), Ok(()));
}

#[test]
fn exec_of_set_id_programs() {
    let mut c = user(1000, 100);
    c.exec(file(0, 0, 0o4755));
    assert_eq!(
        (c.uid.real, c.uid.effective, c.uid.saved, c.uid.fs),
        (1000, 0, 0, 0)
    );
    assert_eq!(c.gid, Ids::all(100));
    // Set-group-ID without group execute is mandatory locking's mark, not a set-ID program.
    let mut d = user(1000, 100);
    d.exec(file(0, 50, 0o2745));
    assert_eq!(d.gid, Ids::all(100));
    d.exec(file(0, 50, 0o2755));
    assert_eq!((d.gid.real, d.gid.effective, d.gid.saved), (100, 50, 50));
    // A plain program: the saved IDs become the effective ones.
    let mut e = Credentials::root();
    e.setresuid(1, 2, 3).unwrap();
    e.exec(file(0, 0, 0o755));
    assert_eq!((e.uid.real, e.uid.effective, e.uid.saved), (1, 2, 2));
}

#[test]
fn signals_between_users() {
    let root = Credentials::root();
    let a = user(1000, 100);
    let b = user(1001, 100);
    assert_eq!(root.may_signal(a.uid), Ok(()));
    assert_eq!(a.may_signal(root.uid), Err(Errno::EPERM));
    assert_eq!(a.may_signal(b.uid), Err(Errno::EPERM));
    assert_eq!(a.may_signal(a.uid), Ok(()));
    // A set-user-ID program's process (real 1000, effective 0) may be signalled by its user.
    let mut s = user(1000, 100);
    s.exec(file(0, 0, 0o4755));
    assert_eq!(a.may_signal(s.uid), Ok(()));
}

#[test]
fn only_the_owner_or_root_reschedules_a_process() {
    let root = Credentials::root();
    let a = user(1000, 100);
    let b = user(1001, 100);
    assert_eq!(root.may_reschedule(a.uid), Ok(()));
    assert_eq!(a.may_reschedule(a.uid), Ok(()));
    assert_eq!(a.may_reschedule(b.uid), Err(Errno::EPERM));
    assert_eq!(a.may_reschedule(root.uid), Err(Errno::EPERM));
    // A set-user-ID program's process (effective 0, real 1000) is its user's to renice.
    let mut s = user(1000, 100);
    s.exec(file(0, 0, 0o4755));
    assert_eq!(a.may_reschedule(s.uid), Ok(()));
}

#[test]
fn capabilities_follow_the_user_ids() {
    let full = Caps {
        effective: ALL_CAPS,
        permitted: ALL_CAPS,
        inheritable: 0,
    };
    assert_eq!(Credentials::root().capabilities(), full);
    let mut c = Credentials::root();
    c.setresuid(0, 1000, 0).unwrap();
    assert_eq!(
        c.capabilities(),
        Caps {
            effective: 0,
            ..full
        }
    );
    c.setresuid(0, 0, 0).unwrap();
    assert_eq!(c.capabilities(), full);
    c.setuid(1000).unwrap();
    assert_eq!(
        c.capabilities(),
        Caps {
            effective: 0,
            permitted: 0,
            inheritable: 0
        }
    );
    assert_eq!(ALL_CAPS.count_ones(), 41);
}

#[test]
fn only_the_same_user_or_root_inspects_a_process() {
    let root = Credentials::root();
    let a = user(1000, 100);
    let b = user(1001, 100);
    assert_eq!(root.may_inspect(a.uid, a.gid), Ok(()));
    assert_eq!(a.may_inspect(a.uid, a.gid), Ok(()));
    assert_eq!(a.may_inspect(b.uid, b.gid), Err(Errno::EACCES));
    assert_eq!(a.may_inspect(root.uid, root.gid), Err(Errno::EACCES));
    // A set-user-ID program's process is closed to the user who started it.
    let mut s = user(1000, 100);
    s.exec(file(0, 0, 0o4755));
    assert_eq!(a.may_inspect(s.uid, s.gid), Err(Errno::EACCES));
    // So is one of the same user in another group.
    let g = user(1000, 200);
    assert_eq!(a.may_inspect(g.uid, g.gid), Err(Errno::EACCES));
}
