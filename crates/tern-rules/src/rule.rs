//! A site's ordered rules (`[[site.rules]]`), WASD's mapping rules in
//! today's words: scanned first to last before routing, each with its
//! conditions and one action.
//!
//! | action | ends the scan? |
//! |---|---|
//! | `redirect` | yes: the client is sent elsewhere (301, 302, 303, 307, 308) |
//! | `return` | yes: a status, with an optional short body |
//! | `rewrite`, `flow = "continue"` (default) | no: the next rules see the new path (WASD `MAP`, nginx `rewrite` without a flag) |
//! | `rewrite`, `flow = "last"` | restarts the scan from the first rule with the new path (nginx `last`) |
//! | `rewrite`, `flow = "break"` | yes: the new path is routed (nginx `break`, WASD `PASS`) |
//! | `try_files` | yes: the first candidate that exists is routed; else the fallback (a status, or a rewrite that restarts the scan) |
//! | `set` | no: response headers are added, the scan goes on |
//!
//! A scan restarts at most [`MAX_RESTARTS`] times; one more is a loop,
//! answered 500 with a log line naming the rules that looped.

use std::borrow::Cow;

use http::header::{HeaderName, HeaderValue};
use http::StatusCode;
use regex::bytes::RegexSet;
use tern_handler::path::DecodedPath;

use crate::cond::{Conditions, PathMatch, Request};
use crate::template::{Form, Template, Values};

/// Restarts (`last` rewrites and `try_files` fallbacks) one request may
/// make; one more is a rewrite loop.
pub const MAX_RESTARTS: usize = 10;

/// What a rule's `rewrite` does after it changes the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The next rules see the new path.
    Continue,
    /// The scan restarts from the first rule.
    Last,
    /// The scan ends; the new path is routed.
    Break,
}

impl Flow {
    fn name(self) -> &'static str {
        match self {
            Flow::Continue => "continue",
            Flow::Last => "last",
            Flow::Break => "break",
        }
    }
}

/// What `try_files` does when no candidate exists.
#[derive(Clone, Debug)]
pub enum Fallback {
    /// Answer with this status (`"=404"`).
    Status(StatusCode),
    /// Rewrite to this target and restart the scan (a front controller).
    Rewrite(Template),
}

/// A rule's action.
#[derive(Clone, Debug)]
pub enum Action {
    /// Send the client to the target.
    Redirect {
        /// The target (captures and variables are percent-encoded).
        to: Template,
        /// 301, 302, 303, 307 or 308.
        status: StatusCode,
    },
    /// Change the path (and the query, if the target has `?`).
    Rewrite {
        /// The new path.
        to: Template,
        /// What happens next.
        flow: Flow,
    },
    /// Answer with a status and an optional body.
    Return {
        /// The status.
        status: StatusCode,
        /// A short plain-text body.
        body: Option<String>,
    },
    /// Route the first candidate that exists (`$path/` asks for a
    /// directory), else the fallback.
    TryFiles {
        /// Candidates, in order.
        candidates: Vec<Template>,
        /// When none exists.
        fallback: Fallback,
    },
    /// Add response headers, and variables for the request's script
    /// (values are templates).
    Set {
        /// Header names and values.
        headers: Vec<(HeaderName, Template)>,
        /// Variable names and values for CGI, FastCGI, CGIplus and
        /// WebAssembly scripts (Apache's `SetEnv`, nginx's `fastcgi_param`).
        env: Vec<(String, Template)>,
    },
}

/// One rule: conditions and an action.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Every condition must hold.
    pub conditions: Conditions,
    /// What it does.
    pub action: Action,
    /// Where it is configured (`tern.toml:12: site[0].rules[2]`), for
    /// traces and log lines.
    pub origin: String,
}

/// What the file system says about a candidate of `try_files`.
pub trait Probe {
    /// Whether the decoded path names a regular file.
    fn is_file(&self, path: &str) -> bool;
    /// Whether the decoded path names a directory.
    fn is_dir(&self, path: &str) -> bool;
}

/// What the rules decided.
#[derive(Debug)]
pub enum Decision {
    /// Route the request: with a new path and query if a rule changed them.
    Route {
        /// The rewritten path (`None`: unchanged).
        path: Option<DecodedPath>,
        /// The rewritten query (`None`: unchanged; `Some("")`: removed).
        query: Option<String>,
    },
    /// Redirect the client.
    Redirect {
        /// The status.
        status: StatusCode,
        /// The `Location` value.
        location: HeaderValue,
    },
    /// Answer with this status and body.
    Return {
        /// The status.
        status: StatusCode,
        /// The body, if the rule gave one.
        body: Option<String>,
    },
    /// The rules cannot be applied to this request (a loop, a rewritten
    /// path that does not parse, a value that would put a control
    /// character in a header): 500, with this reason logged.
    Fail {
        /// For the log line.
        reason: String,
    },
}

