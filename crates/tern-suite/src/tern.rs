//! tern as the suite runs it: `BINARY serve --config FILE [--no-cache]`,
//! the file written from the run's gateways ([`Gateway`]) as the peers'
//! configs are: the docroot as its one site and a route for each gateway
//! its rows need (`/cgi-bin` as CGI, `/cgiplus-bin` as CGIplus, FastCGI to
//! a responder the suite started for it and to processes it runs itself,
//! the Perl engine, php-fpm, php-cgi, and one route per WebAssembly
//! module). The suite depends on no server crate, so the file is plain
//! TOML in tern's documented format.

use std::path::Path;

use crate::fcgi_app;
use crate::gateway::Gateway;
use crate::peer::TlsListen;
use crate::php::FPM_CHILDREN;
use crate::row::{wasm_module_path, Feature, WASM_MODULES};

/// tern's config for the suite: one listener on 127.0.0.1:`port` (and a
/// TLS one with `tls`), the docroot as the one site, and a route for each gateway. Script
/// directories are the docroot's directories named after the prefixes.
/// Pools match the backends: as many connections to the FastCGI
/// responder and php-fpm as they have processes, as many processes of its
/// own for the spawned responder and the Perl engine; CGIplus scripts
/// start one process each and grow to as many on demand.
pub fn tern_config(
    docroot: &Path,
    port: u16,
    tls: Option<TlsListen<'_>>,
    gateways: &[Gateway<'_>],
) -> String {
    let path = |p: &Path| toml_string(&p.display().to_string());
    let scripts = |f: Feature| path(&docroot.join(&f.prefix()[1..]));
    let mut t = format!("[[listen]]\naddress = \"127.0.0.1:{port}\"\n");
    if let Some(tls) = tls {
        t.push_str(&format!(
            "\n[[listen]]\naddress = \"127.0.0.1:{}\"\n[listen.tls]\ncertificates = [{{ cert = {}, key = {} }}]\n",
            tls.port,
            path(tls.cert),
            path(tls.key)
        ));
    }
    t.push_str(&format!("\n[[site]]\nroot = {}\n", path(docroot)));
    for g in gateways {
        let f = g.feature();
        if let Gateway::Wasm = g {
            // A wasm route runs one module: a route per module.
            for stem in WASM_MODULES {
                t.push_str(&format!(
                    "\n[[site.route]]\nprefix = \"{}/{stem}\"\nhandler = \"wasm\"\nmodule = {}\n",
                    f.prefix(),
                    path(&docroot.join(wasm_module_path(stem)))
                ));
            }
            continue;
        }
        t.push_str("\n[[site.route]]\n");
        if f == Feature::PhpFpm {
            // Every *.php but php-cgi's, whose prefix wins over an extension.
            t.push_str("extension = \"php\"\n");
        } else {
            t.push_str(&format!("prefix = \"{}\"\n", f.prefix()));
        }
        t.push_str(&match *g {
            Gateway::Cgi { .. } => format!("handler = \"cgi\"\ndir = {}\n", scripts(f)),
            Gateway::CgiPlus => format!(
                "handler = \"cgiplus\"\ndir = {}\nmin_processes = 1\nmax_processes = {}\n",
                scripts(f),
                fcgi_app::PROCESSES
            ),
            Gateway::FastCgi { socket } => format!(
                "handler = \"fastcgi\"\nconnect = {}\nmax_connections = {}\n",
                toml_string(&format!("unix:{}", socket.display())),
                fcgi_app::PROCESSES
            ),
            Gateway::FastCgiSpawned { program } => format!(
                "handler = \"fastcgi\"\ncommand = [{}]\nenv = {{ FCGI_WORKERS = \"1\" }}\nmin_processes = {n}\nmax_processes = {n}\n",
                path(program),
                n = fcgi_app::PROCESSES
            ),
            Gateway::PerlEngine => format!(
                "handler = \"cgiplus\"\nengine = \"perl\"\ndir = {}\nmin_processes = {n}\nmax_processes = {n}\n",
                scripts(f),
                n = fcgi_app::PROCESSES
            ),
            Gateway::PhpFpm { socket } => format!(
                "handler = \"fastcgi\"\nconnect = {}\ndir = {}\nmax_connections = {FPM_CHILDREN}\n",
                toml_string(&format!("unix:{}", socket.display())),
                path(docroot)
            ),
            Gateway::PhpCgi { program } => format!(
                "handler = \"cgi\"\ndir = {}\ninterpreter = {}\n",
                scripts(f),
                path(program)
            ),
            // Written above.
            Gateway::Wasm => String::new(),
        });
    }
    t
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tern_config_has_the_site_and_the_cgi_route() {
        let cgi = [Gateway::Cgi { fcgiwrap: None }];
        let t = tern_config(Path::new("/tmp/s \"q\"/www"), 18081, None, &cgi);
        assert_eq!(
            t,
            "[[listen]]\naddress = \"127.0.0.1:18081\"\n\n[[site]]\nroot = \"/tmp/s \\\"q\\\"/www\"\n\n\
             [[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"/tmp/s \\\"q\\\"/www/cgi-bin\"\n"
        );
        assert!(!tern_config(Path::new("/w"), 1, None, &[]).contains("site.route"));
        let tls = TlsListen {
            port: 18443,
            cert: Path::new("/t/cert.pem"),
            key: Path::new("/t/key.pem"),
        };
        assert_eq!(
            tern_config(Path::new("/w"), 1, Some(tls), &[]),
            "[[listen]]\naddress = \"127.0.0.1:1\"\n\n[[listen]]\naddress = \"127.0.0.1:18443\"\n[listen.tls]\n\
             certificates = [{ cert = \"/t/cert.pem\", key = \"/t/key.pem\" }]\n\n[[site]]\nroot = \"/w\"\n"
        );
    }

    #[test]
    fn tern_config_routes_every_persistent_gateway() {
        let gateways = [
            Gateway::CgiPlus,
            Gateway::FastCgi {
                socket: Path::new("/s/fcgi-app.sock"),
            },
            Gateway::FastCgiSpawned {
                program: Path::new("/s/bin/fcgi-app"),
            },
            Gateway::PerlEngine,
            Gateway::PhpFpm {
                socket: Path::new("/s/php-fpm.sock"),
            },
            Gateway::PhpCgi {
                program: Path::new("/usr/bin/php-cgi"),
            },
            Gateway::Wasm,
        ];
        let t = tern_config(Path::new("/w"), 1, None, &gateways);
        let routes: Vec<&str> = t.split("\n[[site.route]]\n").skip(1).collect();
        assert_eq!(
            routes,
            [
                "prefix = \"/cgiplus-bin\"\nhandler = \"cgiplus\"\ndir = \"/w/cgiplus-bin\"\nmin_processes = 1\nmax_processes = 4\n",
                "prefix = \"/fcgi\"\nhandler = \"fastcgi\"\nconnect = \"unix:/s/fcgi-app.sock\"\nmax_connections = 4\n",
                "prefix = \"/fcgi-spawn\"\nhandler = \"fastcgi\"\ncommand = [\"/s/bin/fcgi-app\"]\nenv = { FCGI_WORKERS = \"1\" }\nmin_processes = 4\nmax_processes = 4\n",
                "prefix = \"/rte\"\nhandler = \"cgiplus\"\nengine = \"perl\"\ndir = \"/w/rte\"\nmin_processes = 4\nmax_processes = 4\n",
                "extension = \"php\"\nhandler = \"fastcgi\"\nconnect = \"unix:/s/php-fpm.sock\"\ndir = \"/w\"\nmax_connections = 4\n",
                "prefix = \"/phpcgi\"\nhandler = \"cgi\"\ndir = \"/w/phpcgi\"\ninterpreter = \"/usr/bin/php-cgi\"\n",
                "prefix = \"/wasm/hello\"\nhandler = \"wasm\"\nmodule = \"/w/wasm/hello.wat\"\n",
                "prefix = \"/wasm/64k\"\nhandler = \"wasm\"\nmodule = \"/w/wasm/64k.wat\"\n",
            ]
        );
    }
}
