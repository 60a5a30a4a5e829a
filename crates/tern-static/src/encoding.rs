//! Content codings of precompressed sidecar files (`x.css.br`, `.zst`, `.gz`)
//! and the choice among them from a request's `Accept-Encoding`
//! (RFC 9110 §12.5.3).

use http::header::{HeaderMap, ACCEPT_ENCODING};

/// A representation's content coding. `Identity` is the file itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Coding {
    Identity,
    Brotli,
    Zstd,
    Gzip,
}

impl Coding {
    /// Every coding, in the order used to index per-coding arrays.
    pub(crate) const ALL: [Coding; 4] =
        [Coding::Identity, Coding::Brotli, Coding::Zstd, Coding::Gzip];

    /// The sidecar codings, most preferred first (smallest output first:
    /// br, then zstd, then gzip; h2o and Caddy use the same order).
    pub(crate) const SIDECARS: [Coding; 3] = [Coding::Brotli, Coding::Zstd, Coding::Gzip];

    /// Index into per-coding arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The file-name suffix of the sidecar.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Coding::Identity => "",
            Coding::Brotli => ".br",
            Coding::Zstd => ".zst",
            Coding::Gzip => ".gz",
        }
    }

    /// The `Content-Encoding` token, `None` for identity.
    pub(crate) fn token(self) -> Option<&'static str> {
        match self {
            Coding::Identity => None,
            Coding::Brotli => Some("br"),
            Coding::Zstd => Some("zstd"),
            Coding::Gzip => Some("gzip"),
        }
    }
}

/// The set of sidecar codings present for one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CodingSet(u8);

impl CodingSet {
    pub(crate) fn insert(&mut self, c: Coding) {
        self.0 |= 1 << c.index();
    }

    pub(crate) fn contains(self, c: Coding) -> bool {
        self.0 & (1 << c.index()) != 0
    }

    /// Whether any sidecar exists: then every response varies on
    /// `Accept-Encoding`, even one that sends the identity file.
    pub(crate) fn any_sidecar(self) -> bool {
        Coding::SIDECARS.iter().any(|c| self.contains(*c))
    }
}

/// Quality values in thousandths (`q=0.5` is 500), as RFC 9110 §12.4.2 allows
/// at most three decimals.
type Q = u16;

/// A parsed `Accept-Encoding`: the quality given to each coding we can
/// serve. `None` means the coding was not named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AcceptEncoding {
    q: [Option<Q>; 4],
    star: Option<Q>,
}

impl AcceptEncoding {
    /// Reads every `Accept-Encoding` field of the request. Members that do
    /// not parse are skipped; they cannot make a coding acceptable.
    pub(crate) fn from_headers(headers: &HeaderMap) -> AcceptEncoding {
        let mut acc = AcceptEncoding::default();
        for value in headers.get_all(ACCEPT_ENCODING) {
            let Ok(s) = value.to_str() else { continue };
            for member in s.split(',') {
                acc.add(member);
            }
        }
        acc
    }

    fn add(&mut self, member: &str) {
        let mut parts = member.split(';');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            return;
        }
        let mut q = 1000;
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            if k.trim().eq_ignore_ascii_case("q") {
                match parse_q(v.trim()) {
                    Some(v) => q = v,
                    None => return,
                }
            }
        }
        let is = |token: &str| name.eq_ignore_ascii_case(token);
        let slot = if is("br") {
            &mut self.q[Coding::Brotli.index()]
        } else if is("gzip") || is("x-gzip") {
            &mut self.q[Coding::Gzip.index()]
        } else if is("zstd") {
            &mut self.q[Coding::Zstd.index()]
        } else if is("identity") {
            &mut self.q[Coding::Identity.index()]
        } else if name == "*" {
            &mut self.star
        } else {
            return;
        };
        // A coding named twice keeps its best weight.
        *slot = Some(slot.map_or(q, |old| old.max(q)));
    }

    /// The weight the client gives `c`: its own entry, else `*`, else the
    /// defaults of §12.5.3 (identity is acceptable unless excluded; with no
    /// header at all we still send identity, which every client takes).
    fn weight(&self, c: Coding) -> Q {
        if let Some(q) = self.q[c.index()] {
            return q;
        }
        if let Some(q) = self.star {
            return q;
        }
        match c {
            // The lowest weight above zero: acceptable, but any coding the
            // client names explicitly is preferred.
            Coding::Identity => 1,
            _ => 0,
        }
    }

    /// Chooses the representation to send among `available` sidecars and
    /// the identity file: the highest weight wins, ties go to the first in
    /// br > zstd > gzip > identity. When nothing is acceptable (for example
    /// `identity;q=0` and no sidecar) the identity file is sent anyway, as
    /// RFC 9110 §12.5.3 permits instead of a 415.
    pub(crate) fn choose(&self, available: CodingSet) -> Coding {
        let mut best = (Coding::Identity, self.weight(Coding::Identity));
        for c in Coding::SIDECARS {
            if !available.contains(c) {
                continue;
            }
            let w = self.weight(c);
            if w > 0 && w >= best.1 {
                // `>=` prefers a sidecar over identity at equal weight; the
                // sidecar loop visits codings in preference order, so a
                // later sidecar replaces an earlier one only when strictly
                // better.
                if best.0 == Coding::Identity || w > best.1 {
                    best = (c, w);
                }
            }
        }
        best.0
    }
}

