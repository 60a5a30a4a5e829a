//! The servers of a run, as descriptions: which server ([`ServerKind`]:
//! tern or a peer) in which variant ([`ServerSpec`]: file cache on or off,
//! and the gateway features it is set up with), and which rows each
//! variant takes part in. Nothing here starts anything.

use std::path::PathBuf;

use crate::peer::{CgiGateway, PeerKind};
use crate::row::{CacheMode, Feature, RowSpec};

/// Which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKind {
    /// tern, started as `BINARY serve --config FILE [--no-cache]` with a
    /// config from [`crate::tern::tern_config`].
    Tern {
        /// The tern executable.
        binary: PathBuf,
    },
    /// A peer.
    Peer(PeerKind),
}

/// A server in one variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Which server.
    pub kind: ServerKind,
    /// Cache variant; `None` for servers without a knob (they take the
    /// cache-on rows as they are).
    pub cache: Option<CacheMode>,
    /// The gateway features it is set up with (so it takes their rows).
    pub features: Vec<Feature>,
}

impl ServerSpec {
    /// "tern", "nginx", ...
    pub fn name(&self) -> &'static str {
        match &self.kind {
            ServerKind::Tern { .. } => "tern",
            ServerKind::Peer(p) => p.name(),
        }
    }

    /// "on", "off" or "default".
    pub fn cache_label(&self) -> &'static str {
        match self.cache {
            Some(CacheMode::On) => "on",
            Some(CacheMode::Off) => "off",
            None => "default",
        }
    }

    /// A unique, file-name-safe label: "nginx-cache-off".
    pub fn id(&self) -> String {
        format!("{}-cache-{}", self.name(), self.cache_label())
    }

    /// Whether the server can serve rows that need `feature`.
    pub fn offers(&self, feature: Feature) -> bool {
        feature == Feature::StaticFiles || self.features.contains(&feature)
    }

    /// Whether this variant takes part in `row`.
    pub fn serves(&self, row: &RowSpec) -> bool {
        self.offers(row.needs)
            && match row.cache {
                CacheMode::On => self.cache != Some(CacheMode::Off),
                CacheMode::Off => self.cache == Some(CacheMode::Off),
            }
    }

    /// Whether a server of `kind` can be set up to serve `feature` (tern:
    /// everything; peers: see [`PeerKind::offers`]).
    pub fn can_offer(kind: &ServerKind, feature: Feature) -> bool {
        match kind {
            ServerKind::Tern { .. } => true,
            ServerKind::Peer(p) => p.offers(feature),
        }
    }

    /// How it runs CGI, for notes (`None` for tern and servers without CGI).
    pub fn cgi_gateway(&self) -> Option<CgiGateway> {
        match &self.kind {
            ServerKind::Peer(p) if self.offers(Feature::Cgi) => p.cgi_gateway(),
            _ => None,
        }
    }

    /// The variants to run for a server kind: two with a cache knob, else
    /// one; all without gateways (see [`ServerSpec::with_features`]).
    pub fn variants(kind: ServerKind) -> Vec<ServerSpec> {
        let knob = match &kind {
            ServerKind::Tern { .. } => true,
            ServerKind::Peer(p) => p.has_cache_knob(),
        };
        if knob {
            vec![
                ServerSpec {
                    kind: kind.clone(),
                    cache: Some(CacheMode::On),
                    features: Vec::new(),
                },
                ServerSpec {
                    kind,
                    cache: Some(CacheMode::Off),
                    features: Vec::new(),
                },
            ]
        } else {
            vec![ServerSpec {
                kind,
                cache: None,
                features: Vec::new(),
            }]
        }
    }

    /// The same variant set up with those of `available` it can offer,
    /// when it takes the cache-on rows (gateway rows are all cache-on; the
    /// cache-off variants stay as plain as the static rows want them).
    pub fn with_features(mut self, available: &[Feature]) -> ServerSpec {
        self.features = if self.cache == Some(CacheMode::Off) {
            Vec::new()
        } else {
            available
                .iter()
                .copied()
                .filter(|&f| f != Feature::StaticFiles && ServerSpec::can_offer(&self.kind, f))
                .collect()
        };
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_rows() {
        let tern = ServerSpec::variants(ServerKind::Tern {
            binary: "/x/tern".into(),
        });
        assert_eq!(
            tern.iter().map(ServerSpec::id).collect::<Vec<_>>(),
            ["tern-cache-on", "tern-cache-off"]
        );
        let caddy = ServerSpec::variants(ServerKind::Peer(PeerKind::Caddy));
        assert!(tern.iter().chain(&caddy).all(|s| s.features.is_empty()));
        assert_eq!(caddy.len(), 1);
        let mut row = crate::row::Registry::seed().rows()[0].clone();
        row.cache = CacheMode::Off;
        assert!(tern[1].serves(&row) && !tern[0].serves(&row) && !caddy[0].serves(&row));
        row.cache = CacheMode::On;
        assert!(tern[0].serves(&row) && !tern[1].serves(&row) && caddy[0].serves(&row));
    }

    #[test]
    fn gateways_go_to_cache_on_variants_of_servers_that_offer_them() {
        let seed = crate::row::Registry::seed();
        let cgi_row = seed
            .rows()
            .iter()
            .find(|r| r.needs == Feature::Cgi)
            .unwrap();
        let tern: Vec<ServerSpec> = ServerSpec::variants(ServerKind::Tern {
            binary: "/x/tern".into(),
        })
        .into_iter()
        .map(|s| s.with_features(&Feature::GATEWAYS))
        .collect();
        assert_eq!(tern[0].features, Feature::GATEWAYS, "tern offers all");
        assert!(tern[1].features.is_empty(), "cache off stays static");
        assert!(tern[0].serves(cgi_row) && !tern[1].serves(cgi_row));
        assert_eq!(tern[0].cgi_gateway(), None);
        let h2o = ServerSpec::variants(ServerKind::Peer(PeerKind::H2o))
            .remove(0)
            .with_features(&Feature::GATEWAYS);
        assert!(!h2o.serves(cgi_row), "h2o has no CGI");
        assert_eq!(h2o.features, [Feature::FastCgi, Feature::PhpFpm]);
        let apache = ServerSpec::variants(ServerKind::Peer(PeerKind::Apache2))
            .remove(0)
            .with_features(&[Feature::Cgi, Feature::CgiPlus]);
        assert!(apache.serves(cgi_row));
        assert_eq!(apache.features, [Feature::Cgi], "CGIplus is tern's");
        assert_eq!(apache.cgi_gateway(), Some(CgiGateway::ModCgid));
        let plain = apache.clone().with_features(&[]);
        assert!(!plain.serves(cgi_row));
    }
}
