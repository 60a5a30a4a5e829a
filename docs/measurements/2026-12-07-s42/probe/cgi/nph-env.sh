#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
env | sort
if [ -n "$CONTENT_LENGTH" ]; then echo "BODY:"; head -c "$CONTENT_LENGTH"; echo; fi
