//! The report's three reduction heuristics, which combine distinct pages
//! into page classes:
//!
//! 1. *same file sets*: the same files, whatever their order and repeats;
//! 2. *same number of files, 75% same files, the rest about the same
//!    size*: as many files, at least three quarters of them shared, and
//!    each file of one that the other lacks matched by one of the other's
//!    within 10% of its size (the most frequent class absorbs first);
//! 3. *same front (.html) page*: the same first file, when it is an HTML
//!    page (`.html`, `.htm`, a directory, or no extension); the query and
//!    fragment are ignored.
//!
//! A combined class counts all its pages and takes the file list of its
//! most frequent member. Ties are broken by the files' targets, never by
//! hash or arrival order, so the same log gives the same classes.

use std::cmp::{Ordering, Reverse};
use std::collections::HashMap;

use crate::extract::{FileStat, RawPage};
use crate::model::Reduction;
use crate::target::{is_html_page, path_of};

/// Heuristic 1's name, as the report's table gives it.
pub const SAME_FILE_SETS: &str = "same file sets";
/// Heuristic 2's name.
pub const NEAR_FILE_SETS: &str =
    "same number of files, 75% same files, the rest about the same size";
/// Heuristic 3's name.
pub const SAME_FRONT_PAGE: &str = "same front (.html) page";

/// Page classes: which class each distinct page fell in, and each class's
/// files and count, most frequent first.
#[derive(Debug)]
pub(crate) struct Classes {
    /// For each distinct page (index into the pages given), its class.
    pub(crate) of_page: Vec<usize>,
    /// The classes, most frequent first (ties by their files' targets).
    pub(crate) classes: Vec<Class>,
    /// Each heuristic applied, in order.
    pub(crate) reductions: Vec<Reduction>,
}

/// One page class.
#[derive(Debug)]
pub(crate) struct Class {
    /// The file list of its most frequent member (file ids).
    pub(crate) files: Vec<u32>,
    /// Pages in it.
    pub(crate) count: u64,
}

/// A class while the heuristics run: its count and its most frequent
/// member (an index into the pages).
#[derive(Clone, Copy, Debug)]
struct Group {
    count: u64,
    rep: usize,
}

struct Ctx<'a> {
    pages: &'a [RawPage],
    files: &'a [FileStat],
    /// Each file's size ([`FileStat::bytes`]).
    sizes: Vec<u64>,
    /// Candidate pairs heuristic 2 looked at (for the tests: it must stay
    /// about linear in the groups).
    compared: std::cell::Cell<u64>,
}

