//! `handler = "wasm"` routes: the module, the read-only directory it may
//! see, its limits, and the environment policy shared with CGI.
//!
//! Only the module's existence is checked here: compiling it (and finding
//! its exports) is the handler's work when tern builds the route, so that
//! `tern check` stays fast and the config crate free of wasmtime.

use std::path::Path;
use std::time::Duration;

use crate::gateway::directory;
use crate::load::LoadOptions;
use crate::model::WasmConfig;
use crate::walk::{Table, Walker};

/// One WebAssembly page: the smallest memory a module can have.
const PAGE: u64 = 64 * 1024;
/// The most a 32-bit linear memory can address.
const MAX_MEMORY: u64 = 4 << 30;
/// Most instances of one route at once: each reserves address space in the
/// pooling allocator.
const MAX_CONCURRENT: u64 = 1024;

/// The settings of a WebAssembly route. Every key is read even when an
/// earlier one failed, so that each error is reported.
pub(crate) fn walk_wasm(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    base: &Path,
    opts: LoadOptions,
) -> Option<WasmConfig> {
    let module = match w.string_spanned(t, "module") {
        Some((m, span)) => {
            let path = base.join(m);
            let path = std::path::absolute(&path).unwrap_or(path);
            if opts.check_paths {
                match std::fs::metadata(&path) {
                    Ok(md) if md.is_file() => Some(path),
                    Ok(_) => {
                        w.error(
                            span,
                            t.key_path("module"),
                            format!("`{}` is not a file", path.display()),
                        );
                        None
                    }
                    Err(e) => {
                        w.error(
                            span,
                            t.key_path("module"),
                            format!("`{}`: {e}", path.display()),
                        );
                        None
                    }
                }
            } else {
                Some(path)
            }
        }
        None if t.contains("module") => None,
        None => {
            w.error(
                t.span(),
                t.key_path("module"),
                "missing (the module to run, e.g. \"hello.wasm\")",
            );
            None
        }
    };
    let dir = w
        .string_spanned(t, "dir")
        .map(|(d, span)| directory(w, t, base.join(d), span, opts));
    let memory_limit = match w.size(t, "memory_limit", PAGE) {
        Some(n) if n > MAX_MEMORY => {
            w.error(
                t.span(),
                t.key_path("memory_limit"),
                format!("{n} is more than a 32-bit memory can hold ({MAX_MEMORY})"),
            );
            None
        }
        Some(n) => Some(n),
        None if t.contains("memory_limit") => None,
        None => Some(64 << 20),
    };
    let timeout = w
        .duration(t, "timeout", true)
        .unwrap_or(Duration::from_secs(10));
    let max_output_bytes = w.size(t, "max_output_bytes", 1).unwrap_or(16 << 20);
    let admission = crate::persistent::admission(w, t, MAX_CONCURRENT);
    let env = crate::persistent::env_policy(w, t, false);
    let max_stderr_bytes = w.size(t, "max_stderr_bytes", 0).unwrap_or(64 * 1024);
    Some(WasmConfig {
        module: module?,
        document_root: site_root?.to_path_buf(),
        dir,
        memory_limit: memory_limit?,
        timeout,
        max_output_bytes,
        admission,
        env,
        max_stderr_bytes,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use crate::model::HandlerConfig;
    use crate::{parse, LoadOptions};

    fn load(route: &str) -> Result<HandlerConfig, String> {
        let src = format!(
            "[[site]]\nroot = \"/srv/www\"\n[[site.route]]\nprefix = \"/w\"\nhandler = \"wasm\"\n{route}"
        );
        let opts = LoadOptions { check_paths: false };
        parse(&src, Path::new("/etc/tern/tern.toml"), opts)
            .map(|c| c.sites[0].routes[0].handler.clone())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_relative_module() {
        let HandlerConfig::Wasm(c) = load("module = \"app.wasm\"").unwrap() else {
            panic!("not a wasm route");
        };
        assert_eq!(c.module, Path::new("/etc/tern/app.wasm"));
        assert_eq!(c.memory_limit, 64 << 20);
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.max_output_bytes, 16 << 20);
        assert_eq!(c.admission.max_concurrent, 32);
        assert_eq!(c.admission.queue, 100);
        assert_eq!(c.admission.queue_timeout, Duration::from_secs(10));
        assert_eq!(c.dir, None);
        assert!(c.env.refuse_shellshock);
        assert!(!c.env.pass_authorization);
    }

    #[test]
    fn settings_are_read() {
        let r = load(
            "module = \"/m.wat\"\nmemory_limit = \"1M\"\ntimeout = \"250ms\"\nmax_output_bytes = 100\nmax_concurrent = 4\ndir = \"data\"\nqueue = 3\nqueue_timeout = \"2s\"",
        );
        let HandlerConfig::Wasm(c) = r.unwrap() else {
            panic!("not a wasm route");
        };
        assert_eq!(c.memory_limit, 1 << 20);
        assert_eq!(c.timeout, Duration::from_millis(250));
        assert_eq!(c.max_output_bytes, 100);
        assert_eq!(c.admission.max_concurrent, 4);
        assert_eq!(c.admission.queue, 3);
        assert_eq!(c.admission.queue_timeout, Duration::from_secs(2));
        assert_eq!(c.dir.as_deref(), Some(Path::new("/etc/tern/data")));
    }

    #[test]
    fn errors_name_the_key() {
        let e = load("memory_limit = \"8G\"").unwrap_err();
        assert!(e.contains("module"), "{e}");
        assert!(e.contains("memory_limit"), "{e}");
        let e = load("module = \"a.wasm\"\nmax_concurrent = 0").unwrap_err();
        assert!(e.contains("max_concurrent"), "{e}");
        let e = load("module = \"a.wasm\"\nqueue = 0").unwrap_err();
        assert!(e.contains("queue"), "{e}");
    }
}
