#!/bin/sh
# A CGI script in sh: a process per request. Everything it knows about the
# request is in its environment (RFC 3875 meta-variables).
printf 'Content-Type: text/plain; charset=utf-8\n\n'
printf 'Hello from a shell script, process %s.\n\n' "$$"
printf 'REQUEST_METHOD=%s\nSCRIPT_NAME=%s\nPATH_INFO=%s\nQUERY_STRING=%s\nREMOTE_ADDR=%s\nSERVER_SOFTWARE=%s\n' \
    "$REQUEST_METHOD" "$SCRIPT_NAME" "$PATH_INFO" "$QUERY_STRING" "$REMOTE_ADDR" "$SERVER_SOFTWARE"