impl Ctx<'_> {
    /// Orders two page file lists by their (target, method) sequences.
    fn cmp_files(&self, a: &[u32], b: &[u32]) -> Ordering {
        let key = |id: &u32| {
            let f = &self.files[*id as usize];
            (f.target.as_str(), f.method.as_str())
        };
        a.iter().map(key).cmp(b.iter().map(key))
    }

    /// The order of groups: most pages first, then by their
    /// representatives' files (the front's target first).
    fn cmp_groups(&self, a: &Group, b: &Group) -> Ordering {
        Reverse(a.count)
            .cmp(&Reverse(b.count))
            .then_with(|| self.cmp_files(&self.pages[a.rep].files, &self.pages[b.rep].files))
    }

    /// Whether page `a` is a better representative than page `b`.
    fn better_rep(&self, a: usize, b: usize) -> bool {
        let (pa, pb) = (&self.pages[a], &self.pages[b]);
        match pa.count.cmp(&pb.count) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.cmp_files(&pa.files, &pb.files) == Ordering::Less,
        }
    }

    /// The distinct files of a group's representative, sorted by id.
    fn set(&self, g: &Group) -> Vec<u32> {
        let mut s = self.pages[g.rep].files.clone();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Combines groups: `into[i]` is the new group of group `i` (new
    /// groups numbered from 0 in first-seen order).
    fn combine(&self, groups: &[Group], into: &[usize], of_page: &mut [usize]) -> Vec<Group> {
        let n = into.iter().max().map_or(0, |m| m + 1);
        let mut out: Vec<Option<Group>> = vec![None; n];
        for (g, &to) in groups.iter().zip(into) {
            out[to] = Some(match out[to] {
                None => *g,
                Some(o) => Group {
                    count: o.count + g.count,
                    rep: if self.better_rep(g.rep, o.rep) {
                        g.rep
                    } else {
                        o.rep
                    },
                },
            });
        }
        for c in of_page.iter_mut() {
            *c = into[*c];
        }
        out.into_iter().flatten().collect()
    }

    /// Groups in their order (see [`Ctx::cmp_groups`]).
    fn ordered(&self, groups: &[Group]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by(|&a, &b| self.cmp_groups(&groups[a], &groups[b]));
        order
    }

    /// Combines groups with equal keys (`None`: a group of its own),
    /// numbering new groups in the groups' order.
    fn by_key<K: Eq + std::hash::Hash>(
        &self,
        groups: &[Group],
        key: impl Fn(&Group) -> Option<K>,
    ) -> Vec<usize> {
        let mut into = vec![0; groups.len()];
        let mut seen: HashMap<K, usize> = HashMap::new();
        let mut next = 0;
        for i in self.ordered(groups) {
            into[i] = match key(&groups[i]) {
                Some(k) => *seen.entry(k).or_insert_with(|| {
                    next += 1;
                    next - 1
                }),
                None => {
                    next += 1;
                    next - 1
                }
            };
        }
        into
    }

    fn same_file_sets(&self, groups: &[Group]) -> Vec<usize> {
        self.by_key(groups, |g| Some(self.set(g)))
    }

    /// Heuristic 2. Groups sharing at least `ceil(3n/4)` of their `n`
    /// files are found by prefix filtering: each set's files ordered by
    /// rarity (how many sets hold them, then id), any two sets sharing that
    /// many files share one of each other's rarest `n - ceil(3n/4) + 1`, so
    /// only those are indexed and probed. A file every page holds (a style
    /// sheet) is then never walked, and the work stays about linear.
    fn near_file_sets(&self, groups: &[Group]) -> Vec<usize> {
        let order = self.ordered(groups);
        let sets: Vec<Vec<u32>> = groups.iter().map(|g| self.set(g)).collect();
        let mut held_by: HashMap<u32, u32> = HashMap::new();
        for s in &sets {
            for &f in s {
                *held_by.entry(f).or_insert(0) += 1;
            }
        }
        let prefixes: Vec<Vec<u32>> = sets
            .iter()
            .map(|s| {
                let mut rarest = s.clone();
                rarest.sort_unstable_by_key(|f| (held_by[f], *f));
                rarest.truncate(s.len() - need(s.len()) + 1);
                rarest
            })
            .collect();
        // Groups by file count, then which groups hold each file among
        // their rarest.
        let mut postings: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
        for &i in &order {
            for &f in &prefixes[i] {
                postings.entry((sets[i].len(), f)).or_default().push(i);
            }
        }
        let mut into = vec![usize::MAX; groups.len()];
        // The last group each group was compared with (+1), so that each
        // pair is compared once.
        let mut seen_by = vec![0usize; groups.len()];
        let mut next = 0;
        for &i in &order {
            if into[i] != usize::MAX {
                continue;
            }
            into[i] = next;
            let n = sets[i].len();
            let mut candidates = Vec::new();
            for f in &prefixes[i] {
                for &j in &postings[&(n, *f)] {
                    self.compared.set(self.compared.get() + 1);
                    if j == i || into[j] != usize::MAX || seen_by[j] == i + 1 {
                        continue;
                    }
                    seen_by[j] = i + 1;
                    if shared(&sets[i], &sets[j]) >= need(n) {
                        candidates.push(j);
                    }
                }
            }
            // In the groups' order: the most frequent are absorbed first.
            candidates.sort_by(|&a, &b| self.cmp_groups(&groups[a], &groups[b]));
            for j in candidates {
                if self.sizes_match(&sets[i], &sets[j]) {
                    into[j] = next;
                }
            }
            next += 1;
        }
        into
    }

    /// Whether the files of `a` not in `b` pair off with those of `b` not
    /// in `a`, each pair within 10% of the larger size. (Pairing both
    /// sides in size order finds a pairing whenever one exists: the
    /// tolerance grows with the size.)
    fn sizes_match(&self, a: &[u32], b: &[u32]) -> bool {
        let only = |x: &[u32], y: &[u32]| {
            let mut s: Vec<u64> = x
                .iter()
                .filter(|f| y.binary_search(f).is_err())
                .map(|&f| self.sizes[f as usize])
                .collect();
            s.sort_unstable();
            s
        };
        let (oa, ob) = (only(a, b), only(b, a));
        oa.len() == ob.len()
            && oa
                .iter()
                .zip(&ob)
                .all(|(&x, &y)| 10 * x.abs_diff(y) <= x.max(y))
    }

    fn same_front_page(&self, groups: &[Group]) -> Vec<usize> {
        self.by_key(groups, |g| {
            let front = &self.files[*self.pages[g.rep].files.first()? as usize];
            is_html_page(&front.target).then(|| (front.method.as_str(), path_of(&front.target)))
        })
    }
}

/// Files two sets of `n` must share for heuristic 2: three quarters,
/// rounded up.
fn need(n: usize) -> usize {
    (3 * n).div_ceil(4)
}

/// How many files two sorted, distinct file lists share.
fn shared(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Applies the heuristics (none when `reduce` is false) to the distinct
/// pages.
pub(crate) fn classes(pages: &[RawPage], files: &[FileStat], reduce: bool) -> Classes {
    let ctx = Ctx {
        pages,
        files,
        sizes: files.iter().map(FileStat::bytes).collect(),
        compared: std::cell::Cell::new(0),
    };
    let mut groups: Vec<Group> = pages
        .iter()
        .enumerate()
        .map(|(rep, p)| Group {
            count: p.count,
            rep,
        })
        .collect();
    let mut of_page: Vec<usize> = (0..pages.len()).collect();
    let mut reductions = Vec::new();
    if reduce {
        type Heuristic<'c> = fn(&Ctx<'c>, &[Group]) -> Vec<usize>;
        let steps: [(&str, Heuristic<'_>); 3] = [
            (SAME_FILE_SETS, Ctx::same_file_sets),
            (NEAR_FILE_SETS, Ctx::near_file_sets),
            (SAME_FRONT_PAGE, Ctx::same_front_page),
        ];
        for (name, step) in steps {
            let before = groups.len() as u64;
            let into = step(&ctx, &groups);
            groups = ctx.combine(&groups, &into, &mut of_page);
            let after = groups.len() as u64;
            let factor = if after == 0 {
                1.0
            } else {
                (before as f64 / after as f64 * 100.0).round() / 100.0
            };
            reductions.push(Reduction {
                heuristic: name.to_owned(),
                before,
                after,
                factor,
            });
        }
    }
    // Final order, and class numbers in it.
    let order = ctx.ordered(&groups);
    let mut rank = vec![0; groups.len()];
    for (r, &g) in order.iter().enumerate() {
        rank[g] = r;
    }
    for c in &mut of_page {
        *c = rank[*c];
    }
    let classes = order
        .iter()
        .map(|&g| Class {
            files: pages[groups[g].rep].files.clone(),
            count: groups[g].count,
        })
        .collect();
    Classes {
        of_page,
        classes,
        reductions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files by target and size; pages as lists of file indices with
    /// counts.
    fn run(files: &[(&str, u64)], pages: &[(&[u32], u64)]) -> Classes {
        let files: Vec<FileStat> = files
            .iter()
            .map(|(t, b)| FileStat::logged("GET", t, *b))
            .collect();
        let pages: Vec<RawPage> = pages
            .iter()
            .map(|(f, count)| RawPage {
                files: f.to_vec(),
                count: *count,
            })
            .collect();
        classes(&pages, &files, true)
    }

    fn after(c: &Classes) -> Vec<u64> {
        c.reductions.iter().map(|r| r.after).collect()
    }

    #[test]
    fn same_file_sets_combine_whatever_the_order() {
        let files = [("/a.png", 10), ("/b.png", 20), ("/c.png", 30)];
        // 0 and 1: the same set in another order, with a repeat; 2 differs.
        let c = run(&files, &[(&[0, 1], 3), (&[1, 0, 1], 5), (&[0, 2], 1)]);
        assert_eq!(c.reductions[0].before, 3);
        assert_eq!(c.reductions[0].after, 2);
        assert_eq!(c.reductions[0].factor, 1.5);
        assert_eq!(c.classes[0].count, 8);
        // The most frequent member's list.
        assert_eq!(c.classes[0].files, vec![1, 0, 1]);
        assert_eq!(c.of_page, vec![0, 0, 1]);
    }

    #[test]
    fn near_file_sets_combine_only_within_the_size_tolerance() {
        let files = [
            ("/1.png", 100),
            ("/2.png", 200),
            ("/3.png", 300),
            ("/4.png", 1000),
            ("/5.png", 1090), // within 10% of /4.png
            ("/6.png", 1200), // not
            ("/7.png", 1000),
        ];
        let c = run(
            &files,
            &[
                (&[0, 1, 2, 3], 5),
                (&[0, 1, 2, 4], 2),
                (&[0, 1, 2, 5], 1),
                // 2 of 4 shared: not 75%.
                (&[0, 1, 4, 6], 1),
            ],
        );
        assert_eq!(after(&c)[..2], [4, 3]);
        assert_eq!(c.classes[0].count, 7);
        assert_eq!(c.classes[0].files, vec![0, 1, 2, 3]);
        assert_eq!(c.of_page[1], c.of_page[0]);
        assert_ne!(c.of_page[2], c.of_page[0]);
        assert_ne!(c.of_page[3], c.of_page[0]);
        // A different number of files never combines.
        let c = run(&files, &[(&[0, 1, 2, 3], 5), (&[0, 1, 2, 3, 6], 2)]);
        assert_eq!(after(&c)[1], 2);
    }

    #[test]
    fn same_front_html_page_combines_whatever_follows() {
        let files = [
            ("/index.html?from=mail", 1000),
            ("/a.png", 10),
            ("/b.png", 20_000),
            ("/docs/", 500),
            ("/logo.gif", 40),
            ("/index.html", 1000),
        ];
        let c = run(
            &files,
            &[
                // Same front page (the query ignored): combine.
                (&[0, 1], 4),
                (&[5, 2, 4], 2),
                // A directory is an HTML page, but another one.
                (&[3, 1], 1),
                // A front that is not an HTML page: stays apart.
                (&[4, 1], 1),
                (&[4, 2], 1),
            ],
        );
        assert_eq!(c.reductions[2].before, 5);
        assert_eq!(c.reductions[2].after, 4);
        assert_eq!(c.classes[0].count, 6);
        assert_eq!(c.classes[0].files, vec![0, 1]);
        assert_ne!(c.of_page[3], c.of_page[4]);
    }

    #[test]
    fn prefix_filtering_finds_what_comparing_every_pair_finds() {
        // Random pages over 12 files (much overlap), compared with the
        // plain definition: every unassigned group of the same size
        // sharing 75% of the files, in the groups' order.
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20 {
            let files: Vec<FileStat> = (0..12)
                .map(|i| FileStat::logged("GET", &format!("/{i}.png"), 1000 + 40 * rand(6)))
                .collect();
            let pages: Vec<RawPage> = (0..150)
                .map(|_| {
                    let n = 1 + rand(6) as usize;
                    let mut f: Vec<u32> = Vec::new();
                    while f.len() < n {
                        let id = rand(12) as u32;
                        if !f.contains(&id) {
                            f.push(id);
                        }
                    }
                    RawPage {
                        files: f,
                        count: 1 + rand(5),
                    }
                })
                .collect();
            let ctx = Ctx {
                pages: &pages,
                files: &files,
                sizes: files.iter().map(FileStat::bytes).collect(),
                compared: std::cell::Cell::new(0),
            };
            let groups: Vec<Group> = (0..pages.len())
                .map(|rep| Group {
                    count: pages[rep].count,
                    rep,
                })
                .collect();
            let sets: Vec<Vec<u32>> = groups.iter().map(|g| ctx.set(g)).collect();
            let mut want = vec![usize::MAX; groups.len()];
            let mut next = 0;
            for i in ctx.ordered(&groups) {
                if want[i] != usize::MAX {
                    continue;
                }
                want[i] = next;
                let n = sets[i].len();
                let mut candidates: Vec<usize> = (0..groups.len())
                    .filter(|&j| {
                        j != i
                            && want[j] == usize::MAX
                            && sets[j].len() == n
                            && shared(&sets[i], &sets[j]) >= need(n)
                    })
                    .collect();
                candidates.sort_by(|&a, &b| ctx.cmp_groups(&groups[a], &groups[b]));
                for j in candidates {
                    if ctx.sizes_match(&sets[i], &sets[j]) {
                        want[j] = next;
                    }
                }
                next += 1;
            }
            assert_eq!(ctx.near_file_sets(&groups), want);
        }
    }

    #[test]
    fn near_file_sets_compare_few_candidates_on_a_large_site() {
        // 50,000 pages of 4 files: a page and an image of its own, and a
        // style sheet and a logo every page shares. No two combine.
        let n = 50_000u32;
        let mut files = vec![FileStat::logged("GET", "/style.css", 900)];
        files.push(FileStat::logged("GET", "/logo.png", 3000));
        let mut pages = Vec::new();
        for k in 0..n {
            files.push(FileStat::logged(
                "GET",
                &format!("/p{k}.html"),
                1000 + u64::from(k),
            ));
            files.push(FileStat::logged("GET", &format!("/i{k}.png"), 5000));
            pages.push(RawPage {
                files: vec![2 + 2 * k, 0, 1, 3 + 2 * k],
                count: 1 + u64::from(k % 7),
            });
        }
        let ctx = Ctx {
            pages: &pages,
            files: &files,
            sizes: files.iter().map(FileStat::bytes).collect(),
            compared: std::cell::Cell::new(0),
        };
        let groups: Vec<Group> = (0..pages.len())
            .map(|rep| Group {
                count: pages[rep].count,
                rep,
            })
            .collect();
        let into = ctx.near_file_sets(&groups);
        let mut distinct = into.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), n as usize);
        assert!(
            ctx.compared.get() <= 4 * u64::from(n),
            "{} candidate comparisons",
            ctx.compared.get()
        );
    }
}
