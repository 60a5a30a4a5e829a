//! The kernel's clocks, read with glibc's `clock_gettime` (from the vDSO),
//! where `Instant` or `SystemTime` costs more than the read itself: the
//! balance's park and wake hooks, and the `Date` of every response.
//! (rustix's own reader of the vDSO faults under valgrind, which
//! `scripts/instructions.sh` runs tern in.)

/// The time of `clock`, or `None` where this kernel does not have it.
#[allow(unsafe_code, reason = "libc's clock_gettime")]
pub(crate) fn read(clock: libc::clockid_t) -> Option<libc::timespec> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the pointer, which
    // points at `t`, alive for the call.
    let read = unsafe { libc::clock_gettime(clock, &mut t) };
    (read == 0).then_some(t)
}
