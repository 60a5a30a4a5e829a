//! `tern check` against `tern serve`: check builds every route as serving
//! does, stopping short of starting processes, so that what it accepts
//! serving can build.

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Output};

use super::*;

/// `tern check --config CONFIG`.
pub(crate) fn check(config: &Path) -> Output {
    Command::new(BIN)
        .args(["check", "--config", &config.to_string_lossy()])
        .output()
        .unwrap()
}

#[test]
fn check_builds_persistent_routes_without_starting_their_programs() {
    let dir = docroot(&[("index.html", b"hi")]);
    let started = dir.path().join("started");
    let app = dir.path().join("app.sh");
    std::fs::write(
        &app,
        format!("#!/bin/sh\ntouch '{}'\nsleep 5\n", started.display()),
    )
    .unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(dir.path().join("scripts")).unwrap();
    let site = format!(
        "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{app}\"]\nmin_processes = 2\n\
         [[site.route]]\nprefix = \"/plus\"\nhandler = \"cgiplus\"\ncommand = [\"{app}\"]\ndir = \"{{dir}}/scripts\"\nmin_processes = 2\n\
         [[site.route]]\nprefix = \"/php\"\nhandler = \"fastcgi\"\nconnect = \"127.0.0.1:9\"\nmin_connections = 1\n",
        app = app.display()
    );
    let path = dir.path().join("tern.toml");
    let text = config("", &site).replace("{dir}", &dir.path().to_string_lossy());
    std::fs::write(&path, text).unwrap();

    let out = check(&path);
    assert!(out.status.success(), "{out:?}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!started.exists(), "check ran a route's program");
}

#[test]
fn check_refuses_a_persistent_route_serving_could_not_start() {
    // A NUL in the prefix names the route's pool, which refuses to start:
    // `check` once said ok and `serve` failed. No request path holds a
    // control character, so the route could never have matched either.
    let dir = docroot(&[("index.html", b"hi")]);
    let site = "[[site.route]]\nprefix = \"/app\\u0000\"\nhandler = \"fastcgi\"\nconnect = \"127.0.0.1:9\"\n";
    let path = dir.path().join("tern.toml");
    let text = config("", site).replace("{dir}", &dir.path().to_string_lossy());
    std::fs::write(&path, text).unwrap();

    let out = check(&path);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tern.toml:7: site[0].route[0].prefix: a control character"),
        "{err}"
    );
}
