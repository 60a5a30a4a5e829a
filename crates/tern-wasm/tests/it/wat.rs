//! WAT text for the test modules: one prelude (the WASI imports, a memory,
//! and `$write`, which writes a whole buffer), and one module whose first
//! byte of stdin picks how it behaves, so that one handler can be made to
//! loop, trap or flood and then serve the next request normally.

/// Bytes 0..16 are scratch (an iovec and a count); text data starts at
/// 1024; buffers at 16384.
const PRELUDE: &str = r#"
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (block $done (loop $more
      (br_if $done (i32.eqz (local.get $len)))
      (i32.store (i32.const 0) (local.get $ptr))
      (i32.store (i32.const 4) (local.get $len))
      (br_if $done (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $ptr (i32.add (local.get $ptr) (i32.load (i32.const 8))))
      (local.set $len (i32.sub (local.get $len) (i32.load (i32.const 8))))
      (br $more))))
"#;

/// A module being written: text constants become data segments.
#[derive(Default)]
pub(crate) struct Wat {
    data: String,
    next: u32,
}

impl Wat {
    /// A call that writes `text` to `fd`.
    pub(crate) fn print(&mut self, fd: u32, text: &str) -> String {
        let at = 1024 + self.next;
        self.next += text.len() as u32;
        assert!(at + (text.len() as u32) < 16384, "test text too long");
        let escaped: String = text.bytes().map(|b| format!("\\{b:02x}")).collect();
        self.data
            .push_str(&format!("(data (i32.const {at}) \"{escaped}\")\n"));
        format!(
            "(call $write (i32.const {fd}) (i32.const {at}) (i32.const {}))",
            text.len()
        )
    }

    /// The whole module around `funcs`.
    pub(crate) fn module(&self, funcs: &str) -> String {
        format!("(module\n{PRELUDE}\n{}\n{funcs}\n)", self.data)
    }
}

const HEAD: &str = "Content-Type: text/plain\n\n";

/// Answers `text` as a plain-text document.
pub(crate) fn hello(text: &str) -> String {
    let mut w = Wat::default();
    let p = w.print(1, &format!("{HEAD}{text}"));
    w.module(&format!("(func (export \"_start\") {p})"))
}

/// Answers with its environment, one `NAME=value` a line.
pub(crate) fn env() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    w.module(&format!(
        r#"(func (export "_start") (local $i i32) (local $n i32)
  {head}
  (drop (call $environ_sizes_get (i32.const 16) (i32.const 20)))
  (drop (call $environ_get (i32.const 8192) (i32.const 16384)))
  (local.set $n (i32.load (i32.const 20)))
  (block $done (loop $l
    (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
    (if (i32.eqz (i32.load8_u (i32.add (i32.const 16384) (local.get $i))))
      (then (i32.store8 (i32.add (i32.const 16384) (local.get $i)) (i32.const 10))))
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br $l)))
  (call $write (i32.const 1) (i32.const 16384) (local.get $n)))"#
    ))
}

/// Answers with its environment as C reads it: through the pointer table
/// `environ_get` filled, each entry up to its NUL, one a line.
pub(crate) fn env_by_pointer() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    let newline = w.print(1, "\n");
    w.module(&format!(
        r#"(func (export "_start") (local $i i32) (local $p i32) (local $e i32)
  {head}
  (drop (call $environ_sizes_get (i32.const 16) (i32.const 20)))
  (drop (call $environ_get (i32.const 8192) (i32.const 16384)))
  (block $done (loop $l
    (br_if $done (i32.ge_u (local.get $i) (i32.load (i32.const 16))))
    (local.set $p (i32.load (i32.add (i32.const 8192) (i32.shl (local.get $i) (i32.const 2)))))
    (local.set $e (local.get $p))
    (block $nul (loop $c
      (br_if $nul (i32.eqz (i32.load8_u (local.get $e))))
      (local.set $e (i32.add (local.get $e) (i32.const 1)))
      (br $c)))
    (call $write (i32.const 1) (local.get $p) (i32.sub (local.get $e) (local.get $p)))
    {newline}
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br $l))))"#
    ))
}

/// Asks for the environment with pointers past the end of its memory, and
/// answers with the two errnos it got (`21 21`: EFAULT) and whether the
/// last word of its memory was left alone.
pub(crate) fn env_out_of_bounds() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    let fault = w.print(1, "21 ");
    let other = w.print(1, "other ");
    let intact = w.print(1, "intact");
    let written = w.print(1, "written");
    w.module(&format!(
        r#"(func $say (param $errno i32)
  (if (i32.eq (local.get $errno) (i32.const 21)) (then {fault}) (else {other})))
(func (export "_start")
  {head}
  (i32.store (i32.const 65532) (i32.const 0x5a5a5a5a))
  (call $say (call $environ_sizes_get (i32.const 65534) (i32.const 16)))
  (call $say (call $environ_get (i32.const 8192) (i32.const 65530)))
  (if (i32.eq (i32.load (i32.const 65532)) (i32.const 0x5a5a5a5a)) (then {intact}) (else {written})))"#
    ))
}

/// Answers with its stdin.
pub(crate) fn echo() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    w.module(&format!(
        r#"(func (export "_start")
  {head}
  (block $done (loop $l
    (i32.store (i32.const 0) (i32.const 16384))
    (i32.store (i32.const 4) (i32.const 32768))
    (br_if $done (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (br_if $done (i32.eqz (i32.load (i32.const 8))))
    (call $write (i32.const 1) (i32.const 16384) (i32.load (i32.const 8)))
    (br $l))))"#
    ))
}

