//! What serves each gateway URL space ([`Feature::prefix`]) on a server:
//! the [`Backends`] the suite started once (fcgiwrap, the C FastCGI
//! responder, php-fpm) and the programs servers run themselves (the
//! responder again, php-cgi). [`Backends::start`] decides which are needed
//! for the rows and the servers of a run and starts them;
//! [`Backends::gateway`] says how one server serves one feature, as a
//! [`Gateway`] that tern's config and the peers' configs are written from,
//! so that a row's URL means the same thing on every server.

use std::path::{Path, PathBuf};

use super::backend::Backend;
use super::fcgiwrap::FcgiwrapPrograms;
use super::peer::{PeerKind, RunAs};
use super::row::Feature;
use super::server::{ServerKind, ServerSpec};
use super::workdir::Workdir;
use super::{fcgi_app, php};

/// How one server serves one gateway feature.
#[derive(Debug, Clone, Copy)]
pub enum Gateway<'a> {
    /// `/cgi-bin/` as CGI; nginx passes it to fcgiwrap.
    Cgi {
        /// fcgiwrap's socket, for nginx.
        fcgiwrap: Option<&'a Path>,
    },
    /// `/cgiplus-bin/` as CGIplus scripts.
    CgiPlus,
    /// `/fcgi/` to the shared FastCGI responder.
    FastCgi {
        /// The responder's socket.
        socket: &'a Path,
    },
    /// `/fcgi-spawn/` to processes of the responder the server runs.
    FastCgiSpawned {
        /// The responder's executable.
        program: &'a Path,
    },
    /// `/rte/` in the server's Perl engine.
    PerlEngine,
    /// `*.php` under `/php/` to php-fpm.
    PhpFpm {
        /// php-fpm's socket.
        socket: &'a Path,
    },
    /// `*.php` under `/phpcgi/` run by php-cgi as CGI.
    PhpCgi {
        /// php-cgi's executable.
        program: &'a Path,
    },
}

impl Gateway<'_> {
    /// The feature it serves.
    pub fn feature(&self) -> Feature {
        match self {
            Gateway::Cgi { .. } => Feature::Cgi,
            Gateway::CgiPlus => Feature::CgiPlus,
            Gateway::FastCgi { .. } => Feature::FastCgi,
            Gateway::FastCgiSpawned { .. } => Feature::FastCgiSpawned,
            Gateway::PerlEngine => Feature::PerlEngine,
            Gateway::PhpFpm { .. } => Feature::PhpFpm,
            Gateway::PhpCgi { .. } => Feature::PhpCgi,
        }
    }
}

/// The backends and programs of a run. Dropping it stops the backends.
#[derive(Debug, Default)]
pub struct Backends {
    /// fcgiwrap, for nginx's CGI.
    pub fcgiwrap: Option<Backend>,
    /// The FastCGI responder's executable.
    pub fcgi_program: Option<PathBuf>,
    /// The shared FastCGI responder.
    pub fcgi_app: Option<Backend>,
    /// php-fpm.
    pub php_fpm: Option<Backend>,
    /// php-cgi's executable.
    pub php_cgi: Option<PathBuf>,
}

/// A feature no server of the run can have, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The feature.
    pub feature: Feature,
    /// Why, for the note.
    pub why: String,
}

impl Backends {
    /// Starts the backends that the `wanted` features need on the servers
    /// of `kinds` (none for a feature no such server offers), with their
    /// sockets and logs in the suite's directory. What cannot be had is
    /// returned as [`Lost`], except nginx's fcgiwrap, which costs only
    /// nginx its CGI rows: that goes into `notes`.
    pub fn start(
        wanted: &[Feature],
        kinds: &[ServerKind],
        work: &Workdir,
        search: &[PathBuf],
        notes: &mut Vec<String>,
    ) -> (Backends, Vec<Lost>) {
        let needed =
            |f: Feature| wanted.contains(&f) && kinds.iter().any(|k| ServerSpec::can_offer(k, f));
        let dir = work.path();
        let user = RunAs::for_this_process();
        let mut b = Backends::default();
        let mut lost = Vec::new();
        let mut lose = |feature: Feature, why: &str| {
            lost.push(Lost {
                feature,
                why: why.to_owned(),
            })
        };

        if needed(Feature::Cgi) && kinds.contains(&ServerKind::Peer(PeerKind::Nginx)) {
            let started = FcgiwrapPrograms::find(search)
                .ok_or_else(|| "fcgiwrap not installed (nginx runs CGI through it)".to_owned())
                .and_then(|p| Backend::start(&p.launch(dir, user.as_ref()), dir));
            match started {
                Ok(f) => b.fcgiwrap = Some(f),
                Err(note) => notes.push(format!("nginx: {note}; CGI rows skipped on nginx")),
            }
        }

        if needed(Feature::FastCgi) || needed(Feature::FastCgiSpawned) {
            match fcgi_app::build(work) {
                Ok(p) => b.fcgi_program = Some(p),
                Err(why) => {
                    let why = format!("FastCGI responder: {why}");
                    for f in [Feature::FastCgi, Feature::FastCgiSpawned] {
                        if needed(f) {
                            lose(f, &why);
                        }
                    }
                }
            }
        }
        if let (true, Some(program)) = (needed(Feature::FastCgi), &b.fcgi_program) {
            match Backend::start(&fcgi_app::launch(program, dir), dir) {
                Ok(app) => b.fcgi_app = Some(app),
                Err(why) => lose(Feature::FastCgi, &why),
            }
        }

        if needed(Feature::PhpFpm) {
            let started = php::find_fpm(search)
                .ok_or_else(|| "php-fpm not installed".to_owned())
                .and_then(|fpm| php::fpm_launch(&fpm, dir, user.as_ref()))
                .and_then(|launch| Backend::start(&launch, dir));
            match started {
                Ok(fpm) => b.php_fpm = Some(fpm),
                Err(why) => lose(Feature::PhpFpm, &why),
            }
        }
        if needed(Feature::PhpCgi) {
            b.php_cgi = php::find_cgi(search);
            if b.php_cgi.is_none() {
                lose(Feature::PhpCgi, "php-cgi not installed");
            }
        }
        (b, lost)
    }

