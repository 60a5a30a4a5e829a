//! The report's prose: the lines on the machine and the method at the top,
//! and the CPU caveat under each section where a gateway lets the CGI
//! programs' CPU escape the count.

use crate::config::SuiteConfig;
use crate::report::Footnote;
use crate::row::{Feature, Registry};
use crate::spec::ServerSpec;
use crate::{fcgi_app, fcgiwrap, php};

/// The CPU caveat of gateways whose children nobody reaps.
pub(super) fn cpu_footnotes(registry: &Registry, servers: &[&ServerSpec]) -> Vec<Footnote> {
    let mut out = Vec::new();
    for section in registry.sections() {
        let escaping: Vec<String> = servers
            .iter()
            .filter(|s| {
                registry
                    .rows()
                    .iter()
                    .any(|r| r.section == section && r.needs.is_cgi() && s.serves(r))
            })
            .filter_map(|s| {
                let g = s.cgi_gateway()?;
                g.children_cpu_escapes()
                    .then(|| format!("{}+{}", s.name(), g.label()))
            })
            .collect();
        if !escaping.is_empty() {
            out.push(Footnote {
                section: section.to_owned(),
                text: format!(
                    "server CPU of {} leaves out the CGI programs themselves: fcgiwrap's workers and Apache's cgid ignore SIGCHLD and never wait() for their children, so the children's CPU reaches no parent's cutime and escapes the process-tree count (peer-baseline.md §2.6); tern and lighttpd reap theirs, so their figures include the programs",
                    escaping.join(" and ")
                ),
            });
        }
    }
    out
}

pub(super) fn about(config: &SuiteConfig, wanted: &[Feature]) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut lines = vec![
        format!("machine: {cores} cores, Linux {}", kernel.trim()),
        format!(
            "method: tern bench, closed loop, HTTP/1.1; per cell {} round{} of {:.1} s measured after a {:.1} s warm-up; servers run in turn for each row",
            config.rounds,
            if config.rounds == 1 { "" } else { "s" },
            config.duration.as_secs_f64(),
            config.warmup.as_secs_f64()
        ),
        "figures: req/s (median, with min–max over rounds); MB/s with MB = 2^20 bytes (ab's Kbytes/sec / 1024); p50/p99 latency in ms from when each request was due; server CPU = user+system seconds of the server's process tree in the measured window, and µs per request".to_owned(),
    ];
    if wanted.contains(&Feature::Cgi) {
        lines.push(format!(
            "cgi: a process per request, C programs built with cc -O2 (\"Hello!\" and 65536 bytes); tern's CGI route, nginx via fcgiwrap ({} workers on a Unix socket, its CPU counted with nginx's), lighttpd mod_cgi, Apache mod_cgid",
            fcgiwrap::WORKERS
        ));
    }
    if wanted.contains(&Feature::CgiPlus) {
        lines.push(format!(
            "CGIplus: one C program answers as CGI under /cgi-bin/ (a process per request) and, under /cgiplus-bin/, as a CGIplus script started once and looping over requests in record mode (tern: 1 to {} processes per script)",
            fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::FastCgi) || wanted.contains(&Feature::FastCgiSpawned) {
        lines.push(format!(
            "FastCGI: a C responder on libfcgi (\"Hello!\" or 65536 bytes); under /fcgi/ {n} processes of it on a Unix socket, started by the suite for each server (tern keeps {n} connections open, each holding a process, so the servers cannot share one set), its CPU counted with the server's; tern with {n} pooled connections, the peers a connection per request; under /fcgi-spawn/ tern runs {n} processes of it itself",
            n = fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::PerlEngine) {
        lines.push(format!(
            "Perl: face2face.pl in tern's Perl run-time engine ({} processes) beside the same file as CGI (perl started per request)",
            fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::Wasm) {
        lines.push(
            "WebAssembly: WAT modules (\"Hello!\" and 65536 bytes, written as the CGI programs write them) in tern's wasm routes, a fresh sandboxed instance per request from wasmtime's pooling allocator, in tern's own process (its CPU is tern's)".to_owned(),
        );
    }
    if wanted.contains(&Feature::PhpFpm) || wanted.contains(&Feature::PhpCgi) {
        lines.push(format!(
            "PHP: a php-fpm started by the suite for each server (pm = static, {n} children, a Unix socket), its CPU counted with the server's; tern with {n} pooled connections; php-cgi as a CGI program per request (tern, lighttpd); php_info.php's length varies with each server's environment",
            n = php::FPM_CHILDREN
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerKind;
    use crate::spec::ServerKind;

    #[test]
    fn the_cpu_footnote_goes_under_sections_with_cgi_rows_and_names_the_leaky_gateways() {
        let registry = Registry::seed();
        let spec = |p: PeerKind| {
            ServerSpec::variants(ServerKind::Peer(p))
                .remove(0)
                .with_features(&Feature::GATEWAYS)
        };
        let (apache, lighttpd) = (spec(PeerKind::Apache2), spec(PeerKind::Lighttpd));
        let notes = cpu_footnotes(&registry, &[&apache, &lighttpd]);
        let sections: Vec<&str> = notes.iter().map(|n| n.section.as_str()).collect();
        assert_eq!(
            sections,
            ["cgi", "persistent", "engines", "wasm", "ssl", "webstone"],
            "{notes:?}"
        );
        assert!(notes.iter().all(|n| n
            .text
            .starts_with("server CPU of apache2+mod_cgid leaves out")));
        assert!(
            cpu_footnotes(&registry, &[&lighttpd]).is_empty(),
            "lighttpd reaps"
        );
        let mut static_only = registry.clone();
        static_only.retain_sections(&["static".to_owned()]);
        assert!(cpu_footnotes(&static_only, &[&apache]).is_empty());
    }
}