/// The rules' decision, and what `set` rules added.
#[derive(Debug)]
pub struct Outcome {
    /// The decision.
    pub decision: Decision,
    /// Headers to add to the response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Variables for the request's script, in rule order (a later rule's
    /// value for a name replaces an earlier one's).
    pub env: Vec<(String, String)>,
}

/// One step of a trace: a rule that matched, and what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The rule's place in the list.
    pub rule: usize,
    /// Where it is configured.
    pub origin: String,
    /// The captures of its regex (`$0`, `$1`...), if it has one.
    pub captures: Vec<String>,
    /// What it did, in words (`rewrite -> /index.php (last)`).
    pub did: String,
}

/// A site's rules, compiled: the rules in order and a one-pass prefilter
/// over their path patterns.
#[derive(Debug)]
pub struct RuleList {
    rules: Vec<Rule>,
    /// Every path pattern, one pass over the path finds which may match.
    set: RegexSet,
    /// For each rule, its pattern's place in `set` (`None`: no path
    /// condition, always a candidate).
    pattern: Vec<Option<usize>>,
}

impl RuleList {
    /// Compiles `rules`; `None` when there are none (the phase is then one
    /// branch).
    pub fn new(rules: Vec<Rule>) -> Result<Option<RuleList>, regex::Error> {
        if rules.is_empty() {
            return Ok(None);
        }
        let mut patterns = Vec::new();
        let pattern = rules
            .iter()
            .map(|r| {
                r.conditions.path.as_ref().map(|p| {
                    patterns.push(p.set_pattern());
                    patterns.len() - 1
                })
            })
            .collect();
        Ok(Some(RuleList {
            set: RegexSet::new(patterns)?,
            rules,
            pattern,
        }))
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Applies the rules to `req`. `trace`, when given, receives a step
    /// for every rule that matched.
    pub fn apply(
        &self,
        req: &Request<'_>,
        probe: &dyn Probe,
        mut trace: Option<&mut Vec<Step>>,
    ) -> Outcome {
        let mut headers = Vec::new();
        let mut env: Vec<(String, String)> = Vec::new();
        let mut path: Cow<'_, str> = Cow::Borrowed(req.path);
        let mut query: Option<String> = None;
        let mut rewritten: Option<DecodedPath> = None;
        let mut restarts = 0;
        let mut looped: Vec<usize> = Vec::new();
        let mut i = 0;
        let mut hits = self.set.matches(path.as_bytes());
        let decision = 'scan: loop {
            let Some(rule) = self.rules.get(i) else {
                break Decision::Route {
                    path: rewritten,
                    query,
                };
            };
            let at = i;
            i += 1;
            if let Some(p) = self.pattern[at] {
                if !hits.matched(p) {
                    continue;
                }
            }
            let now = Request {
                path: &path,
                query: query.as_deref().or(req.query),
                ..*req
            };
            if !rule.conditions.others_hold(&now) {
                continue;
            }
            let caps: Vec<Option<&str>> = match &rule.conditions.path {
                Some(PathMatch::Regex(re)) => match re.captures(&path) {
                    Some(c) => c.iter().map(|m| m.map(|m| m.as_str())).collect(),
                    None => continue,
                },
                _ => Vec::new(),
            };
            let values = Values {
                captures: &caps,
                path: &path,
                query: now.query,
                host: req.host,
                secure: req.secure,
                method: req.method.as_str(),
                client: req.client,
            };
            let mut step = |did: String| {
                if let Some(t) = trace.as_deref_mut() {
                    t.push(Step {
                        rule: at,
                        origin: rule.origin.clone(),
                        captures: caps.iter().map(|c| c.unwrap_or("").to_owned()).collect(),
                        did,
                    });
                }
            };
            let fail = |reason: String| Decision::Fail {
                reason: format!("{}: {reason}", rule.origin),
            };
            // A rewrite's new path, and whether the scan restarts.
            let (to, flow) = match &rule.action {
                Action::Redirect { to, status } => {
                    let location = match to.expand(&values, Form::Url) {
                        Ok(e) => {
                            let mut l = e.path;
                            let q = e.query.or_else(|| now.query.map(str::to_owned));
                            if let Some(q) = q.filter(|q| !q.is_empty()) {
                                l.push('?');
                                l.push_str(&q);
                            }
                            l
                        }
                        Err(e) => break fail(e),
                    };
                    step(format!("redirect {} -> {location}", status.as_u16()));
                    match HeaderValue::from_str(&location) {
                        Ok(location) => {
                            break Decision::Redirect {
                                status: *status,
                                location,
                            }
                        }
                        Err(_) => break fail(format!("{location:?} is not a valid Location")),
                    }
                }
                Action::Return { status, body } => {
                    step(format!("return {}", status.as_u16()));
                    break Decision::Return {
                        status: *status,
                        body: body.clone(),
                    };
                }
                Action::Set {
                    headers: set,
                    env: set_env,
                } => {
                    let mut said = Vec::new();
                    for (name, value) in set_env {
                        let v = match value.expand_text(&values) {
                            Ok(v) => v,
                            Err(e) => break 'scan fail(e),
                        };
                        said.push(format!("{name}={v}"));
                        env.retain(|(n, _)| n != name);
                        env.push((name.clone(), v));
                    }
                    for (name, value) in set {
                        let v = match value.expand_text(&values) {
                            Ok(v) => v,
                            Err(e) => break 'scan fail(e),
                        };
                        match HeaderValue::from_str(&v) {
                            Ok(hv) => headers.push((name.clone(), hv)),
                            Err(_) => break 'scan fail(format!("{v:?} is not a header value")),
                        }
                        said.push(format!("{name}: {v}"));
                    }
                    step(format!("set {}", said.join(", ")));
                    continue;
                }
                Action::Rewrite { to, flow } => (to, *flow),
                Action::TryFiles {
                    candidates,
                    fallback,
                } => {
                    let mut found = None;
                    for c in candidates {
                        let e = match c.expand(&values, Form::Decoded) {
                            Ok(e) => e,
                            Err(e) => break 'scan fail(e),
                        };
                        let hit = if e.path.ends_with('/') {
                            probe.is_dir(&e.path)
                        } else {
                            probe.is_file(&e.path)
                        };
                        if hit {
                            found = Some((c, e));
                            break;
                        }
                    }
                    match (found, fallback) {
                        (Some((c, _)), _) => (c, Flow::Break),
                        (None, Fallback::Status(s)) => {
                            step(format!("try_files: none exists; return {}", s.as_u16()));
                            break Decision::Return {
                                status: *s,
                                body: None,
                            };
                        }
                        (None, Fallback::Rewrite(t)) => (t, Flow::Last),
                    }
                }
            };
            let e = match to.expand(&values, Form::Decoded) {
                Ok(e) => e,
                Err(e) => break fail(e),
            };
            let mut encoded = String::with_capacity(e.path.len());
            crate::template::encode_path(&mut encoded, &e.path);
            let new = match DecodedPath::parse(&encoded) {
                Ok(p) => p,
                Err(err) => {
                    break fail(format!("the rewritten path {:?} is refused: {err}", e.path))
                }
            };
            let what = if matches!(rule.action, Action::TryFiles { .. }) {
                if flow == Flow::Break {
                    "try_files: exists"
                } else {
                    "try_files: none exists; rewrite"
                }
            } else {
                "rewrite"
            };
            match &e.query {
                Some(q) => step(format!("{what} -> {new}?{q} ({})", flow.name())),
                None => step(format!("{what} -> {new} ({})", flow.name())),
            }
            if let Some(q) = e.query {
                query = Some(q);
            }
            path = Cow::Owned(new.as_str().to_owned());
            rewritten = Some(new);
            match flow {
                Flow::Break => {
                    break Decision::Route {
                        path: rewritten,
                        query,
                    }
                }
                Flow::Continue => hits = self.set.matches(path.as_bytes()),
                Flow::Last => {
                    looped.push(at);
                    restarts += 1;
                    if restarts > MAX_RESTARTS {
                        looped.sort_unstable();
                        looped.dedup();
                        let names: Vec<&str> = looped
                            .iter()
                            .map(|&r| self.rules[r].origin.as_str())
                            .collect();
                        break Decision::Fail {
                            reason: format!(
                                "rewrite loop: more than {MAX_RESTARTS} restarts, through {}",
                                names.join("; ")
                            ),
                        };
                    }
                    i = 0;
                    hits = self.set.matches(path.as_bytes());
                }
            }
        };
        Outcome {
            decision,
            headers,
            env,
        }
    }
}