/// Behaves by the first byte of stdin: `l` loops forever, `m` grows its
/// memory without end, `o` writes without end, `t` traps, `e` exits 3
/// after a whole head, `x` writes to stderr and exits 3 without one, `s`
/// writes a head and a line and then loops forever, `p` writes a head and
/// a line and then traps; anything else (or nothing) answers "Hello!".
pub(crate) fn misbehave() -> String {
    let mut w = Wat::default();
    let hello = w.print(1, &format!("{HEAD}Hello!\n"));
    let head = w.print(1, HEAD);
    let flood = w.print(1, &"x".repeat(1000));
    let partial = w.print(1, &format!("{HEAD}partial\n"));
    let complaint = w.print(2, "something went wrong\nsecond line\n");
    let first = w.print(1, &format!("{HEAD}first\n"));
    w.module(&format!(
        r#"(func (export "_start") (local $c i32)
  (i32.store (i32.const 0) (i32.const 16384))
  (i32.store (i32.const 4) (i32.const 1))
  (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
  (local.set $c (select (i32.load8_u (i32.const 16384)) (i32.const 0) (i32.load (i32.const 8))))
  (if (i32.eq (local.get $c) (i32.const 108)) (then (loop $l (br $l))))
  (if (i32.eq (local.get $c) (i32.const 109)) (then (loop $m (drop (memory.grow (i32.const 1))) (br $m))))
  (if (i32.eq (local.get $c) (i32.const 111)) (then {head} (loop $o {flood} (br $o))))
  (if (i32.eq (local.get $c) (i32.const 116)) (then unreachable))
  (if (i32.eq (local.get $c) (i32.const 101)) (then {partial} (call $proc_exit (i32.const 3))))
  (if (i32.eq (local.get $c) (i32.const 120)) (then {complaint} (call $proc_exit (i32.const 3))))
  (if (i32.eq (local.get $c) (i32.const 115)) (then {first} (loop $s (br $s))))
  (if (i32.eq (local.get $c) (i32.const 112)) (then {first} unreachable))
  {hello})"#
    ))
}

/// Opens `name` in its first preopened directory (fd 3): with `create`,
/// for writing with O_CREAT, else for reading. Leaves the errno in $e and
/// the new descriptor at 24.
fn open(w: &mut Wat, name: &str, create: bool) -> String {
    let at = 1024 + w.next;
    w.next += name.len() as u32;
    let escaped: String = name.bytes().map(|b| format!("\\{b:02x}")).collect();
    w.data
        .push_str(&format!("(data (i32.const {at}) \"{escaped}\")\n"));
    let (oflags, rights) = if create { (1, 64) } else { (0, 2) };
    format!(
        "(local.set $e (call $path_open (i32.const 3) (i32.const 0) (i32.const {at}) (i32.const {}) (i32.const {oflags}) (i64.const {rights}) (i64.const 0) (i32.const 0) (i32.const 24)))",
        name.len()
    )
}

/// Reads `data.txt` from the directory it was given and answers with it,
/// then says whether it could create `new.txt` and open `../outside.txt`.
pub(crate) fn files() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    let open_data = open(&mut w, "data.txt", false);
    let open_new = open(&mut w, "new.txt", true);
    let open_outside = open(&mut w, "../outside.txt", false);
    let no_data = w.print(1, "no data.txt\n");
    let created = w.print(1, "created new.txt\n");
    let not_created = w.print(1, "could not create new.txt\n");
    let escaped = w.print(1, "opened ../outside.txt\n");
    let contained = w.print(1, "could not open ../outside.txt\n");
    w.module(&format!(
        r#"(func (export "_start") (local $e i32)
  {head}
  {open_data}
  (if (local.get $e)
    (then {no_data})
    (else
      (i32.store (i32.const 0) (i32.const 16384))
      (i32.store (i32.const 4) (i32.const 1000))
      (drop (call $fd_read (i32.load (i32.const 24)) (i32.const 0) (i32.const 1) (i32.const 8)))
      (call $write (i32.const 1) (i32.const 16384) (i32.load (i32.const 8)))))
  {open_new}
  (if (local.get $e) (then {not_created}) (else {created}))
  {open_outside}
  (if (local.get $e) (then {contained}) (else {escaped})))"#
    ))
}

/// Reads all of stdin first, then answers with it: a module that never
/// answers before its body is whole.
pub(crate) fn slurp() -> String {
    let mut w = Wat::default();
    let head = w.print(1, HEAD);
    w.module(&format!(
        r#"(func (export "_start") (local $end i32)
  (local.set $end (i32.const 16384))
  (block $done (loop $l
    (i32.store (i32.const 0) (local.get $end))
    (i32.store (i32.const 4) (i32.sub (i32.const 65536) (local.get $end)))
    (br_if $done (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (br_if $done (i32.eqz (i32.load (i32.const 8))))
    (local.set $end (i32.add (local.get $end) (i32.load (i32.const 8))))
    (br $l)))
  {head}
  (call $write (i32.const 1) (i32.const 16384) (i32.sub (local.get $end) (i32.const 16384))))"#
    ))
}
