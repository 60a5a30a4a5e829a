//! Directory listings: reading a directory's entries (beneath the root, by
//! descriptor) and rendering them as an HTML page whose names are escaped
//! for HTML and percent-encoded in links.

use std::fmt::Write as _;
use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, UNIX_EPOCH};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use rustix::fs::{AtFlags, Dir, FileType};

/// Characters left as they are in a path segment: RFC 3986 unreserved.
/// Everything else is encoded, which also keeps a name like `a:b` from
/// reading as a URI scheme in a relative link.
pub(crate) const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One listed name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) name: String,
    pub(crate) is_dir: bool,
    pub(crate) size: u64,
    pub(crate) mtime: i64,
}

/// What a listing shows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// Show names starting with `.`.
    pub(crate) dotfiles: bool,
    /// Show symlinks (they are only servable when followed).
    pub(crate) symlinks: bool,
}

/// Reads the entries of an open directory. Names that are not UTF-8 are
/// left out: no decoded request path could name them.
pub(crate) fn read(dir: &OwnedFd, policy: Policy) -> io::Result<Vec<Item>> {
    let mut items = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." || (name.starts_with('.') && !policy.dotfiles) {
            continue;
        }
        let kind = entry.file_type();
        if kind == FileType::Symlink && !policy.symlinks {
            continue;
        }
        // Follow a shown symlink to describe its target; a dangling one is
        // listed as a plain name.
        let flags = if kind == FileType::Symlink {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let (is_dir, size, mtime) = match rustix::fs::statat(dir, name, flags) {
            Ok(st) => {
                let t = FileType::from_raw_mode(st.st_mode);
                if t != FileType::Directory && t != FileType::RegularFile {
                    continue;
                }
                (t == FileType::Directory, st.st_size as u64, st.st_mtime)
            }
            Err(_) => (false, 0, 0),
        };
        items.push(Item {
            name: name.to_owned(),
            is_dir,
            size,
            mtime,
        });
    }
    Ok(items)
}

/// Renders the listing of `dir_path` (the decoded request path, ending in
/// `/`): directories first, then files, each group sorted by name.
pub(crate) fn render(dir_path: &str, mut items: Vec<Item>) -> String {
    items.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
    let title = escape(dir_path);
    let mut html = String::with_capacity(512 + items.len() * 160);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width\">\n\
         <title>Index of {title}</title>\n</head>\n<body>\n<h1>Index of {title}</h1>\n\
         <table>\n<tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n"
    );
    if dir_path != "/" {
        html.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for item in &items {
        let slash = if item.is_dir { "/" } else { "" };
        let href = utf8_percent_encode(&item.name, SEGMENT);
        let size = if item.is_dir {
            "-".to_owned()
        } else {
            item.size.to_string()
        };
        let _ = writeln!(
            html,
            "<tr><td><a href=\"./{href}{slash}\">{}{slash}</a></td><td>{size}</td><td>{}</td></tr>",
            escape(&item.name),
            date(item.mtime),
        );
    }
    html.push_str("</table>\n</body>\n</html>\n");
    html
}

fn date(mtime: i64) -> String {
    let secs = u64::try_from(mtime).unwrap_or(0);
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Escapes text for HTML content and double-quoted attributes.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, is_dir: bool) -> Item {
        Item {
            name: name.to_owned(),
            is_dir,
            size: 3,
            mtime: 0,
        }
    }

    #[test]
    fn names_are_escaped_and_encoded() {
        let html = render(
            "/a&b/",
            vec![
                item("<script>alert(1)</script>", false),
                item("x y\"", true),
            ],
        );
        assert!(html.contains("<title>Index of /a&amp;b/</title>"));
        assert!(html.contains(
            "<a href=\"./%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">&lt;script&gt;alert(1)&lt;/script&gt;</a>"
        ));
        assert!(html.contains("<a href=\"./x%20y%22/\">x y&quot;/</a>"));
        assert!(!html.contains("<script>"));
    }

    #[test]
    fn directories_first_then_names() {
        let html = render(
            "/",
            vec![item("b", false), item("a", false), item("z", true)],
        );
        let (z, a, b) = (
            html.find(">z/<").unwrap(),
            html.find(">a<").unwrap(),
            html.find(">b<").unwrap(),
        );
        assert!(z < a && a < b);
        assert!(!html.contains("../"));
    }

    #[test]
    fn colon_cannot_become_a_scheme() {
        let html = render("/d/", vec![item("javascript:alert(1)", false)]);
        assert!(html.contains("href=\"./javascript%3Aalert%281%29\""));
        assert!(html.contains("href=\"../\""));
    }
}
