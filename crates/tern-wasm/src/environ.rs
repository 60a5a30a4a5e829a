//! WASI's `environ_sizes_get` and `environ_get`, answered from the
//! request's [`CgiEnv`] block in place of wasmtime-wasi's own.
//!
//! Written by hand because wasmtime-wasi keeps the environment as a
//! `String` pair per variable, copied in from the caller's strings: for
//! the thirty-odd CGI variables of a request that is sixty allocations to
//! build and sixty to free, a third of the handler's own cost for a
//! "Hello!" module (measured with `perf`). The gateway already lays the
//! environment out as a C block (`NAME=VALUE\0` per variable), which is
//! exactly what `environ_get` writes into the module's memory; these two
//! functions copy it, and every other WASI function stays wasmtime-wasi's.
//!
//! WASI preview 1 (`wasi_snapshot_preview1`):
//! - `environ_sizes_get(count: *mut u32, size: *mut u32) -> errno` stores
//!   the number of variables and the size of the block;
//! - `environ_get(environ: *mut *mut u8, buf: *mut u8) -> errno` stores the
//!   block at `buf` and, at `environ`, a pointer to each entry.
//!
//! A pointer outside the module's memory answers `EFAULT` (21), as
//! wasmtime-wasi's own functions do; nothing is written then.

use tern_cgi::env::CgiEnv;
use wasmtime::{Caller, Extern, Linker};

use crate::store::State;

/// The WASI module both functions belong to.
const MODULE: &str = "wasi_snapshot_preview1";

/// `errno::success`.
const SUCCESS: i32 = 0;

/// `errno::fault`: a pointer outside the module's memory.
const FAULT: i32 = 21;

/// Puts both functions in `linker`, over wasmtime-wasi's (which must have
/// been added first).
pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap(
        MODULE,
        "environ_sizes_get",
        |mut caller: Caller<'_, State>, count: i32, size: i32| -> i32 {
            let env = &caller.data().env;
            let (n, len) = (env.len(), env.block().len());
            let (Ok(n), Ok(len)) = (u32::try_from(n), u32::try_from(len)) else {
                return FAULT;
            };
            let mut words = [0u8; 8];
            words[..4].copy_from_slice(&n.to_le_bytes());
            words[4..].copy_from_slice(&len.to_le_bytes());
            with_memory(&mut caller, |mem, _| {
                put(mem, count, &words[..4])?;
                put(mem, size, &words[4..])
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_get",
        |mut caller: Caller<'_, State>, environ: i32, buf: i32| -> i32 {
            with_memory(&mut caller, |mem, env| {
                write_environ(mem, env, environ, buf)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Runs `f` on the module's memory and the request's environment, or
/// answers `EFAULT` when the module exports no memory (a WASI command
/// always does; the route checked it at load).
fn with_memory(
    caller: &mut Caller<'_, State>,
    f: impl FnOnce(&mut [u8], &CgiEnv) -> Option<()>,
) -> i32 {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        return FAULT;
    };
    let (mem, state) = memory.data_and_store_mut(caller);
    match f(mem, &state.env) {
        Some(()) => SUCCESS,
        None => FAULT,
    }
}

/// The block at `buf`, and a pointer to each of its entries at `environ`;
/// `None` (nothing written) when either does not fit in `mem`.
fn write_environ(mem: &mut [u8], env: &CgiEnv, environ: i32, buf: i32) -> Option<()> {
    let block = env.block();
    let base = u32::try_from(buf).ok()?;
    let table = span(mem, environ, env.len().checked_mul(4)?)?;
    let data = span(mem, buf, block.len())?;
    // Both checked before either is written.
    mem[data].copy_from_slice(block);
    for (slot, offset) in mem[table].chunks_exact_mut(4).zip(env.offsets()) {
        let at = base.checked_add(u32::try_from(offset).ok()?)?;
        slot.copy_from_slice(&at.to_le_bytes());
    }
    Some(())
}

/// Stores `bytes` at `ptr`.
fn put(mem: &mut [u8], ptr: i32, bytes: &[u8]) -> Option<()> {
    let at = span(mem, ptr, bytes.len())?;
    mem[at].copy_from_slice(bytes);
    Some(())
}

/// `len` bytes at `ptr` (a wasm32 address, unsigned), if all in `mem`.
fn span(mem: &[u8], ptr: i32, len: usize) -> Option<std::ops::Range<usize>> {
    // A wasm32 pointer is an unsigned 32-bit offset carried in an i32.
    let start = usize::try_from(ptr as u32).ok()?;
    let end = start.checked_add(len)?;
    (end <= mem.len()).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_stay_inside_memory() {
        let mem = [0u8; 16];
        assert_eq!(span(&mem, 0, 16), Some(0..16));
        assert_eq!(span(&mem, 12, 4), Some(12..16));
        assert_eq!(span(&mem, 13, 4), None);
        // -1 is 0xffff_ffff, far past the end, not before the start.
        assert_eq!(span(&mem, -1, 1), None);
        assert_eq!(span(&mem, 16, 0), Some(16..16));
    }

    #[test]
    fn a_store_out_of_bounds_writes_nothing() {
        let mut mem = [7u8; 8];
        assert_eq!(put(&mut mem, 6, &[1, 2, 3, 4]), None);
        assert_eq!(mem, [7u8; 8]);
        assert_eq!(put(&mut mem, 4, &[1, 2, 3, 4]), Some(()));
        assert_eq!(mem, [7, 7, 7, 7, 1, 2, 3, 4]);
    }
}
