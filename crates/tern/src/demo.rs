//! The built-in demo site: files compiled into the binary and written to a
//! temporary directory at start, removed at exit. It shows each handler kind.

use std::io;
use std::path::Path;

/// (path inside the docroot, contents)
const FILES: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("../demo/index.html")),
    ("style.css", include_bytes!("../demo/style.css")),
    ("hello.txt", include_bytes!("../demo/hello.txt")),
    (
        "files/readme.txt",
        include_bytes!("../demo/files/readme.txt"),
    ),
];

/// Writes the demo site into a new temporary directory.
pub(crate) fn write() -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("tern-demo-").tempdir()?;
    write_into(dir.path())?;
    Ok(dir)
}

fn write_into(root: &Path) -> io::Result<()> {
    for (name, body) in FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, body)?;
    }
    Ok(())
}