/// `q` values: `0`, `1`, `0.x` with up to three decimals, `1.000`.
fn parse_q(v: &str) -> Option<Q> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths: Q = 0;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += Q::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn accept(v: &str) -> AcceptEncoding {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        AcceptEncoding::from_headers(&h)
    }

    fn all() -> CodingSet {
        let mut s = CodingSet::default();
        for c in Coding::SIDECARS {
            s.insert(c);
        }
        s
    }

    fn only(cs: &[Coding]) -> CodingSet {
        let mut s = CodingSet::default();
        for c in cs {
            s.insert(*c);
        }
        s
    }

    #[test]
    fn q_values_parse() {
        assert_eq!(parse_q("1"), Some(1000));
        assert_eq!(parse_q("1.000"), Some(1000));
        assert_eq!(parse_q("0.5"), Some(500));
        assert_eq!(parse_q("0.125"), Some(125));
        assert_eq!(parse_q("0"), Some(0));
        assert_eq!(parse_q("1.5"), None);
        assert_eq!(parse_q("0.1234"), None);
        assert_eq!(parse_q("x"), None);
    }

    #[test]
    fn preference_among_equal_weights() {
        assert_eq!(accept("gzip, zstd, br").choose(all()), Coding::Brotli);
        assert_eq!(accept("gzip, zstd").choose(all()), Coding::Zstd);
        assert_eq!(accept("gzip").choose(all()), Coding::Gzip);
        assert_eq!(accept("br").choose(only(&[Coding::Gzip])), Coding::Identity);
    }

    #[test]
    fn q_values_decide() {
        assert_eq!(accept("br;q=0.5, gzip").choose(all()), Coding::Gzip);
        assert_eq!(accept("br;q=0, gzip;q=0.1").choose(all()), Coding::Gzip);
        assert_eq!(accept("br;q=0,gzip;q=0").choose(all()), Coding::Identity);
        assert_eq!(
            accept("gzip;q=0.2, identity;q=0.5").choose(all()),
            Coding::Identity
        );
        assert_eq!(
            accept("gzip;q=0.5, identity;q=0.5").choose(all()),
            Coding::Gzip
        );
    }

    #[test]
    fn star_and_identity() {
        assert_eq!(accept("*").choose(all()), Coding::Brotli);
        assert_eq!(accept("*;q=0, gzip").choose(all()), Coding::Gzip);
        assert_eq!(accept("identity").choose(all()), Coding::Identity);
        assert_eq!(accept("br;q=0, *").choose(all()), Coding::Zstd);
        // Nothing acceptable: identity is sent rather than a 415.
        assert_eq!(
            accept("identity;q=0").choose(CodingSet::default()),
            Coding::Identity
        );
    }

    #[test]
    fn absent_or_garbage_means_identity() {
        assert_eq!(AcceptEncoding::default().choose(all()), Coding::Identity);
        assert_eq!(accept("").choose(all()), Coding::Identity);
        assert_eq!(accept("br;q=2").choose(all()), Coding::Identity);
        assert_eq!(accept("compress, deflate").choose(all()), Coding::Identity);
    }

    #[test]
    fn case_and_aliases() {
        assert_eq!(accept("GZIP").choose(all()), Coding::Gzip);
        assert_eq!(accept("x-gzip").choose(all()), Coding::Gzip);
        assert_eq!(accept("Br ; Q=0.9").choose(all()), Coding::Brotli);
    }

    #[test]
    fn several_fields_combine() {
        let mut h = HeaderMap::new();
        h.append(ACCEPT_ENCODING, HeaderValue::from_static("gzip;q=0.5"));
        h.append(ACCEPT_ENCODING, HeaderValue::from_static("zstd"));
        assert_eq!(AcceptEncoding::from_headers(&h).choose(all()), Coding::Zstd);
    }
}