    /// How a server of `kind` serves `feature`, if it can here.
    pub fn gateway(&self, feature: Feature, kind: &ServerKind) -> Option<Gateway<'_>> {
        if !ServerSpec::can_offer(kind, feature) {
            return None;
        }
        match feature {
            Feature::StaticFiles => None,
            Feature::Cgi => match kind {
                ServerKind::Peer(PeerKind::Nginx) => Some(Gateway::Cgi {
                    fcgiwrap: Some(self.fcgiwrap.as_ref()?.socket()),
                }),
                _ => Some(Gateway::Cgi { fcgiwrap: None }),
            },
            Feature::CgiPlus => Some(Gateway::CgiPlus),
            Feature::FastCgi => Some(Gateway::FastCgi {
                socket: self.fcgi_app.as_ref()?.socket(),
            }),
            Feature::FastCgiSpawned => Some(Gateway::FastCgiSpawned {
                program: self.fcgi_program.as_deref()?,
            }),
            Feature::PerlEngine => Some(Gateway::PerlEngine),
            Feature::PhpFpm => Some(Gateway::PhpFpm {
                socket: self.php_fpm.as_ref()?.socket(),
            }),
            Feature::PhpCgi => Some(Gateway::PhpCgi {
                program: self.php_cgi.as_deref()?,
            }),
        }
    }

    /// The shared backend a server of `kind` uses for `feature`, whose CPU
    /// counts with the server's.
    pub fn backend(&self, feature: Feature, kind: &ServerKind) -> Option<&Backend> {
        match (feature, kind) {
            (Feature::Cgi, ServerKind::Peer(PeerKind::Nginx)) => self.fcgiwrap.as_ref(),
            (Feature::FastCgi, _) => self.fcgi_app.as_ref(),
            (Feature::PhpFpm, _) => self.php_fpm.as_ref(),
            _ => None,
        }
    }

    /// The features of `wanted` a server of `kind` can have here.
    pub fn available(&self, wanted: &[Feature], kind: &ServerKind) -> Vec<Feature> {
        wanted
            .iter()
            .copied()
            .filter(|&f| self.gateway(f, kind).is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_started_nothing_served_but_what_needs_no_backend() {
        let b = Backends::default();
        let tern = ServerKind::Tern {
            binary: "/x/tern".into(),
        };
        let nginx = ServerKind::Peer(PeerKind::Nginx);
        let all = Feature::GATEWAYS;
        assert_eq!(
            b.available(&all, &tern),
            [Feature::Cgi, Feature::CgiPlus, Feature::PerlEngine]
        );
        assert!(
            b.available(&all, &nginx).is_empty(),
            "nginx's CGI is fcgiwrap"
        );
        assert_eq!(
            b.available(&all, &ServerKind::Peer(PeerKind::Lighttpd)),
            [Feature::Cgi]
        );
        let with_cgi = Backends {
            php_cgi: Some("/usr/bin/php-cgi".into()),
            fcgi_program: Some("/w/bin/fcgi-app".into()),
            ..Backends::default()
        };
        assert_eq!(
            with_cgi.available(&all, &ServerKind::Peer(PeerKind::Lighttpd)),
            [Feature::Cgi, Feature::PhpCgi]
        );
        assert!(with_cgi
            .available(&all, &tern)
            .contains(&Feature::FastCgiSpawned));
        assert!(with_cgi
            .available(&[Feature::FastCgiSpawned], &ServerKind::Peer(PeerKind::H2o))
            .is_empty());
    }

    #[test]
    fn unwanted_or_unoffered_features_start_nothing() {
        let work = Workdir::create(&[], None).unwrap();
        let mut notes = Vec::new();
        let h2o = [ServerKind::Peer(PeerKind::H2o)];
        // h2o has no CGI: fcgiwrap is not started even though CGI is wanted.
        let (b, lost) = Backends::start(&[Feature::Cgi], &h2o, &work, &[], &mut notes);
        assert!(b.fcgiwrap.is_none() && lost.is_empty() && notes.is_empty());
        // Without a compiler the responder cannot be built: the FastCGI
        // feature wanted is lost, with the reason.
        let tern = [ServerKind::Tern {
            binary: "/x/tern".into(),
        }];
        let wanted = [Feature::FastCgiSpawned, Feature::PhpCgi];
        let (b, lost) = Backends::start(&wanted, &tern, &work, &[], &mut notes);
        assert!(b.fcgi_program.is_none() && b.php_cgi.is_none());
        let features: Vec<Feature> = lost.iter().map(|l| l.feature).collect();
        assert_eq!(features, [Feature::FastCgiSpawned, Feature::PhpCgi]);
        assert!(lost[0].why.starts_with("FastCGI responder: "), "{lost:?}");
        assert_eq!(lost[1].why, "php-cgi not installed");
        // nginx without fcgiwrap loses only its own CGI rows.
        let nginx = [ServerKind::Peer(PeerKind::Nginx)];
        let (b, lost) = Backends::start(&[Feature::Cgi], &nginx, &work, &[], &mut notes);
        assert!(b.fcgiwrap.is_none() && lost.is_empty());
        assert_eq!(
            notes,
            ["nginx: fcgiwrap not installed (nginx runs CGI through it); CGI rows skipped on nginx"]
        );
    }
}
