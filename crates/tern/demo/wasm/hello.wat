;; The demo's WebAssembly module: a WASI command run in process, a fresh
;; sandboxed instance per request, with CGI semantics (WAGI). It writes a
;; CGI response to stdout: a greeting, then its environment, which is the
;; request's CGI variables and nothing else.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get"
    (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get"
    (func $environ_get (param i32 i32) (result i32)))
  (memory (export "memory") 2)

  ;; Bytes 0..16: an iovec and counts. 1024: the greeting. 8192: the
  ;; environment's pointers. 16384: its text.
  (data (i32.const 1024)
    "Content-Type: text/plain; charset=utf-8\n\nHello from WebAssembly!\n\nMy environment (the CGI variables):\n\n")
  (global $greeting_len i32 (i32.const 103))

  ;; Writes len bytes at ptr to stdout, however many calls it takes.
  (func $write (param $ptr i32) (param $len i32)
    (block $done
      (loop $more
        (br_if $done (i32.eqz (local.get $len)))
        (i32.store (i32.const 0) (local.get $ptr))
        (i32.store (i32.const 4) (local.get $len))
        (br_if $done (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.load (i32.const 8))))
        (local.set $len (i32.sub (local.get $len) (i32.load (i32.const 8))))
        (br $more))))

  (func (export "_start") (local $i i32) (local $n i32)
    (call $write (i32.const 1024) (global.get $greeting_len))
    ;; The variables arrive as NUL-terminated "NAME=value" strings, one
    ;; after another: each NUL becomes a line break.
    (drop (call $environ_sizes_get (i32.const 12) (i32.const 16)))
    (drop (call $environ_get (i32.const 8192) (i32.const 16384)))
    (local.set $n (i32.load (i32.const 16)))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.eqz (i32.load8_u (i32.add (i32.const 16384) (local.get $i))))
          (then (i32.store8 (i32.add (i32.const 16384) (local.get $i)) (i32.const 10))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    (call $write (i32.const 16384) (local.get $n))))
