//! JSON: the whole [`RunResult`], histograms serialised (HdrHistogram V2 +
//! DEFLATE, base64), so that `tern bench merge` can add runs exactly.

use std::path::Path;

use crate::result::{RunResult, FORMAT};
use crate::Error;

/// Pretty-printed JSON, ending with a newline.
pub fn render(r: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(r).expect("a RunResult always serialises");
    text.push('\n');
    text
}

/// Parses what [`render`] wrote; `path` names the source in errors.
pub fn parse(text: &str, path: &Path) -> Result<RunResult, Error> {
    let bad = |message: String| Error::ResultFormat {
        path: path.to_owned(),
        message,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(bad(format!("format {other:?}, expected {FORMAT:?}"))),
        None => return Err(bad("no \"format\" field".to_owned())),
    }
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}

/// Reads a result file.
pub fn read(path: &Path) -> Result<RunResult, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::File {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path)
}
