#!/bin/sh
# Hello! as a plain CGI script and as a CGIplus script: the same file serves
# both. Under CGIplus (CGIPLUSEOF set) it loops: reads the request's start
# line and NAME=value lines up to the empty one, reads (and here ignores) the
# body, writes the response, then the sentinel. See docs/cgiplus.md.

hello() {
    printf 'Content-Type: text/plain\n\nHello!\n'
}

if [ -z "$CGIPLUSEOF" ]; then
    hello
    exit 0
fi

while IFS= read -r start; do
    if [ "$start" != "!" ]; then
        echo "hello.sh: not a record-mode start line: $start" >&2
        exit 1
    fi
    length=0
    while IFS= read -r line && [ -n "$line" ]; do
        case $line in
        CONTENT_LENGTH=*) length=${line#CONTENT_LENGTH=} ;;
        esac
    done
    # The body must be read even when unused: it is not the next request.
    if [ "$length" -gt 0 ]; then
        head -c "$length" >/dev/null
    fi
    hello
    printf '%s\n' "$CGIPLUSEOF"
done
