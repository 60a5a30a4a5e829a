#!/bin/sh
# Server-sent events from a CGI script: tern streams each flushed write to
# the client as it comes, so the events arrive one a second.
printf 'Content-Type: text/event-stream\nCache-Control: no-cache\n\n'
for i in 1 2 3 4 5; do
    printf 'data: event %s of 5 at %s\n\n' "$i" "$(date +%T)"
    sleep 1
done
