#!/bin/sh
# Hello! as a plain CGI script and as a CGIplus script: the same file serves
# both. Under CGIplus (CGIPLUSEOF is set) it loops: it reads the start line,
# exports each NAME=value line up to the empty one (after unsetting the last
# request's), reads the body, writes the response, then the sentinel.
# Record mode only: sh cannot read struct mode's binary lengths.

respond() {
    printf 'Content-Type: text/plain\n\nHello!\n'
}

if [ -z "$CGIPLUSEOF" ]; then
    respond
    exit 0
fi

names=
while IFS= read -r start; do
    if [ "$start" != "!" ]; then
        echo "hello.sh: not a record-mode start line: $start" >&2
        exit 1
    fi
    for name in $names; do
        unset "$name"
    done
    names=
    while IFS= read -r line && [ -n "$line" ]; do
        export "$line"
        names="$names ${line%%=*}"
    done
    # Read the body even when it is not used: left unread, it would be
    # taken for the next request. (GNU head -c reads exactly that much.)
    body=$(head -c "${CONTENT_LENGTH:-0}")
    respond
    printf '%s\n' "$CGIPLUSEOF"
done
