//! What serves each gateway on each server, made ready for a run:
//! fcgiwrap, started once for nginx; a FastCGI responder and a php-fpm
//! started for each server that uses them ([`OwnBackends`]); and the
//! programs servers run themselves (the responder again, php-cgi).
//! [`Backends::start`] decides which are needed for the rows and the
//! servers of a run and makes them ready; [`Backends::gateway`] says how
//! one server serves one feature, as the [`Gateway`] its config is written
//! from.

use std::path::{Path, PathBuf};

use crate::backend::Backend;
use crate::fcgiwrap::FcgiwrapPrograms;
use crate::gateway::Gateway;
use crate::peer::PeerKind;
use crate::process::RunAs;
use crate::row::Feature;
use crate::spec::{ServerKind, ServerSpec};
use crate::workdir::Workdir;
use crate::{fcgi_app, php};

/// What the gateways of a run are made of: fcgiwrap, started once for
/// nginx's CGI; the programs each server gets its own backends from (the
/// FastCGI responder, php-fpm); php-cgi. Dropping it stops fcgiwrap.
///
/// The FastCGI responder and php-fpm are started per server, not shared:
/// tern keeps its FastCGI connections open between requests (up to
/// `max_connections`, as many as the backend has processes), and each open
/// connection holds one of the backend's processes, so a backend tern has
/// used would have none left for the next server in the row.
#[derive(Debug, Default)]
pub struct Backends {
    /// fcgiwrap, for nginx's CGI.
    pub fcgiwrap: Option<Backend>,
    /// The FastCGI responder's executable.
    pub fcgi_program: Option<PathBuf>,
    /// php-fpm's executable.
    pub php_fpm: Option<PathBuf>,
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

/// The backends one server has to itself. Dropping it stops them.
#[derive(Debug, Default)]
pub struct OwnBackends {
    /// Its FastCGI responder under `/fcgi/`.
    pub fcgi_app: Option<Backend>,
    /// Its php-fpm.
    pub php_fpm: Option<Backend>,
}

impl OwnBackends {
    /// The backend serving `feature`, whose CPU counts with the server's.
    pub fn get(&self, feature: Feature) -> Option<&Backend> {
        match feature {
            Feature::FastCgi => self.fcgi_app.as_ref(),
            Feature::PhpFpm => self.php_fpm.as_ref(),
            _ => None,
        }
    }

    /// Stops them (also done when dropped).
    pub fn stop(&mut self) {
        for b in [&mut self.fcgi_app, &mut self.php_fpm]
            .into_iter()
            .flatten()
        {
            b.stop();
        }
    }
}

impl Backends {
    /// Makes ready what the `wanted` features need on the servers of
    /// `kinds` (nothing for a feature no such server offers): starts
    /// fcgiwrap for nginx, builds the FastCGI responder, finds php-fpm and
    /// php-cgi, and starts the responder and php-fpm once in the suite's
    /// directory to learn that they run. What cannot be had is returned as
    /// [`Lost`], except nginx's fcgiwrap, which costs only nginx its CGI
    /// rows: that goes into `notes`.
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
            if let Err(why) = Backend::start(&fcgi_app::launch(program, dir), dir) {
                b.fcgi_program = None;
                lose(Feature::FastCgi, &why);
            }
        }

