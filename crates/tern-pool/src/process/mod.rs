//! Spawned workers: starting a program with chosen descriptors in a
//! process group of its own, noticing that it exited, stopping it (the
//! whole group, SIGTERM then SIGKILL) and reaping it, and the private
//! directory where FastCGI workers' listening sockets live.
//!
//! Why these choices:
//! - A worker leads its own process group, so stopping it also stops what
//!   it started (a shell's children, php's helpers).
//! - A worker gets `PR_SET_PDEATHSIG(SIGKILL)`: if tern dies without
//!   stopping it (a SIGKILL, an abort), the kernel kills it. That needs
//!   `pre_exec` and so fork instead of posix_spawn; pools spawn rarely, so
//!   the cost (copying tern's page tables) does not matter. The signal fires
//!   when the spawning *thread* exits, which is why pools spawn on their
//!   manager thread.
//! - In the child, every descriptor above 2 is marked close-on-exec before
//!   exec: the worker inherits exactly its stdin, stdout and stderr, even
//!   descriptors tern itself inherited without close-on-exec.
//! - A worker is reaped only when it is stopped: until then an exited
//!   worker stays a zombie, which keeps its pid (and so its process-group
//!   id) from being reused while tern may still signal the group.

mod command;
mod socket_dir;
mod spawn;
mod terminate;

pub use command::Command;
pub use socket_dir::{remove_run_dir, SocketDir};
pub use spawn::{exited, spawn, Input, Output, Stdio3, Worker};
pub use terminate::{terminate, Termination};
