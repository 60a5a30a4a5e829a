//! Media types by file extension: a built-in table of the common web types,
//! with the site's `mime` overrides on top.

use std::collections::HashMap;

use http::HeaderValue;

/// What a file with no known extension is served as.
const DEFAULT: &str = "application/octet-stream";

/// The built-in map, sorted by extension (binary search). Text types carry
/// `charset=utf-8`, because browsers otherwise guess, and guessing is how
/// content sniffing attacks begin.
const TABLE: &[(&str, &str)] = &[
    ("7z", "application/x-7z-compressed"),
    ("aac", "audio/aac"),
    ("apng", "image/apng"),
    ("avif", "image/avif"),
    ("bmp", "image/bmp"),
    ("br", "application/x-brotli"),
    ("bz2", "application/x-bzip2"),
    ("cjs", "text/javascript; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("eot", "application/vnd.ms-fontobject"),
    ("epub", "application/epub+zip"),
    ("flac", "audio/flac"),
    ("gif", "image/gif"),
    ("gz", "application/gzip"),
    ("heic", "image/heic"),
    ("htm", "text/html; charset=utf-8"),
    ("html", "text/html; charset=utf-8"),
    ("ico", "image/x-icon"),
    ("ics", "text/calendar; charset=utf-8"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "text/javascript; charset=utf-8"),
    ("json", "application/json"),
    ("jsonld", "application/ld+json"),
    ("m4a", "audio/mp4"),
    ("m4v", "video/mp4"),
    ("map", "application/json"),
    ("md", "text/markdown; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("mov", "video/quicktime"),
    ("mp3", "audio/mpeg"),
    ("mp4", "video/mp4"),
    ("mpeg", "video/mpeg"),
    ("oga", "audio/ogg"),
    ("ogg", "audio/ogg"),
    ("ogv", "video/ogg"),
    ("opus", "audio/opus"),
    ("otf", "font/otf"),
    ("pdf", "application/pdf"),
    ("png", "image/png"),
    ("rss", "application/rss+xml"),
    ("rtf", "application/rtf"),
    ("svg", "image/svg+xml; charset=utf-8"),
    ("tar", "application/x-tar"),
    ("tif", "image/tiff"),
    ("tiff", "image/tiff"),
    ("toml", "application/toml"),
    ("ttf", "font/ttf"),
    ("txt", "text/plain; charset=utf-8"),
    ("wasm", "application/wasm"),
    ("wav", "audio/wav"),
    ("weba", "audio/webm"),
    ("webm", "video/webm"),
    ("webmanifest", "application/manifest+json"),
    ("webp", "image/webp"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("xhtml", "application/xhtml+xml; charset=utf-8"),
    ("xml", "application/xml; charset=utf-8"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("zip", "application/zip"),
    ("zst", "application/zstd"),
];

/// The media types one site uses: the built-in table plus its overrides.
#[derive(Debug, Clone)]
pub(crate) struct MimeMap {
    overrides: HashMap<String, HeaderValue>,
}

impl MimeMap {
    /// Builds the map; an override that is not a valid header value is
    /// returned as `Err((extension, value))`.
    pub(crate) fn new<'a>(
        overrides: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Result<MimeMap, (String, String)> {
        let mut map = HashMap::new();
        for (ext, ty) in overrides {
            let value = HeaderValue::from_str(ty).map_err(|_| (ext.clone(), ty.clone()))?;
            map.insert(ext.to_ascii_lowercase(), value);
        }
        Ok(MimeMap { overrides: map })
    }

    /// The `Content-Type` for a file name (only its last extension counts).
    pub(crate) fn for_name(&self, name: &str) -> HeaderValue {
        let Some(ext) = extension(name) else {
            return HeaderValue::from_static(DEFAULT);
        };
        if !self.overrides.is_empty() {
            if let Some(v) = self.overrides.get(&ext.to_ascii_lowercase()) {
                return v.clone();
            }
        }
        HeaderValue::from_static(builtin(ext).unwrap_or(DEFAULT))
    }
}

/// The extension of the last path segment, if it has one (`.hidden` has none).
fn extension(name: &str) -> Option<&str> {
    let last = name.rsplit('/').next()?;
    match last.rfind('.') {
        Some(0) | None => None,
        Some(dot) => Some(&last[dot + 1..]),
    }
}

fn builtin(ext: &str) -> Option<&'static str> {
    TABLE
        .binary_search_by(|(e, _)| cmp_ignore_case(e, ext))
        .ok()
        .map(|i| TABLE[i].1)
}

fn cmp_ignore_case(table: &str, ext: &str) -> std::cmp::Ordering {
    let a = table.bytes();
    let b = ext.bytes().map(|c| c.to_ascii_lowercase());
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> MimeMap {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        MimeMap::new(owned.iter().map(|(a, b)| (a, b))).unwrap()
    }

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn common_types_and_charset() {
        let m = map(&[]);
        assert_eq!(m.for_name("/a/index.html"), "text/html; charset=utf-8");
        assert_eq!(m.for_name("/app.MJS"), "text/javascript; charset=utf-8");
        assert_eq!(m.for_name("/x.woff2"), "font/woff2");
        assert_eq!(m.for_name("/x.wasm"), "application/wasm");
        assert_eq!(m.for_name("/x.tar.gz"), "application/gzip");
    }

    #[test]
    fn unknown_and_extensionless_are_octet_stream() {
        let m = map(&[]);
        assert_eq!(m.for_name("/x.unknownext"), DEFAULT);
        assert_eq!(m.for_name("/README"), DEFAULT);
        assert_eq!(m.for_name("/.profile"), DEFAULT);
        assert_eq!(m.for_name("/dir.d/file"), DEFAULT);
    }

    #[test]
    fn overrides_win_over_the_table() {
        let m = map(&[("html", "text/x-custom"), ("foo", "application/foo")]);
        assert_eq!(m.for_name("/a.HTML"), "text/x-custom");
        assert_eq!(m.for_name("/a.foo"), "application/foo");
        assert_eq!(m.for_name("/a.css"), "text/css; charset=utf-8");
    }

    #[test]
    fn invalid_override_is_refused() {
        let bad = [("x".to_string(), "a\nb".to_string())];
        assert!(MimeMap::new(bad.iter().map(|(a, b)| (a, b))).is_err());
    }
}
