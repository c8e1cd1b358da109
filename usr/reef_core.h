/*
 * reef_core.h: Reef's core management calls (Barrelfish/DC's cores as devices), for C
 * programs: the layout of `struct reef_core_info` and wrappers of reef_core_info and
 * reef_core_ctl (lib/abi/src/reef.rs has the numbers and the layout; docs/architecture.md,
 * "Core management", the behaviour). Errors are negative errno values; on a kernel other than
 * Reef every call answers -ENOSYS.
 */
#ifndef REEF_CORE_H
#define REEF_CORE_H

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS_reef_core_info 1036
#define SYS_reef_core_ctl 1037

#define REEF_CORE_STOP 0
#define REEF_CORE_START 1
#define REEF_CORE_PARK 2
#define REEF_CORE_UNPARK 3
#define REEF_CORE_UPDATE 4
#define REEF_CORE_RT 5
#define REEF_CORE_NONE 0xffffffffu /* parked_on, guest: no core */

enum reef_core_state {
    REEF_CORE_CREATED = 0,
    REEF_CORE_STARTING = 1,
    REEF_CORE_ONLINE = 2,
    REEF_CORE_STOPPING = 3,
    REEF_CORE_STOPPED = 4,
    REEF_CORE_PARKED = 5,
};

struct reef_core_info {
    uint32_t core, node, apic_id, state;
    uint64_t kcb;         /* physical address of the core's KCB */
    uint64_t starts;      /* times the core was started */
    uint64_t shutdown_ns; /* its clock when it last stopped, 0: never */
    uint32_t threads;     /* threads whose run queue is this core's (ready or running) */
    uint32_t fleet_owner; /* pid of the fleet member owning the core, 0: none */
    char image[16];       /* kernel image running it, NUL-padded */
    uint32_t parked_on;   /* the core running its KCB while it is parked, or REEF_CORE_NONE */
    uint32_t guest;       /* the core whose KCB it runs parked, or REEF_CORE_NONE */
};

_Static_assert(sizeof(struct reef_core_info) == 72, "lib/abi's CORE_INFO_SIZE");

static inline const char *reef_core_state_name(uint32_t state)
{
    static const char *const names[] = {"created",  "starting", "online",
                                        "stopping", "stopped",  "parked"};
    return state < sizeof names / sizeof names[0] ? names[state] : "?";
}

/* What the kernel knows of core `core`: 0, or -ENODEV past the last core. */
static inline int reef_core_info(unsigned core, struct reef_core_info *out)
{
    long r = syscall(SYS_reef_core_info, (long)core, out);
    return r < 0 ? -errno : 0;
}

/* Stops core `core` (returns once it has stopped): 0, -ENODEV, -EALREADY (not online),
 * -EBUSY (core 0, the last online core, a fleet's core, a host of a parked core), -EDEADLK (the
 * caller may run only there), -EINTR (a signal came first; the core still stops). */
static inline int reef_core_stop(unsigned core)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_STOP, (long)core) < 0 ? -errno : 0;
}

/* Starts stopped core `core` again (returns once it is online): 0, -ENODEV, -EALREADY (not
 * stopped), -EIO (it did not come up). */
static inline int reef_core_start(unsigned core)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_START, (long)core) < 0 ? -errno : 0;
}

/* Parks core `core` on core `host` (returns once `host` runs its KCB): it stops as for
 * reef_core_stop, and `host` runs the threads that may run only on `core` by turns with its
 * own. 0, -ENODEV (no such core or host), -EINVAL (`core` is `host`, `host` not online),
 * -EALREADY (`core` not online: stopped or parked), -EBUSY (as for a stop, or `host` hosts a
 * parked core already or is a fleet's), -EDEADLK (the caller may run only on `core`). */
static inline int reef_core_park(unsigned core, unsigned host)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_PARK, (long)core, (long)host) < 0 ? -errno
                                                                                        : 0;
}

/* Unparks core `core` (returns once it is online again, running its KCB): 0, -ENODEV, -EINVAL
 * (not parked), -EDEADLK (the caller runs on that core's KCB), -EIO (it did not come up; it
 * stays stopped). */
static inline int reef_core_unpark(unsigned core)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_UNPARK, (long)core) < 0 ? -errno : 0;
}

/* Restarts core `core` in the kernel image at `path` ("reef": the boot image; a variant such
 * as "/boot/reef-trace"), with its KCB (Barrelfish/DC §4.5): an online core is stopped first as
 * for reef_core_stop, a stopped one started in the image; returns once it is online. 0, the
 * errors of opening and reading the file, -ENOEXEC (not a Reef kernel image), -EINVAL (made for
 * another kernel or KCB layout), -ENODEV, -EBUSY (as for a stop; a parked core; another image
 * holds its addresses), -EALREADY (stopping or starting), -EDEADLK, -EIO (it did not come up). */
static inline int reef_core_update(unsigned core, const char *path)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_UPDATE, (long)core, path) < 0 ? -errno : 0;
}

/* Restarts online core `core` in the kernel image at `path` as reef_core_update does and makes
 * the calling process its owner: its threads are pinned there and the core runs nothing else
 * until it exits (Barrelfish/DC §5.3: one program alone on the real-time image
 * "/boot/reef-rt"). 0, -EINVAL (not online), -EBUSY (owned already, the last free online
 * core, a host of parked cores, or the caller owns a core already), reef_core_update's
 * errors. */
static inline int reef_core_rt(unsigned core, const char *path)
{
    return syscall(SYS_reef_core_ctl, (long)REEF_CORE_RT, (long)core, path) < 0 ? -errno : 0;
}

#endif
