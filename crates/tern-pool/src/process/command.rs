//! What to run: program, arguments, the whole environment, and the
//! working directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A program to start as a worker. Nothing is inherited from tern's own
/// environment: `env` is the worker's whole environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
}

impl Command {
    /// Runs `program` (a path; no PATH search is done, as the environment
    /// is the worker's, not tern's) in `cwd`, with no arguments and an
    /// empty environment.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.into(),
        }
    }

    /// Adds one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds one environment variable.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds environment variables.
    #[must_use]
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The arguments (without the program).
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The whole environment.
    pub fn get_env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}