        if needed(Feature::PhpFpm) {
            let tried = php::find_fpm(search)
                .ok_or_else(|| "php-fpm not installed".to_owned())
                .and_then(|fpm| {
                    let launch = php::fpm_launch(&fpm, dir, user.as_ref())?;
                    Backend::start(&launch, dir).map(|_| fpm)
                });
            match tried {
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

    /// The features of `wanted` a server of `kind` can have here.
    pub fn available(&self, wanted: &[Feature], kind: &ServerKind) -> Vec<Feature> {
        wanted
            .iter()
            .copied()
            .filter(|&f| ServerSpec::can_offer(kind, f) && self.supplies(f, kind))
            .collect()
    }

    fn supplies(&self, feature: Feature, kind: &ServerKind) -> bool {
        match feature {
            Feature::StaticFiles => false,
            Feature::Cgi => *kind != ServerKind::Peer(PeerKind::Nginx) || self.fcgiwrap.is_some(),
            Feature::CgiPlus | Feature::PerlEngine | Feature::Wasm => true,
            Feature::FastCgi | Feature::FastCgiSpawned => self.fcgi_program.is_some(),
            Feature::PhpFpm => self.php_fpm.is_some(),
            Feature::PhpCgi => self.php_cgi.is_some(),
        }
    }

    /// Starts the backends a server set up with `features` has to itself,
    /// in its directory `dir`. The error is a note.
    pub fn start_own(&self, features: &[Feature], dir: &Path) -> Result<OwnBackends, String> {
        let mut own = OwnBackends::default();
        if features.contains(&Feature::FastCgi) {
            let program = self.fcgi_program.as_deref().ok_or("no FastCGI responder")?;
            own.fcgi_app = Some(Backend::start(&fcgi_app::launch(program, dir), dir)?);
        }
        if features.contains(&Feature::PhpFpm) {
            let fpm = self.php_fpm.as_deref().ok_or("no php-fpm")?;
            let launch = php::fpm_launch(fpm, dir, RunAs::for_this_process().as_ref())?;
            own.php_fpm = Some(Backend::start(&launch, dir)?);
        }
        Ok(own)
    }

    /// How a server of `kind`, with its own backends `own`, serves
    /// `feature`, if it can.
    pub fn gateway<'a>(
        &'a self,
        feature: Feature,
        kind: &ServerKind,
        own: &'a OwnBackends,
    ) -> Option<Gateway<'a>> {
        if !ServerSpec::can_offer(kind, feature) || !self.supplies(feature, kind) {
            return None;
        }
        match feature {
            Feature::StaticFiles => None,
            Feature::Cgi => Some(Gateway::Cgi {
                fcgiwrap: match kind {
                    ServerKind::Peer(PeerKind::Nginx) => {
                        self.fcgiwrap.as_ref().map(Backend::socket)
                    }
                    _ => None,
                },
            }),
            Feature::CgiPlus => Some(Gateway::CgiPlus),
            Feature::FastCgi => Some(Gateway::FastCgi {
                socket: own.fcgi_app.as_ref()?.socket(),
            }),
            Feature::FastCgiSpawned => Some(Gateway::FastCgiSpawned {
                program: self.fcgi_program.as_deref()?,
            }),
            Feature::PerlEngine => Some(Gateway::PerlEngine),
            Feature::PhpFpm => Some(Gateway::PhpFpm {
                socket: own.php_fpm.as_ref()?.socket(),
            }),
            Feature::PhpCgi => Some(Gateway::PhpCgi {
                program: self.php_cgi.as_deref()?,
            }),
            Feature::Wasm => Some(Gateway::Wasm),
        }
    }

    /// The shared backend a server of `kind` uses for `feature` (nginx's
    /// fcgiwrap), whose CPU counts with the server's.
    pub fn shared(&self, feature: Feature, kind: &ServerKind) -> Option<&Backend> {
        match (feature, kind) {
            (Feature::Cgi, ServerKind::Peer(PeerKind::Nginx)) => self.fcgiwrap.as_ref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_ready_nothing_served_but_what_needs_no_backend() {
        let b = Backends::default();
        let tern = ServerKind::Tern {
            binary: "/x/tern".into(),
        };
        let nginx = ServerKind::Peer(PeerKind::Nginx);
        let all = Feature::GATEWAYS;
        assert_eq!(
            b.available(&all, &tern),
            [
                Feature::Cgi,
                Feature::CgiPlus,
                Feature::PerlEngine,
                Feature::Wasm
            ]
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
            [Feature::Cgi, Feature::FastCgi, Feature::PhpCgi],
            "the responder's program is all a server needs to get its own"
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
        assert!(
            b.start_own(&[Feature::Cgi], work.path()).is_ok(),
            "nothing of its own"
        );
        let err = b.start_own(&[Feature::PhpFpm], work.path()).unwrap_err();
        assert_eq!(err, "no php-fpm");
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
